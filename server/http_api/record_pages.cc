#include "server/http_api/record_pages.h"

#include <algorithm>

#include "server/http_api/api_call.h"
#include "server/http_api/json.h"
#include "server/http_api/record_json.h"

namespace streamd::http_api {
namespace {

constexpr uint64_t kMaxReadBytes = 8 << 20;

// Where a partition starts (oldest-first) or ends (newest-first, exclusive) for `from`.
Result<uint64_t> position(const Broker& broker, const PageRequest& request, const PartitionDescription& p,
                          PageOrder order) {
  const std::string& from = request.from;
  if (from == "earliest") return p.bounds.first.value;
  if (from == "latest") return p.bounds.next.value;
  if (!from.empty() && from.find_first_not_of("0123456789") == std::string::npos) {
    auto offset = parse_u64("from", from);
    if (!offset.ok()) return offset.status();
    // Newest-first from an offset shows that record and those before it.
    return order == PageOrder::kNewest ? std::min(*offset + 1, p.bounds.next.value) : *offset;
  }
  auto t = parse_time("from", from);
  if (!t.ok()) {
    return bad_argument("from", "from must be earliest, latest, an offset or an RFC 3339 time");
  }
  auto at = broker.offset_at(request.stream, p.partition, Timestamp(*t));
  if (!at.ok()) return at.status();
  return at->value;
}

bool newer_first(const PageEntry& a, const PageEntry& b) {
  if (a.entry.appended_at != b.entry.appended_at) return a.entry.appended_at > b.entry.appended_at;
  if (a.partition != b.partition) return a.partition < b.partition;
  return a.entry.offset > b.entry.offset;
}

bool older_first(const PageEntry& a, const PageEntry& b) {
  if (a.entry.appended_at != b.entry.appended_at) return a.entry.appended_at < b.entry.appended_at;
  if (a.partition != b.partition) return a.partition < b.partition;
  return a.entry.offset < b.entry.offset;
}

}  // namespace

std::string format_cursor(const Cursor& cursor) {
  std::string out;
  for (const auto& [p, o] : cursor) {
    if (!out.empty()) out += ',';
    out += std::to_string(p) + ":" + std::to_string(o);
  }
  return out;
}

Result<Cursor> parse_cursor(std::string_view text) {
  Cursor out;
  const Status bad = bad_argument("cursor", "cursor must be PARTITION:OFFSET pairs joined by commas");
  if (text.empty()) return bad;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view pair = text.substr(0, comma);
    text.remove_prefix(comma == std::string_view::npos ? text.size() : comma + 1);
    if (comma != std::string_view::npos && text.empty()) return bad;  // a trailing comma
    const size_t colon = pair.find(':');
    if (colon == std::string_view::npos) return bad;
    auto p = parse_u64("cursor", pair.substr(0, colon));
    auto o = parse_u64("cursor", pair.substr(colon + 1));
    if (!p.ok() || !o.ok() || *p > static_cast<uint64_t>(INT32_MAX)) return bad;
    out[static_cast<int32_t>(*p)] = *o;
  }
  return out;
}

Result<Page> read_page(const Broker& broker, const PageRequest& request) {
  auto d = broker.describe_stream(request.stream);
  if (!d.ok()) return d.status();
  Page page;
  page.order = request.order.value_or(!request.cursor && request.from == "latest" ? PageOrder::kNewest
                                                                                   : PageOrder::kOldest);
  if (request.partition && (*request.partition < 0 || static_cast<size_t>(*request.partition) >= d->partitions.size())) {
    return Status::of(Code::kUnknownPartition, {{"partition", std::to_string(*request.partition)}});
  }
  // Each chosen partition's position: from the cursor, or from `from`.
  Cursor at;
  for (const PartitionDescription& p : d->partitions) {
    page.tail[p.partition.value] = p.bounds.next.value;
    if (request.partition && p.partition.value != *request.partition) continue;
    if (request.cursor) {
      auto it = request.cursor->find(p.partition.value);
      if (it != request.cursor->end()) at[p.partition.value] = it->second;
      continue;
    }
    auto pos = position(broker, request, p, page.order);
    if (!pos.ok()) return pos.status();
    at[p.partition.value] = *pos;
  }
  if (request.cursor) {
    for (const auto& [p, o] : *request.cursor) {
      if (p < 0 || static_cast<size_t>(p) >= d->partitions.size()) {
        return Status::of(Code::kUnknownPartition, {{"partition", std::to_string(p)}});
      }
    }
  }

  std::vector<PageEntry> all;
  for (const auto& [p, pos] : at) {
    const PartitionDescription& desc = d->partitions[static_cast<size_t>(p)];
    uint64_t from = pos;
    uint64_t end = UINT64_MAX;
    if (page.order == PageOrder::kNewest) {
      end = std::min(pos, desc.bounds.next.value);
      page.more[p] = end;
      if (end <= desc.bounds.first.value) continue;  // nothing older is retained
      from = end - std::min<uint64_t>(request.limit, end - desc.bounds.first.value);
    }
    auto read = broker.read(request.stream, {ReadCursor{PartitionId(p), Offset(from)}},
                            static_cast<int32_t>(request.limit), kMaxReadBytes);
    if (!read.ok()) return read.status();
    PartitionRead& r = read->front();
    if (!r.status.ok()) return r.status;
    // Oldest-first, a partition none of whose entries makes the page goes on where it stood, unless
    // its read found none at all (its end, or only compaction holes): then past what it crossed.
    if (page.order == PageOrder::kOldest) page.more[p] = r.result.entries.empty() ? r.result.next_from.value : pos;
    for (const EntryView& e : r.result.entries) {
      if (e.offset.value >= end) break;
      page.records += 1;
      page.bytes += e.key.size() + e.payload.size();
      all.push_back(PageEntry{PartitionId(p), e});
    }
    page.owners.push_back(std::move(r.result));
  }
  if (page.order == PageOrder::kNewest) {
    std::sort(all.begin(), all.end(), newer_first);
  } else {
    std::sort(all.begin(), all.end(), older_first);
  }
  if (all.size() > request.limit) all.resize(request.limit);
  // Where each partition goes on from once the page is cut: past its last entry taken
  // (oldest-first), at its earliest entry taken (newest-first).
  for (const PageEntry& e : all) {
    uint64_t& more = page.more[e.partition.value];
    if (page.order == PageOrder::kOldest) {
      more = std::max(more, e.entry.offset.value + 1);
    } else {
      more = std::min(more, e.entry.offset.value);
    }
  }
  page.entries = std::move(all);
  return page;
}

std::string page_json(const Page& page) {
  JsonWriter w;
  w.begin_object().field("order", page.order == PageOrder::kNewest ? "newest" : "oldest");
  w.key("records").begin_array();
  for (const PageEntry& e : page.entries) write_entry(w, e.partition, e.entry);
  w.end_array();
  w.field("more", format_cursor(page.more)).field("tail", format_cursor(page.tail));
  w.end_object();
  return w.take();
}

}  // namespace streamd::http_api
