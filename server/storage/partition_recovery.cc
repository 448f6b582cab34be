// PartitionLog::open's recovery: which segments there are, what the first offset is, and each
// segment recovered in turn (segment_recovery.cc); leftovers of interrupted operations are removed.
#include "server/storage/partition_log.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/storage/deferred_dir_syncs.h"
#include "server/storage/partition_files.h"
#include "server/storage/segment.h"

namespace streamd {

using namespace partition_files;

Status PartitionLog::recover(bool clean, DeferredDirSyncs* deferred) {
  auto names = fs_.list_dir(dir_);
  if (!names.ok()) return names.status();
  std::vector<Offset> bases;
  bool changed = false;  // whether this open repaired the files
  bool created = false;  // whether it made the first segment of a new partition
  for (const auto& name : *names) {
    if (auto base = Segment::parse_log_name(name)) {
      bases.push_back(*base);
    } else if (ends_with(name, kSwapSuffix)) {
      // A compaction that never swapped its result in: the original segment is intact.
      STREAMD_RETURN_IF_ERROR(fs_.remove(dir_ + "/" + name));
      changed = true;
    }
  }
  std::sort(bases.begin(), bases.end());
  std::optional<PartitionSummary> vouched;
  if (clean) {
    auto summary = vouched_by_marker(bases);
    if (!summary.ok()) return summary.status();
    vouched = std::move(summary).value();
    clean = vouched.has_value();
  }

  Offset trim_point;
  if (auto file = fs_.open(dir_ + "/" + kFirstOffsetFile, OpenMode::kReadOnly); file.ok()) {
    char buf[12];
    auto n = (*file)->read_at(FilePosition(0), buf, sizeof buf);
    if (n.ok() && *n == sizeof buf && coding::get_fixed32(buf + 8) == crc32c(std::string_view(buf, 8))) {
      trim_point = Offset(coding::get_fixed64(buf));
    } else {
      spdlog::error("partition {}: {} is damaged; records below the first segment stay readable", dir_,
                    kFirstOffsetFile);
    }
  }

  const SegmentOptions seg_options = segment_options();
  const PriorClose prior = clean ? PriorClose::kClean : PriorClose::kUnknown;
  for (size_t i = 0; i < bases.size(); ++i) {
    const SegmentRole role = i + 1 == bases.size() ? SegmentRole::kActive : SegmentRole::kClosed;
    SegmentRecovery rec;
    auto seg = Segment::open(fs_, dir_, bases[i], seg_options, role, prior, rec);
    if (!seg.ok()) return seg.status();
    if (rec.corruption) {
      spdlog::error("partition {}: segment {} is CORRUPT at byte {} ({}); truncated {} bytes there, valid "
                    "batches followed the damage",
                    dir_, bases[i].value, rec.truncated_at, rec.reason, rec.dropped_bytes);
    } else if (rec.truncated) {
      spdlog::info("partition {}: segment {}: torn tail at byte {} ({}), truncated {} bytes", dir_,
                   bases[i].value, rec.truncated_at, rec.reason, rec.dropped_bytes);
    }
    if (rec.index_unreadable) {
      spdlog::error("partition {}: segment {}: the disk could not return its index pages; made them anew "
                    "from the log", dir_, bases[i].value);
    }
    if (rec.index_rebuilt) spdlog::warn("partition {}: segment {}: rebuilt stale index entries", dir_, bases[i].value);
    changed = changed || rec.truncated || rec.index_rebuilt || rec.index_unreadable;
    segments_.push_back(std::move(*seg));
  }
  // Index files whose log is gone (a removal cut short) are removed too.
  for (const auto& name : *names) {
    for (std::string_view ext : {".index", ".timeindex"}) {
      if (!ends_with(name, ext)) continue;
      std::string log_name = name.substr(0, name.size() - ext.size()) + ".log";
      if (!Segment::parse_log_name(log_name) || fs_.exists(dir_ + "/" + log_name)) continue;
      STREAMD_RETURN_IF_ERROR(fs_.remove(dir_ + "/" + name));
      changed = true;
    }
  }
  if (segments_.empty()) {
    auto seg = Segment::create(fs_, dir_, trim_point, seg_options);
    if (!seg.ok()) return seg.status();
    segments_.push_back(std::move(*seg));
    created = true;
  }
  const auto& last = segments_.back();
  written_next_ = last->written_end();
  last_appended_at_ = last->max_time();
  committed_next_.store(written_next_.value);
  first_.store(std::max(trim_point, segments_.front()->base()).value);
  if (Offset(first_.load()) > written_next_) first_.store(written_next_.value);
  STREAMD_RETURN_IF_ERROR(rebuild_producers(vouched));

  // The marker stays while the files are exactly as a clean close left them; an open that had to
  // change them (leftovers removed, a tail cut, an index rebuilt) removes it. A new partition's empty
  // files are what a clean close of an empty partition leaves, so it starts with the marker. That
  // marker needs no sync of its own: the directory sync below makes its entry durable with the
  // segment's, a summary torn by a crash is not believed (partition_summary.h), and a marker lost
  // costs the next open only a scan of nothing.
  const bool keep = !changed && (clean || created);
  if (keep && !clean) STREAMD_RETURN_IF_ERROR(write_clean_marker(/*sync=*/false));
  if (clean && !keep) STREAMD_RETURN_IF_ERROR(fs_.remove(dir_ + "/" + kCleanMarker));
  marked_clean_.store(keep, std::memory_order_release);
  // A partition trusted as it was needs no directory sync: nothing in it changed.
  if (keep && !created) return Status();
  if (deferred != nullptr) {
    deferred->add(dir_);
    return Status();
  }
  return fs_.sync_dir(dir_);
}

Result<std::optional<PartitionSummary>> PartitionLog::vouched_by_marker(const std::vector<Offset>& bases) {
  std::optional<PartitionSummary> summary = clean_summary(fs_, dir_);
  if (!summary || summary->segments.size() != bases.size()) return std::optional<PartitionSummary>();
  for (size_t i = 0; i < bases.size(); ++i) {
    if (summary->segments[i].base != bases[i]) return std::optional<PartitionSummary>();
  }
  if (bases.empty()) return summary;
  auto log = fs_.open(dir_ + "/" + Segment::file_stem(bases.back()) + ".log", OpenMode::kReadWrite);
  if (!log.ok()) return log.status();
  auto size = (*log)->size();
  if (!size.ok()) return size.status();
  const uint64_t bytes = summary->segments.back().bytes;
  if (*size < bytes) return std::optional<PartitionSummary>();
  if (*size > bytes) {
    STREAMD_RETURN_IF_ERROR((*log)->truncate(bytes));
    STREAMD_RETURN_IF_ERROR((*log)->sync());
    spdlog::info("partition {}: segment {}: cut {} bytes written after its clean close and never acknowledged",
                 dir_, bases.back().value, *size - bytes);
  }
  return summary;
}

}  // namespace streamd
