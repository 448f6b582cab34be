// PartitionLog's idempotent producers' states across restarts (docs/FORMAT.md §"Producer snapshots"):
// the batches carry every producer field, so the log is the truth and a snapshot only spares reading
// it. A clean close keeps the states in the clean marker; each roll writes `<base>.producers`, the
// states as of the end of the segment it sealed, and removes the older one once its own name is
// durable. After a crash the states are those of the newest snapshot the log reaches, with the batches
// after it applied; with none, those of every batch the log holds: an open transaction or an aborted
// one may be as old as the log (docs/TRANSACTIONS.md), which no idle expiry bounds.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/storage/numbered_name.h"
#include "server/storage/partition_log.h"
#include "server/storage/segment.h"

namespace streamd {
namespace {

constexpr const char* kSnapshotSuffix = ".producers";

std::string snapshot_name(Offset end_of) { return numbered_name::stem(end_of.value) + kSnapshotSuffix; }

}  // namespace

Status PartitionLog::rebuild_producers(const std::optional<PartitionSummary>& vouched) {
  if (vouched) {
    // A clean close's states: exact, and nothing was written since.
    if (vouched->producers.empty() || producers_.load(vouched->producers)) return Status();
  }
  auto names = fs_.list_dir(dir_);
  if (!names.ok()) return names.status();
  std::vector<uint64_t> snapshots;
  for (const auto& name : *names) {
    if (auto base = numbered_name::parse(name, kSnapshotSuffix)) snapshots.push_back(*base);
  }
  std::sort(snapshots.rbegin(), snapshots.rend());
  // The newest snapshot that loads and that the log reaches; a damaged one (a cut during its write)
  // is passed over for an older one, or for the batches.
  std::optional<Offset> from;
  for (uint64_t base : snapshots) {
    auto file = fs_.open(dir_ + "/" + snapshot_name(Offset(base)), OpenMode::kReadOnly);
    if (!file.ok()) continue;
    auto size = (*file)->size();
    if (!size.ok()) continue;
    std::string bytes(static_cast<size_t>(*size), '\0');
    auto n = (*file)->read_at(FilePosition(0), bytes.data(), bytes.size());
    if (!n.ok() || *n != bytes.size()) continue;
    if (auto end = producers_.load(bytes); end && *end <= written_next_) {
      from = *end;
      break;
    }
  }
  const Timestamp now = clock_.now();
  std::vector<std::shared_ptr<Segment>> segments;
  {
    std::shared_lock lock(segments_mu_);
    segments = segments_;
  }
  uint64_t applied = 0;
  for (const auto& seg : segments) {
    if (from && seg->committed_end() <= *from) continue;
    Status scanned = seg->scan([&](const LogBatch& b) {
      if (from && b.header.base_offset < *from) return true;
      producers_.replay(stamp_of(b.header, b.bytes), b.header.last_delta,
                        {b.header.base_offset, b.header.last_offset()},
                        b.header.appended_at);
      ++applied;
      return true;
    });
    STREAMD_RETURN_IF_ERROR(scanned);
  }
  // Those idle past the expiry go now rather than at the first append.
  producers_.expire(now);
  if (!from && applied > 0) {
    spdlog::info("partition {}: producers' states rebuilt from {} batches ({} producers)", dir_, applied,
                 producers_.size());
  }
  return Status();
}

Status PartitionLog::snapshot_producers(const Segment& sealed) {
  const std::string path = dir_ + "/" + snapshot_name(sealed.base());
  auto file = fs_.open(path, OpenMode::kCreate);
  if (!file.ok()) return file.status();
  const std::string bytes = producers_.snapshot(sealed.written_end());
  STREAMD_RETURN_IF_ERROR((*file)->truncate(0));
  STREAMD_RETURN_IF_ERROR((*file)->write_at(FilePosition(0), bytes));
  return (*file)->sync();
}

void PartitionLog::remove_snapshots_before(Offset keep) {
  auto names = fs_.list_dir(dir_);
  if (!names.ok()) return;  // an older snapshot left behind is passed over by the next open
  for (const auto& name : *names) {
    auto base = numbered_name::parse(name, kSnapshotSuffix);
    if (!base || Offset(*base) >= keep) continue;
    if (Status removed = fs_.remove(dir_ + "/" + name); !removed.ok()) {
      spdlog::warn("partition {}: cannot remove the older producer snapshot {}: {}", dir_, name, removed.to_string());
    }
  }
}

}  // namespace streamd
