#include "server/net/request_handler.h"

#include <asio/io_context.hpp>
#include <asio/post.hpp>

#include "server/net/frame.h"
#include "server/net/long_poll.h"
#include "server/net/net_metrics.h"
#include "server/net/wire_convert.h"

namespace streamd {
namespace {

v1::Response error_response(uint64_t id, const Status& status) {
  v1::Response response;
  response.set_id(id);
  error_to_wire(status, response.mutable_error());
  return response;
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
  switch (request->body_case()) {
    case v1::Request::kHello: {
      v1::Response response;
      response.set_id(ticket.id);
      auto* hello = response.mutable_hello();
      hello->set_protocol_version(kProtocolVersion);
      hello->set_broker_version(STREAMD_VERSION);
      hello->set_max_frame_bytes(conn->max_frame_bytes());
      conn->reply(ticket, response);
      return;
    }
    case v1::Request::kAppend:
      append(conn, ticket, request->append());
      return;  // the broker encoded the records at once; the request may go
    case v1::Request::kCommit:
      commit(conn, ticket, request->commit());
      return;
    case v1::Request::kRead:
      read(conn, ticket, request->read());
      return;
    case v1::Request::kCreateStream:
      offload(blocking_, conn, ticket, std::move(request), [this](const v1::Request& req) {
        const auto& r = req.create_stream();
        bool created = false;
        auto result =
            broker_.create_stream(r.name(), policy_from_wire(r.policy()), r.if_not_exists(), &created);
        if (!result.ok()) return error_response(req.id(), result.status());
        v1::Response response;
        response.set_id(req.id());
        auto* body = response.mutable_create_stream();
        body->set_name(result->name);
        policy_to_wire(result->policy, body->mutable_policy());
        body->set_created(created);
        return response;
      });
      return;
    case v1::Request::kDeleteStream:
      offload(blocking_, conn, ticket, std::move(request), [this](const v1::Request& req) {
        const auto& r = req.delete_stream();
        bool deleted = false;
        Status s = broker_.delete_stream(r.name(), r.if_exists(), &deleted);
        if (!s.ok()) return error_response(req.id(), s);
        v1::Response response;
        response.set_id(req.id());
        response.mutable_delete_stream()->set_name(r.name());
        response.mutable_delete_stream()->set_deleted(deleted);
        return response;
      });
      return;
    case v1::Request::kTrim:
      offload(blocking_, conn, ticket, std::move(request), [this](const v1::Request& req) {
        const auto& r = req.trim();
        auto first = broker_.trim(r.stream(), PartitionId(r.partition()), Offset(r.before()));
        if (!first.ok()) return error_response(req.id(), first.status());
        v1::Response response;
        response.set_id(req.id());
        response.mutable_trim()->set_partition(r.partition());
        response.mutable_trim()->set_first(first->value);
        return response;
      });
      return;
    case v1::Request::kCompact:
      offload(blocking_, conn, ticket, std::move(request), [this](const v1::Request& req) {
        const auto& r = req.compact();
        auto result = broker_.compact(r.stream(), PartitionId(r.partition()));
        if (!result.ok()) return error_response(req.id(), result.status());
        v1::Response response;
        response.set_id(req.id());
        auto* body = response.mutable_compact();
        body->set_partition(r.partition());
        body->set_scanned(result->scanned);
        body->set_kept(result->kept);
        body->set_dropped(result->dropped);
        return response;
      });
      return;
    case v1::Request::kPeek:
    case v1::Request::kOffsetAt:
      offload(readers_, conn, ticket, std::move(request),
              [this](const v1::Request& req) { return answer_query(req); });
      return;
    default:
      conn->reply(ticket, answer_query(*request));
      return;
  }
}

void RequestHandler::offload(Executor& executor, const std::shared_ptr<Connection>& conn, const Ticket& ticket,
                             std::unique_ptr<v1::Request> request, Work work) {
  std::shared_ptr<v1::Request> shared(std::move(request));
  executor.post([this, conn, ticket, shared, work = std::move(work)] {
    v1::Response response = work(*shared);
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
  broker_.append(request.stream(), records, [this, conn, ticket, bytes, count](Result<AppendResult> result) {
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
  });
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

v1::Response RequestHandler::answer_query(const v1::Request& req) {
  v1::Response response;
  response.set_id(req.id());
  auto fail = [&](const Status& s) { return error_response(req.id(), s); };
  switch (req.body_case()) {
    case v1::Request::kListStreams: {
      auto* body = response.mutable_list_streams();
      for (const StreamSummary& s : broker_.list_streams()) {
        auto* ws = body->add_streams();
        ws->set_name(s.name);
        ws->set_partitions(s.partitions);
      }
      return response;
    }
    case v1::Request::kDescribeStream: {
      auto d = broker_.describe_stream(req.describe_stream().name());
      if (!d.ok()) return fail(d.status());
      description_to_wire(*d, response.mutable_describe_stream());
      return response;
    }
    case v1::Request::kBounds: {
      const auto& r = req.bounds();
      auto b = broker_.bounds(r.stream(), PartitionId(r.partition()));
      if (!b.ok()) return fail(b.status());
      auto* body = response.mutable_bounds();
      body->set_partition(r.partition());
      body->set_first(b->first.value);
      body->set_next(b->next.value);
      return response;
    }
    case v1::Request::kPeek: {
      const auto& r = req.peek();
      auto p = broker_.peek(r.stream(), PartitionId(r.partition()));
      if (!p.ok()) return fail(p.status());
      auto* body = response.mutable_peek();
      if (p->has_value() && !(*p)->entries.empty()) {
        entry_to_wire(PartitionId(r.partition()), (*p)->entries.back(), body->mutable_entry());
      }
      return response;
    }
    case v1::Request::kOffsetAt: {
      const auto& r = req.offset_at();
      auto o = broker_.offset_at(r.stream(), PartitionId(r.partition()), Timestamp(r.time_us()));
      if (!o.ok()) return fail(o.status());
      response.mutable_offset_at()->set_partition(r.partition());
      response.mutable_offset_at()->set_offset(o->value);
      return response;
    }
    case v1::Request::kCommitted: {
      const auto& r = req.committed();
      auto o = broker_.committed(r.stream(), r.group(), PartitionId(r.partition()));
      if (!o.ok()) return fail(o.status());
      response.mutable_committed()->set_partition(r.partition());
      response.mutable_committed()->set_next(o->value);
      return response;
    }
    case v1::Request::kListGroups: {
      auto groups = broker_.list_groups(req.list_groups().stream());
      if (!groups.ok()) return fail(groups.status());
      auto* body = response.mutable_list_groups();
      for (const GroupOffset& g : *groups) {
        auto* wg = body->add_groups();
        wg->set_group(g.group);
        wg->set_partition(g.partition.value);
        wg->set_committed(g.committed.value);
        wg->set_next(g.next.value);
        wg->set_lag(g.lag);
      }
      return response;
    }
    case v1::Request::kHealth: {
      auto* body = response.mutable_health();
      body->set_status("ok");
      body->set_version(STREAMD_VERSION);
      body->set_uptime_s(static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_)
              .count()));
      body->set_streams(static_cast<uint32_t>(broker_.stream_count()));
      return response;
    }
    default:
      return fail(Status::of(Code::kProtocolError, {{"reason", "the request names no known operation"}}));
  }
}

}  // namespace streamd
