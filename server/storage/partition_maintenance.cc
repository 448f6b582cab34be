// PartitionLog's maintenance: trim, retention's segment drops, rolls of the active segment and
// compaction's segment rewrite and swap. Serialised with each other by maintenance_mu_.
#include "server/storage/partition_log.h"

#include <spdlog/spdlog.h>

#include "server/storage/durable_write.h"
#include "server/storage/partition_files.h"
#include "server/storage/segment.h"

namespace streamd {

using namespace partition_files;

namespace {

constexpr size_t kWriteChunk = 1 << 20;

// A closed segment's rewritten log, written to its swap file in chunks.
class SwapRewrite final : public SegmentRewrite {
 public:
  SwapRewrite(PartitionLog& log, FileSystem& fs, Offset base, std::string path, std::unique_ptr<File> file)
      : log_(log), fs_(fs), base_(base), path_(std::move(path)), file_(std::move(file)) {}
  // Uncommitted, or committed and failed before the rename: the swap file goes.
  ~SwapRewrite() override {
    file_.reset();
    if (fs_.exists(path_)) (void)fs_.remove(path_);
  }
  SwapRewrite(const SwapRewrite&) = delete;
  SwapRewrite& operator=(const SwapRewrite&) = delete;

  Status clear() { return file_->truncate(0); }
  Status add(std::string_view batch) override {
    buffer_.append(batch);
    return buffer_.size() >= kWriteChunk ? flush() : Status();
  }
  Status commit() override {
    STREAMD_RETURN_IF_ERROR(flush());
    STREAMD_RETURN_IF_ERROR(file_->sync());
    return log_.replace_segment(base_, path_);
  }

 private:
  Status flush() {
    if (buffer_.empty()) return Status();
    STREAMD_RETURN_IF_ERROR(file_->write_at(FilePosition(position_), buffer_));
    position_ += buffer_.size();
    buffer_.clear();
    return Status();
  }

  PartitionLog& log_;
  FileSystem& fs_;
  const Offset base_;
  const std::string path_;
  std::unique_ptr<File> file_;
  std::string buffer_;
  uint64_t position_ = 0;
};

}  // namespace

Result<std::unique_ptr<SegmentRewrite>> PartitionLog::rewrite_segment(Offset base) {
  std::string path = swap_path(base);
  auto file = fs_.open(path, OpenMode::kCreate);
  if (!file.ok()) return file.status();
  // A swap file left by an earlier attempt starts over; dropping the rewrite removes it if this fails.
  auto rewrite = std::make_unique<SwapRewrite>(*this, fs_, base, path, std::move(file).value());
  STREAMD_RETURN_IF_ERROR(rewrite->clear());
  return std::unique_ptr<SegmentRewrite>(std::move(rewrite));
}

Status PartitionLog::persist_first(Offset first) {
  const std::string path = dir_ + "/" + kFirstOffsetFile;
  return replace_file(fs_, dir_, path + ".tmp", path, encode_first(first));
}

Status PartitionLog::trim(Offset before) {
  std::lock_guard maintenance(maintenance_mu_);
  const Bounds b = bounds();
  if (before > b.next) return Status::of(Code::kOffsetAhead, {{"requested", before.str()}, {"next", b.next.str()}});
  if (before <= b.first) return Status();
  const auto below = [before](const SegmentInfo& info) { return info.end <= before; };
  STREAMD_RETURN_IF_ERROR(drop_clean_marker());
  // Records the journal made durable may not be in the segment yet; a first offset past the segment's
  // synced end would be lowered to that end by recovery, bringing trimmed records back.
  if (options_.journal != nullptr) STREAMD_RETURN_IF_ERROR(active()->sync());
  Status persisted = persist_first(before);
  if (persisted.out_of_space()) {
    // A trim is how an operator frees a full disk, and the new first offset's file needs a block of
    // its own: drop the whole segments below `before` first, then try again. A crash in between leaves
    // the first offset at the lowest segment kept (partition_recovery.cc), a part of this trim.
    STREAMD_RETURN_IF_ERROR(drop_front_locked(below));
    persisted = persist_first(before);
  }
  STREAMD_RETURN_IF_ERROR(persisted);
  first_.store(before.value, std::memory_order_release);
  producers_.forget_aborted_before(before);
  return drop_front_locked(below);
}

Status PartitionLog::drop_front_segments(const std::function<bool(const SegmentInfo&)>& drop) {
  std::lock_guard maintenance(maintenance_mu_);
  return drop_front_locked(drop);
}

Status PartitionLog::drop_front_locked(const std::function<bool(const SegmentInfo&)>& drop) {
  // Decided first, removed after the marker is gone. Only maintenance (serialised by maintenance_mu_)
  // removes segments from the front, so the front stays as decided; a roll meanwhile only appends.
  size_t count = 0;
  {
    std::shared_lock lock(segments_mu_);
    while (count + 1 < segments_.size() && drop(segments_[count]->info(false))) ++count;
  }
  if (count == 0) return Status();
  STREAMD_RETURN_IF_ERROR(drop_clean_marker());
  std::vector<std::shared_ptr<Segment>> removed;
  {
    std::unique_lock lock(segments_mu_);
    for (size_t i = 0; i < count; ++i) removed.push_back(std::move(segments_[i]));
    segments_.erase(segments_.begin(), segments_.begin() + static_cast<std::ptrdiff_t>(count));
    Offset new_first = segments_.front()->base();
    uint64_t cur = first_.load();
    if (new_first.value > cur) first_.store(new_first.value, std::memory_order_release);
    producers_.forget_aborted_before(Offset(first_.load()));
  }
  for (const auto& s : removed) STREAMD_RETURN_IF_ERROR(s->remove_files());
  return fs_.sync_dir(dir_);
}

Status PartitionLog::roll_active_if(const std::function<bool(const SegmentInfo&)>& roll_it) {
  // Take the writer's role: no flush runs until it is handed back.
  if (!commit_.hold()) return Status();
  Status status;
  std::shared_ptr<Segment> seg = active();
  if (!commit_.failed() && seg->written_size() > 0 && roll_it(seg->info(true))) {
    status = drop_clean_marker();
    if (status.ok()) status = roll(written_next_);
  }
  if (status.out_of_space()) {
    // The active segment may be sealed already; the next group creates its successor.
    spdlog::warn("partition {}: rolling the active segment found no space: {}", dir_, status.to_string());
  } else if (!status.ok()) {
    commit_.fail(failed_refusal());
    spdlog::error("partition {}: rolling the active segment failed: {}", dir_, status.to_string());
  }
  commit_.release();
  return status;
}

Status PartitionLog::roll(Offset base) {
  std::shared_ptr<Segment> old = active();
  // Sealed already when an earlier roll found no room for the successor (seal() does nothing then).
  STREAMD_RETURN_IF_ERROR(old->seal());
  STREAMD_RETURN_IF_ERROR(snapshot_producers(*old));
  auto seg = Segment::create(fs_, dir_, base, segment_options());
  if (!seg.ok()) return seg.status();
  STREAMD_RETURN_IF_ERROR(fs_.sync_dir(dir_));
  remove_snapshots_before(old->base());
  std::unique_lock lock(segments_mu_);
  segments_.push_back(std::move(*seg));
  return Status();
}

Status PartitionLog::replace_segment(Offset base, const std::string& rewritten_path) {
  std::lock_guard maintenance(maintenance_mu_);
  size_t index = 0;
  std::shared_ptr<Segment> old;
  {
    std::shared_lock lock(segments_mu_);
    for (size_t i = 0; i + 1 < segments_.size(); ++i) {
      if (segments_[i]->base() == base) {
        old = segments_[i];
        index = i;
      }
    }
  }
  if (!old) return Status(Code::kStreamBackendFailed, "no closed segment has this base offset",
                          {{"path", dir_}, {"base", base.str()}});
  STREAMD_RETURN_IF_ERROR(drop_clean_marker());
  // Old indexes go first: a crash before the rename leaves the old log, whose indexes are rebuilt;
  // after it, the new log, likewise. The rename is the one atomic step.
  for (const auto& path : {old->offset_index_path(), old->time_index_path()}) {
    Status s = fs_.remove(path);
    if (!s.ok() && fs_.exists(path)) return s;
  }
  STREAMD_RETURN_IF_ERROR(fs_.rename(rewritten_path, old->log_path()));
  STREAMD_RETURN_IF_ERROR(fs_.sync_dir(dir_));
  SegmentRecovery rec;
  auto seg = Segment::open(fs_, dir_, base, segment_options(), SegmentRole::kClosed, PriorClose::kUnknown, rec);
  if (!seg.ok()) return seg.status();
  std::unique_lock lock(segments_mu_);
  segments_[index] = std::move(*seg);
  return Status();
}

std::string PartitionLog::swap_path(Offset base) const { return dir_ + "/" + Segment::file_stem(base) + ".log" + kSwapSuffix; }

}  // namespace streamd
