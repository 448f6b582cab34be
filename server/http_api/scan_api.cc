// Search (POST /api/v1/streams/{stream}/search, GET and DELETE /api/v1/searches/{id}) and export
// (GET /api/v1/streams/{stream}/export, NDJSON) — docs/HTTP.md §Search and §Export. Both scan on
// the API's workers in slices, never on the loop.
#include "server/http_api/api_context.h"
#include "server/http_api/record_json.h"
#include "server/http_api/search_job.h"

namespace streamd::http_api {
namespace {

constexpr uint64_t kMaxSearchRecords = 100'000'000;
constexpr uint32_t kMaxMatches = 1000;
constexpr size_t kExportChunkBytes = 256 << 10;

bool flag(const JsonValue& body, std::string_view name, bool fallback) {
  const JsonValue* v = body.get(name);
  return v != nullptr && v->type() == JsonValue::Type::kBool ? v->boolean() : fallback;
}

void write_found(JsonWriter& w, const FoundRecord& f) {
  EntryView e;
  e.offset = f.offset;
  e.appended_at = f.appended_at;
  e.key = f.record.key;
  e.payload = f.record.payload;
  e.create_time = f.create_time;
  for (const auto& [name, value] : f.record.headers) e.headers.push_back(HeaderView{name, value});
  write_entry(w, f.partition, e);
}

std::string progress_json(const std::string& id, const SearchProgress& p) {
  JsonWriter w;
  w.begin_object()
      .field("id", id)
      .field("scanned", p.scanned)
      .field("total", p.total)
      .field("matched", p.matches.size())
      .field("done", p.done)
      .field("stopped_by", p.stopped_by)
      .field("elapsed_ms", p.elapsed_ms)
      .field("longest_slice_us", p.longest_slice_us)
      .field("resume", format_cursor(p.resume));
  w.key("records").begin_array();
  for (const FoundRecord& f : p.matches) write_found(w, f);
  w.end_array().end_object();
  return w.take();
}

// An export: the records of the chosen partitions from their start to their next offset when it
// began, partition after partition, as NDJSON in the shape `streamctl consume --json` prints. Each
// piece is read and formatted on a worker, in at most kExportChunkBytes, and the next piece is
// asked for only once the client took this one.
class ExportSource final : public HttpBodySource, public std::enable_shared_from_this<ExportSource> {
 public:
  ExportSource(ApiContext& ctx, std::string stream, Cursor from, Cursor end, uint64_t max_records)
      : ctx_(ctx), stream_(std::move(stream)), at_(std::move(from)), end_(std::move(end)), left_(max_records) {}

  void next(Deliver deliver) override {
    ctx_.workers.post([self = shared_from_this(), deliver = std::move(deliver)] { self->piece(deliver); });
  }

 private:
  void piece(const Deliver& deliver) {
    std::string out;
    const auto began = std::chrono::steady_clock::now();
    while (out.size() < kExportChunkBytes && left_ > 0 && !at_.empty()) {
      auto it = at_.begin();
      const int32_t p = it->first;
      const uint64_t end = end_[p];
      if (it->second >= end) {
        at_.erase(it);
        continue;
      }
      const auto want = static_cast<int32_t>(std::min<uint64_t>({end - it->second, left_, 1000}));
      auto read = ctx_.broker.read(stream_, {ReadCursor{PartitionId(p), Offset(it->second)}}, want, 1 << 20);
      if (!read.ok() || !read->front().status.ok()) {
        // The stream went away or was trimmed past the export: say so at the end of what was sent.
        const Status& s = read.ok() ? read->front().status : read.status();
        out += error_json(s) + "\n";
        left_ = 0;
        break;
      }
      ReadResult& r = read->front().result;
      for (const EntryView& e : r.entries) {
        if (e.offset.value >= end || left_ == 0) break;
        JsonWriter w;
        write_entry(w, PartitionId(p), e);
        out += w.str();
        out += '\n';
        --left_;
      }
      it->second = std::max(it->second + (r.entries.empty() ? 0 : 1), r.next_from.value);
      if (r.entries.empty() && r.next_from.value <= it->second) it->second = end;
      if (std::chrono::steady_clock::now() - began >= SearchJob::kSliceBudget) break;
    }
    const bool last = left_ == 0 || at_.empty();
    deliver(std::move(out), last);
  }

  ApiContext& ctx_;
  const std::string stream_;
  Cursor at_;
  Cursor end_;
  uint64_t left_;
};

}  // namespace

void start_search(ApiContext& ctx, const Call& call) {
  const std::string& stream = call->params.at(0);
  if (!require(call, auth::Right::kRead, stream, "search")) return;
  auto parsed = json_body(call);
  if (!parsed) return;
  auto body = std::make_shared<JsonValue>(std::move(*parsed));
  ctx.workers.post([&ctx, call, stream, body] {
    const JsonValue* query = body->get("query");
    if (query == nullptr || !query->is_string() || query->text().empty()) {
      return call->error(bad_argument("query", "the body needs a non-empty {\"query\": TEXT}"));
    }
    SearchSpec spec;
    spec.stream = stream;
    spec.query = query->text();
    spec.in_key = flag(*body, "key", true);
    spec.in_payload = flag(*body, "payload", true);
    spec.in_headers = flag(*body, "headers", true);
    spec.ignore_case = flag(*body, "ignore_case", false);
    if (const JsonValue* n = body->get("max_records")) {
      auto v = n->as_u64();
      if (!v || *v == 0 || *v > kMaxSearchRecords) {
        return call->error(bad_argument("max_records", "max_records must be 1 to 100000000"));
      }
      spec.max_records = *v;
    }
    if (const JsonValue* n = body->get("max_matches")) {
      auto v = n->as_u64();
      if (!v || *v == 0 || *v > kMaxMatches) return call->error(bad_argument("max_matches", "max_matches must be 1 to 1000"));
      spec.max_matches = static_cast<uint32_t>(*v);
    }
    if (const JsonValue* n = body->get("max_time_ms")) {
      auto v = n->as_u64();
      if (!v || *v == 0 || *v > 600'000) return call->error(bad_argument("max_time_ms", "max_time_ms must be 1 to 600000"));
      spec.max_time = std::chrono::milliseconds(static_cast<int64_t>(*v));
    }
    // Where it starts: a page request's from/partition/cursor/order, resolved like a read.
    PageRequest where;
    where.stream = stream;
    if (const JsonValue* f = body->get("from"); f != nullptr && f->is_string()) where.from = f->text();
    if (const JsonValue* c = body->get("cursor"); c != nullptr && c->is_string()) {
      auto cursor = parse_cursor(c->text());
      if (!cursor.ok()) return call->error(cursor.status());
      where.cursor = std::move(*cursor);
    }
    if (const JsonValue* p = body->get("partition"); p != nullptr && !p->is_null()) {
      auto n = p->as_u64();
      if (!n || *n > static_cast<uint64_t>(INT32_MAX)) return call->error(bad_argument("partition", "not a partition"));
      where.partition = static_cast<int32_t>(*n);
    }
    if (const JsonValue* o = body->get("order"); o != nullptr && o->is_string()) {
      if (o->text() != "newest" && o->text() != "oldest") return call->error(bad_argument("order", "newest or oldest"));
      where.order = o->text() == "newest" ? PageOrder::kNewest : PageOrder::kOldest;
    }
    where.limit = 1;
    auto page = read_page(ctx.broker, where);  // resolves every start the same way a read does
    if (!page.ok()) return call->error(page.status());
    auto d = ctx.broker.describe_stream(stream);
    if (!d.ok()) return call->error(d.status());
    spec.order = page->order;
    // read_page() moved the cursor past the one entry it read; the scan starts where it stood.
    Cursor first;
    uint64_t total = 0;
    for (const auto& [p, pos] : page->more) {
      const Bounds& b = d->partitions[static_cast<size_t>(p)].bounds;
      first[p] = b.first.value;
      uint64_t start = pos;
      if (!page->entries.empty()) {
        for (const PageEntry& e : page->entries) {
          if (e.partition.value == p) start = spec.order == PageOrder::kNewest ? e.entry.offset.value + 1 : e.entry.offset.value;
        }
      }
      spec.start[p] = start;
      total += spec.order == PageOrder::kNewest ? (start > b.first.value ? start - b.first.value : 0)
                                                : (b.next.value > start ? b.next.value - start : 0);
    }
    auto job = std::make_shared<SearchJob>(ctx.broker, ctx.workers, spec, first, total);
    auto id = ctx.scans.add(call->principal.name(), job);
    if (!id.ok()) return call->error(id.status());
    call->json(progress_json(*id, job->progress()), 202);
  });
}

void search_progress(ApiContext& ctx, const Call& call) {
  const std::string& id = call->params.at(0);
  auto job = ctx.scans.find(id, call->principal.name());
  if (!job) return call->error(Status(Code::kStreamNotFound, "no such search", {{"search", id}}));
  call->json(progress_json(id, job->progress()));
}

void cancel_search(ApiContext& ctx, const Call& call) {
  const std::string& id = call->params.at(0);
  if (!ctx.scans.cancel(id, call->principal.name())) {
    return call->error(Status(Code::kStreamNotFound, "no such search", {{"search", id}}));
  }
  JsonWriter w;
  w.begin_object().field("id", id).field("cancelled", true).end_object();
  call->json(w.take());
}

void export_records(ApiContext& ctx, const Call& call) {
  const std::string& stream = call->params.at(0);
  if (!ctx.options.export_enabled) {
    return call->error(Status(Code::kPermissionDenied, "export is turned off on this broker (console.export)",
                              {{"operation", "export"}, {"stream", stream}, {"setting", "console.export"}}));
  }
  if (!require(call, auth::Right::kRead, stream, "export")) return;
  uint64_t max_records = UINT64_MAX;
  if (auto a = call->arg("max_records")) {
    auto n = parse_u64("max_records", *a);
    if (!n.ok() || *n == 0) return call->error(bad_argument("max_records", "max_records must be positive"));
    max_records = *n;
  }
  PageRequest where;
  where.stream = stream;
  where.from = std::string(call->arg("from").value_or("earliest"));
  where.order = PageOrder::kOldest;
  where.limit = 1;
  if (auto a = call->arg("partition")) {
    auto n = parse_u64("partition", *a);
    if (!n.ok() || *n > static_cast<uint64_t>(INT32_MAX)) return call->error(bad_argument("partition", "not a partition"));
    where.partition = static_cast<int32_t>(*n);
  }
  ctx.workers.post([&ctx, call, where, max_records] {
    auto page = read_page(ctx.broker, where);
    if (!page.ok()) return call->error(page.status());
    Cursor from = page->more;
    for (const PageEntry& e : page->entries) from[e.partition.value] = e.entry.offset.value;
    Cursor end;
    for (const auto& [p, o] : from) end[p] = page->tail.at(p);
    auto source = std::make_shared<ExportSource>(ctx, where.stream, from, end, max_records);
    HttpResponse response(200, "application/x-ndjson", "");
    response.headers.emplace_back("Content-Disposition", "attachment; filename=\"" + where.stream + ".ndjson\"");
    response.stream = source;
    call->reply(std::move(response));
  });
}

}  // namespace streamd::http_api
