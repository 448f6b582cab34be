// /api/v1/streams/{stream}/records: read a page (from an offset, a time, the earliest or the latest,
// oldest- or newest-first), long-poll a live tail, produce a batch; …/offset: the offset at a time
// (docs/HTTP.md §Records).
#include "server/http_api/api_context.h"
#include "server/http_api/record_json.h"
#include "server/http_api/record_pages.h"
#include "server/http_api/tails.h"

namespace streamd::http_api {
namespace {

constexpr uint32_t kMaxPage = 500;
constexpr std::chrono::milliseconds kMaxWait{30000};

Result<PageRequest> page_request(const Call& call) {
  PageRequest r;
  r.stream = call->params.at(0);
  if (auto a = call->arg("partition")) {
    auto p = parse_u64("partition", *a);
    if (!p.ok() || *p > static_cast<uint64_t>(INT32_MAX)) return bad_argument("partition", "partition must be a number");
    r.partition = static_cast<int32_t>(*p);
  }
  if (auto a = call->arg("from")) r.from = std::string(*a);
  if (auto a = call->arg("cursor")) {
    auto c = parse_cursor(*a);
    if (!c.ok()) return c.status();
    r.cursor = std::move(*c);
  }
  if (auto a = call->arg("order")) {
    if (*a == "newest") {
      r.order = PageOrder::kNewest;
    } else if (*a == "oldest") {
      r.order = PageOrder::kOldest;
    } else {
      return bad_argument("order", "order must be newest or oldest");
    }
  }
  if (auto a = call->arg("limit")) {
    auto n = parse_u64("limit", *a);
    // A read of no records is the protocol's INVALID_BATCH_SIZE (docs/SEMANTICS.md §2).
    if (n.ok() && *n == 0) return Status::of(Code::kInvalidBatchSize, {{"field", "limit"}});
    if (!n.ok() || *n > kMaxPage) return bad_argument("limit", "limit must be 1 to 500");
    r.limit = static_cast<uint32_t>(*n);
  }
  return r;
}

// One attempt at the page; true when it answered (records, or an error), false when a tail found
// nothing yet.
bool answer_page(ApiContext& ctx, const Call& call, const PageRequest& request, bool may_wait) {
  auto page = read_page(ctx.broker, request);
  if (!page.ok()) {
    call->error(page.status());
    return true;
  }
  if (may_wait && page->entries.empty()) return false;
  ctx.read_records.inc(page->entries.size());
  uint64_t bytes = 0;
  for (const PageEntry& e : page->entries) bytes += e.entry.key.size() + e.entry.payload.size();
  ctx.read_bytes.inc(bytes);
  call->json(page_json(*page));
  return true;
}

}  // namespace

void read_records(ApiContext& ctx, const Call& call) {
  const std::string& stream = call->params.at(0);
  if (!require(call, auth::Right::kRead, stream, "read")) return;
  auto request = page_request(call);
  if (!request.ok()) return call->error(request.status());
  std::chrono::milliseconds wait{0};
  if (auto a = call->arg("wait_ms")) {
    auto n = parse_u64("wait_ms", *a);
    if (!n.ok()) return call->error(n.status());
    wait = std::min(kMaxWait, std::chrono::milliseconds(static_cast<int64_t>(std::min<uint64_t>(*n, 30000))));
  }
  if (wait.count() == 0) {
    ctx.workers.post([&ctx, call, request = *request] { answer_page(ctx, call, request, false); });
    return;
  }
  // A tail follows a cursor oldest-first: what arrives after it.
  if (!request->cursor) return call->error(bad_argument("cursor", "a tail (wait_ms) follows a cursor"));
  request->order = PageOrder::kOldest;
  std::vector<ReadCursor> cursors;
  for (const auto& [p, o] : *request->cursor) cursors.push_back(ReadCursor{PartitionId(p), Offset(o)});
  auto shared = std::make_shared<PageRequest>(std::move(*request));
  const bool started = ctx.tails.start(
      stream, cursors, wait, [&ctx, call, shared] { return answer_page(ctx, call, *shared, true); },
      [&ctx, call, shared] {
        // The deadline: an empty page, not an error, with the same cursor to go on from.
        ctx.workers.post([&ctx, call, shared] { answer_page(ctx, call, *shared, false); });
      });
  if (!started) {
    call->error(Status(Code::kUnavailable, "too many live tails are waiting; try again later",
                       {{"limit", std::to_string(Tails::kMaxWaiting)}}));
  }
}

void produce_records(ApiContext& ctx, const Call& call) {
  const std::string& stream = call->params.at(0);
  if (!require(call, auth::Right::kWrite, stream, "append")) return;
  auto body = json_body(call);
  if (!body) return;
  auto decoded = decode_records(*body);
  if (!decoded.ok()) return call->error(decoded.status());
  if (decoded->inputs.empty()) return call->error(Status::of(Code::kInvalidBatchSize));
  std::optional<PartitionId> partition;
  if (const JsonValue* p = body->get("partition"); p != nullptr && !p->is_null()) {
    auto n = p->as_u64();
    if (!n || *n > static_cast<uint64_t>(INT32_MAX)) {
      return call->error(bad_argument("partition", "partition must be a partition number"));
    }
    partition = PartitionId(static_cast<int32_t>(*n));
  }
  uint64_t bytes = 0;
  for (const Record& r : decoded->records) bytes += r.key.size() + r.payload.size();
  const size_t count = decoded->inputs.size();
  // Answered on a storage thread, perhaps after the API stopped: only the registry's counters.
  auto done = [&records = ctx.appended_records, &appended = ctx.appended_bytes, call, count,
               bytes](Result<AppendResult> result) {
    if (!result.ok()) return call->error(result.status());
    records.inc(count);
    appended.inc(bytes);
    JsonWriter w;
    w.begin_object()
        .field("partition", result->partition.value)
        .field("first", result->range.first.value)
        .field("last", result->range.last.value)
        .end_object();
    call->json(w.take());
  };
  // The broker encodes the batch before append() returns, so the decoded bytes may go after it.
  if (partition) {
    // A chosen partition takes unkeyed records, and keyed ones only where their key places them.
    ctx.broker.append_to_partition(stream, *partition, true, decoded->inputs, std::move(done));
  } else {
    ctx.broker.append(stream, decoded->inputs, std::move(done));
  }
}

void offset_at_time(ApiContext& ctx, const Call& call) {
  const std::string& stream = call->params.at(0);
  if (!require(call, auth::Right::kRead, stream, "offset_at")) return;
  auto p = parse_u64("partition", call->arg("partition").value_or(""));
  if (!p.ok() || *p > static_cast<uint64_t>(INT32_MAX)) {
    return call->error(bad_argument("partition", "partition must be a partition number"));
  }
  auto t = parse_time("time", call->arg("time").value_or(""));
  if (!t.ok()) return call->error(t.status());
  ctx.workers.post([&ctx, call, stream, partition = PartitionId(static_cast<int32_t>(*p)), time = Timestamp(*t)] {
    auto o = ctx.broker.offset_at(stream, partition, time);
    if (!o.ok()) return call->error(o.status());
    JsonWriter w;
    w.begin_object().field("partition", partition.value).field("offset", o->value).end_object();
    call->json(w.take());
  });
}

}  // namespace streamd::http_api
