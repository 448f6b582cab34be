#include "server/net/request_handler.h"

#include <asio/io_context.hpp>
#include <asio/post.hpp>

#include "server/net/answers.h"
#include "server/net/frame.h"
#include "server/net/long_poll.h"
#include "server/net/net_metrics.h"
#include "server/net/txn_requests.h"
#include "server/net/wire_convert.h"

namespace streamd {
namespace {

// An idempotent producer's stamp and the partition it names (docs/PROTOCOL.md §"Idempotent appends").
Result<AppendOptions> append_options(const v1::AppendRequest& request) {
  AppendOptions options;
  if (!request.has_producer()) {
    if (!request.transactional_id().empty()) {
      return Status(Code::kProtocolError, "a transactional batch carries its producer's identity and sequence",
                    {{"transactional_id", request.transactional_id()}});
    }
    if (request.has_partition()) options.partition = PartitionId(request.partition());
    return options;
  }
  const v1::ProducerSequence& p = request.producer();
  auto refuse = [&](const std::string& why) {
    return Status(Code::kProtocolError, why,
                  {{"producer_id", std::to_string(p.producer_id())},
                   {"epoch", std::to_string(p.epoch())},
                   {"sequence", std::to_string(p.sequence())}});
  };
  if (!request.has_partition()) return refuse("an idempotent producer's batch names its partition");
  if (p.producer_id() < 0) return refuse("a producer id is 0 or more");
  if (p.epoch() < 0 || p.epoch() > INT16_MAX) return refuse("an epoch is between 0 and 32767");
  if (p.sequence() < 0) return refuse("a sequence is 0 or more");
  options.partition = PartitionId(request.partition());
  options.producer = ProducerFields{p.producer_id(), static_cast<int16_t>(p.epoch()), p.sequence()};
  return options;
}

}  // namespace

RequestHandler::RequestHandler(asio::io_context& io, Broker& broker, Executor& blocking, Executor& readers,
                               NetMetrics& metrics)
    : io_(io),
      broker_(broker),
      blocking_(blocking),
      readers_(readers),
      metrics_(metrics),
      started_(std::chrono::steady_clock::now()) {}

void RequestHandler::handle(const std::shared_ptr<Connection>& conn, const Ticket& ticket,
                            std::unique_ptr<v1::Request> request) {
  if (is_txn_request(*request)) return handle_txn_request(io_, broker_, blocking_, conn, ticket, std::move(request));
  switch (request->body_case()) {
    case v1::Request::kHello:
      return hello(conn, ticket);
    case v1::Request::kListStreams:
      return conn->reply(ticket, answer_list_streams(broker_, *request, conn->principal()));
    case v1::Request::kAppend:
      // The broker encodes the records at once: the request may go when this returns.
      return append(conn, ticket, request->append());
    case v1::Request::kCommit:
      return commit(conn, ticket, request->commit());
    case v1::Request::kRead:
      return read(conn, ticket, request->read());
    case v1::Request::kCreateStream:
      return offload(blocking_, conn, ticket, std::move(request), answer_create_stream);
    case v1::Request::kDeleteStream:
      return offload(blocking_, conn, ticket, std::move(request), answer_delete_stream);
    case v1::Request::kAlterStream:
      return offload(blocking_, conn, ticket, std::move(request), answer_alter_stream);
    case v1::Request::kTrim:
      return offload(blocking_, conn, ticket, std::move(request), answer_trim);
    case v1::Request::kCompact:
      return offload(blocking_, conn, ticket, std::move(request), answer_compact);
    case v1::Request::kInitProducer:  // may sync a new block of ids, or ask the database
      return offload(blocking_, conn, ticket, std::move(request), answer_init_producer);
    case v1::Request::kPeek:
      return offload(readers_, conn, ticket, std::move(request), answer_peek);
    case v1::Request::kOffsetAt:
      return offload(readers_, conn, ticket, std::move(request), answer_offset_at);
    default:
      conn->reply(ticket, answer_query(*request));
      return;
  }
}

void RequestHandler::hello(const std::shared_ptr<Connection>& conn, const Ticket& ticket) {
  v1::Response response;
  response.set_id(ticket.id);
  auto* hello = response.mutable_hello();
  hello->set_protocol_version(kProtocolVersion);
  hello->set_broker_version(STREAMD_VERSION);
  hello->set_max_frame_bytes(conn->max_frame_bytes());
  conn->reply(ticket, response);
}

void RequestHandler::offload(Executor& executor, const std::shared_ptr<Connection>& conn, const Ticket& ticket,
                             std::unique_ptr<v1::Request> request, Answer answer) {
  std::shared_ptr<v1::Request> shared(std::move(request));
  executor.post([this, conn, ticket, shared, answer] {
    v1::Response response = answer(broker_, *shared);
    std::string error_name = response.has_error() ? response.error().name() : std::string();
    // Encoded here, off the loop; the loop only queues the bytes.
    std::string frame = encode_frame(response);
    asio::post(io_, [conn, ticket, frame = std::move(frame), error_name = std::move(error_name)]() mutable {
      conn->reply_frame(ticket, std::move(frame), error_name);
    });
  });
}

void RequestHandler::append(const std::shared_ptr<Connection>& conn, const Ticket& ticket,
                            const v1::AppendRequest& request) {
  // Views into the parsed request: the broker encodes the batch before append() returns.
  std::vector<RecordInput> records;
  records.reserve(static_cast<size_t>(request.records_size()));
  uint64_t bytes = 0;
  for (const v1::Record& r : request.records()) {
    RecordInput in{r.key(), r.payload(), {}};
    in.headers.reserve(static_cast<size_t>(r.headers_size()));
    for (const v1::Header& h : r.headers()) in.headers.push_back(HeaderView{h.name(), h.value()});
    bytes += record_size(in.key, in.payload, in.headers);
    records.push_back(std::move(in));
  }
  const uint64_t count = records.size();
  auto options = append_options(request);
  if (!options.ok()) {
    conn->reply_error(ticket, options.status());
    return;
  }
  auto answer = [this, conn, ticket, bytes, count](Result<AppendResult> result) {
    asio::post(io_, [this, conn, ticket, bytes, count, result = std::move(result)] {
      if (!result.ok()) {
        conn->reply_error(ticket, result.status());
        return;
      }
      metrics_.appended_records.inc(count);
      metrics_.appended_bytes.inc(bytes);
      v1::Response response;
      response.set_id(ticket.id);
      auto* body = response.mutable_append();
      body->set_partition(result->partition.value);
      body->set_first(result->range.first.value);
      body->set_last(result->range.last.value);
      conn->reply(ticket, response);
    });
  };
  if (request.transactional_id().empty()) return broker_.append(request.stream(), records, *options, std::move(answer));
  broker_.append_in_transaction(request.transactional_id(), request.stream(), records, *options, std::move(answer));
}

void RequestHandler::commit(const std::shared_ptr<Connection>& conn, const Ticket& ticket,
                            const v1::CommitRequest& request) {
  broker_.commit(request.stream(), request.group(), PartitionId(request.partition()), Offset(request.next()),
                 [this, conn, ticket, group = request.group(), partition = request.partition(),
                  next = request.next()](Status status) {
                   asio::post(io_, [conn, ticket, group, partition, next, status = std::move(status)] {
                     if (!status.ok()) {
                       conn->reply_error(ticket, status);
                       return;
                     }
                     v1::Response response;
                     response.set_id(ticket.id);
                     auto* body = response.mutable_commit();
                     body->set_group(group);
                     body->set_partition(partition);
                     body->set_next(next);
                     conn->reply(ticket, response);
                   });
                 });
}

void RequestHandler::read(const std::shared_ptr<Connection>& conn, const Ticket& ticket,
                          const v1::ReadRequest& request) {
  if (request.cursors_size() == 0) {
    conn->reply_error(ticket,
                      Status::of(Code::kStreamMisconfigured,
                                 {{"field", "cursors"}, {"reason", "a read names at least one cursor"}}));
    return;
  }
  LongPollRead::start(io_, broker_, readers_, metrics_, conn, ticket, request);
}

v1::Response RequestHandler::answer_query(const v1::Request& req) const {
  switch (req.body_case()) {
    case v1::Request::kDescribeStream:
      return answer_describe_stream(broker_, req);
    case v1::Request::kBounds:
      return answer_bounds(broker_, req);
    case v1::Request::kCommitted:
      return answer_committed(broker_, req);
    case v1::Request::kListGroups:
      return answer_list_groups(broker_, req);
    case v1::Request::kHealth:
      return answer_health(broker_, req, started_);
    default:
      return error_response(req.id(),
                            Status::of(Code::kProtocolError, {{"reason", "the request names no known operation"}}));
  }
}

}  // namespace streamd
