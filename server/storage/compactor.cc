#include "server/storage/compactor.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "server/storage/batch_builder.h"
#include "server/storage/isolation.h"
#include "server/storage/record_reader.h"

namespace streamd {
namespace {

struct KeyHash {
  using is_transparent = void;  // NOLINT(readability-identifier-naming): the name the standard looks up
  size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
};

// Each key's last eligible offset.
using LastOffsets = std::unordered_map<std::string, uint64_t, KeyHash, std::equal_to<>>;

constexpr uint32_t kScanRecords = 4096;
constexpr uint64_t kScanBytes = 4 << 20;

// The rules of compactor.h, applied to one record.
struct Rules {
  const LastOffsets& last;
  Timestamp horizon;       // eligible at or before
  Timestamp tomb_horizon;  // a surviving tombstone goes at or before
  Offset first;            // records below are no longer retained: not counted, not touched
  Offset stable;           // the last stable offset: an open transaction's records and all after wait

  // A marker stays as long as its transaction's records may (recovery reads transactions from them).
  bool eligible(const BatchHeader& h, Offset offset) const {
    return h.appended_at <= horizon && offset >= first && offset < stable && !h.control();
  }

  bool keep(const BatchHeader& h, const RecordView& r) const {
    if (!r.keyed()) return true;
    auto it = last.find(r.key);
    // A key pass 1 did not see (first moved meanwhile) is left alone.
    if (it == last.end()) return true;
    if (it->second != r.offset.value) return false;
    // Only a null payload is a tombstone: an empty one a Kafka producer sent is data (docs/SEMANTICS.md §6).
    return !(r.tombstone() && h.appended_at <= tomb_horizon);
  }
};

Status damaged_batch(const SegmentedLog& log, Offset base) {
  return Status(Code::kStreamBackendFailed, "a batch's records do not parse during compaction",
                {{"path", log.dir()}, {"base", base.str()}});
}

// Pass 1: the last eligible offset of every key, over the retained records of every segment below the
// last stable offset, as a read_committed reader sees them: an aborted record is no key's last value.
Result<LastOffsets> last_offsets(const SegmentedLog& log, Timestamp horizon, Offset stable) {
  LastOffsets last;
  Offset from = log.bounds().first;
  for (;;) {
    auto read = log.read(from, kScanRecords, kScanBytes);
    if (!read.ok()) {
      // A trim or retention raised first meanwhile: go on from there.
      if (read.status().code() == Code::kOffsetTrimmed) {
        from = log.bounds().first;
        continue;
      }
      return read.status();
    }
    std::vector<AbortedTxn> aborted;
    if (any_transactional(*read)) {
      auto found = log.aborted_between(from, read->next_from);
      if (!found.ok()) return found.status();
      aborted = std::move(found).value();
    }
    apply_isolation(*read, from, Isolation::kReadCommitted, stable, aborted);
    for (const EntryView& e : read->entries) {
      if (e.appended_at > horizon) return last;
      if (e.keyed()) last.insert_or_assign(std::string(e.key), e.offset.value);
    }
    if (read->next_from <= from) return last;  // the end, or the last stable offset
    from = read->next_from;
  }
}

// Counts (and, with a writer, rewrites) one closed segment. Without a writer the scan stops at the first
// batch too young to be eligible, since every later batch is younger still, and says so in `young`.
Status pass_segment(const SegmentedLog& log, Offset base, const Rules& rules, CompactionStats& stats,
                    SegmentRewrite* writer, bool* young = nullptr) {
  std::optional<std::string> pending_empty;  // the last batch left empty, kept only if nothing follows
  Status status;
  Status scanned = log.scan_segment(base, [&](const BatchHeader& h, std::string_view batch) {
    if (h.appended_at > rules.horizon) {
      if (young != nullptr) *young = true;
      if (writer == nullptr) return false;
      pending_empty.reset();
      status = writer->add(batch);
      return status.ok();
    }
    RecordReader records(batch);
    RecordView r;
    // The batch-wide fields stay (docs/FORMAT.md §Compaction): a version 1 batch is rewritten as version
    // 2 with the nulls its empty bytes meant.
    BatchBuilder out(BatchOptions{h.create_times(), h.transactional(), h.control(), h.producer});
    while (records.next(r)) {
      bool keep = true;
      if (rules.eligible(h, r.offset)) {
        ++stats.scanned;
        keep = rules.keep(h, r);
        ++(keep ? stats.kept : stats.dropped);
      }
      if (writer != nullptr && keep) out.add_at(static_cast<uint32_t>(r.offset - h.base_offset), r);
    }
    if (records.error()) {
      status = damaged_batch(log, base);
      return false;
    }
    if (writer == nullptr) return true;
    const bool empty = out.empty();
    out.set_last_delta(h.last_delta);
    std::string rewritten = std::move(out).finish();
    seal_batch(rewritten, h.base_offset, h.appended_at);
    if (empty) {
      pending_empty = std::move(rewritten);
      return true;
    }
    pending_empty.reset();
    status = writer->add(rewritten);
    return status.ok();
  });
  STREAMD_RETURN_IF_ERROR(scanned);
  STREAMD_RETURN_IF_ERROR(status);
  if (writer != nullptr && pending_empty) STREAMD_RETURN_IF_ERROR(writer->add(*pending_empty));
  return Status();
}

// Rewrites one segment and swaps it in. Returns false (and changes nothing) when retention or a trim
// removed the segment meanwhile.
Result<bool> rewrite_segment(SegmentedLog& log, Offset base, const Rules& rules) {
  auto attempt = [&]() -> Status {
    auto rewrite = log.rewrite_segment(base);
    if (!rewrite.ok()) return rewrite.status();
    CompactionStats ignored;
    STREAMD_RETURN_IF_ERROR(pass_segment(log, base, rules, ignored, rewrite->get()));
    return (*rewrite)->commit();
  };
  Status status = attempt();
  if (status.ok()) return true;
  if (!has_closed_segment(log, base)) return false;
  return status;
}

}  // namespace

Result<CompactionStats> compact_partition(SegmentedLog& log, std::chrono::milliseconds compact_after, Timestamp now) {
  CompactionStats total;
  if (compact_after.count() <= 0) return total;
  const int64_t window = compact_after.count() * 1000;
  const Timestamp horizon(now.micros - window);
  const Offset stable = log.last_stable();
  auto last = last_offsets(log, horizon, stable);
  if (!last.ok()) return last.status();
  const Rules rules{*last, horizon, Timestamp(now.micros - 2 * window), log.bounds().first, stable};

  for (const SegmentInfo& segment : log.segments()) {
    if (segment.active) break;
    if (segment.end <= rules.first) continue;
    CompactionStats stats;
    bool young = false;
    Status counted = pass_segment(log, segment.base, rules, stats, nullptr, &young);
    if (!counted.ok()) {
      if (!has_closed_segment(log, segment.base)) continue;
      return counted;
    }
    if (stats.dropped > 0) {
      auto rewritten = rewrite_segment(log, segment.base, rules);
      if (!rewritten.ok()) return rewritten.status();
      if (!*rewritten) continue;
      ++total.segments_rewritten;
    }
    total.scanned += stats.scanned;
    total.kept += stats.kept;
    total.dropped += stats.dropped;
    if (young) break;  // every later segment is younger still
  }
  return total;
}

}  // namespace streamd
