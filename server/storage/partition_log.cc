#include "server/storage/partition_log.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/storage/coding.h"
#include "server/storage/crc32c.h"
#include "server/storage/segment.h"

namespace streamd {
namespace {

constexpr const char* kCleanMarker = "clean";
constexpr const char* kFirstOffsetFile = "first_offset";
constexpr const char* kSwapSuffix = ".swap";

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// first_offset: u64 offset + u32 CRC32C of those 8 bytes, little-endian (docs/FORMAT.md).
std::string encode_first(Offset first) {
  std::string buf(12, '\0');
  coding::put_fixed64(buf.data(), first.value);
  coding::put_fixed32(buf.data() + 8, crc32c(std::string_view(buf.data(), 8)));
  return buf;
}

}  // namespace

PartitionLog::PartitionLog(FileSystem& fs, std::string dir, PartitionOptions options, Executor& executor,
                           const Clock& clock)
    : fs_(fs),
      dir_(std::move(dir)),
      options_(options),
      clock_(clock),
      commit_(executor, Status(Code::kUnavailable, "the partition is closed", {{"path", dir_}}),
              [this](std::vector<Pending>& group) { flush_group(group); }) {}

PartitionLog::~PartitionLog() { close(); }

Result<std::unique_ptr<PartitionLog>> PartitionLog::open(FileSystem& fs, std::string dir, PartitionOptions options,
                                                         Executor& executor, const Clock& clock) {
  STREAMD_RETURN_IF_ERROR(fs.create_dir(dir));
  std::unique_ptr<PartitionLog> log(new PartitionLog(fs, std::move(dir), options, executor, clock));
  bool clean = fs.exists(log->dir_ + "/" + kCleanMarker);
  STREAMD_RETURN_IF_ERROR(log->recover(clean));
  return log;
}

Status PartitionLog::recover(bool clean) {
  auto names = fs_.list_dir(dir_);
  if (!names.ok()) return names.status();
  std::vector<Offset> bases;
  for (const auto& name : *names) {
    if (auto base = Segment::parse_log_name(name)) {
      bases.push_back(*base);
    } else if (ends_with(name, kSwapSuffix)) {
      // A compaction that never swapped its result in: the original segment is intact.
      STREAMD_RETURN_IF_ERROR(fs_.remove(dir_ + "/" + name));
    }
  }
  std::sort(bases.begin(), bases.end());

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

  const SegmentOptions seg_options = SegmentOptions::from(options_);
  for (size_t i = 0; i < bases.size(); ++i) {
    bool active = i + 1 == bases.size();
    SegmentRecovery rec;
    auto seg = Segment::open(fs_, dir_, bases[i], seg_options, active, clean, rec);
    if (!seg.ok()) return seg.status();
    if (rec.corruption) {
      spdlog::error("partition {}: segment {} is CORRUPT at byte {} ({}); truncated {} bytes there, valid "
                    "batches followed the damage",
                    dir_, bases[i].value, rec.truncated_at, rec.reason, rec.dropped_bytes);
    } else if (rec.truncated) {
      spdlog::info("partition {}: segment {}: torn tail at byte {} ({}), truncated {} bytes", dir_,
                   bases[i].value, rec.truncated_at, rec.reason, rec.dropped_bytes);
    }
    if (rec.index_rebuilt) spdlog::warn("partition {}: segment {}: rebuilt stale index entries", dir_, bases[i].value);
    segments_.push_back(std::move(*seg));
  }
  // Index files whose log is gone (a removal cut short) are removed too.
  for (const auto& name : *names) {
    for (std::string_view ext : {".index", ".timeindex"}) {
      if (!ends_with(name, ext)) continue;
      std::string log_name = name.substr(0, name.size() - ext.size()) + ".log";
      if (!Segment::parse_log_name(log_name) || fs_.exists(dir_ + "/" + log_name)) continue;
      STREAMD_RETURN_IF_ERROR(fs_.remove(dir_ + "/" + name));
    }
  }
  if (segments_.empty()) {
    auto seg = Segment::create(fs_, dir_, trim_point, seg_options);
    if (!seg.ok()) return seg.status();
    segments_.push_back(std::move(*seg));
  }
  if (clean) STREAMD_RETURN_IF_ERROR(fs_.remove(dir_ + "/" + kCleanMarker));
  STREAMD_RETURN_IF_ERROR(fs_.sync_dir(dir_));

  const auto& last = segments_.back();
  written_next_ = last->written_end();
  last_appended_at_ = last->max_time();
  committed_next_.store(written_next_.value);
  first_.store(std::max(trim_point, segments_.front()->base()).value);
  if (Offset(first_.load()) > written_next_) first_.store(written_next_.value);
  return Status();
}

void PartitionLog::set_commit_listener(CommitListener listener) {
  std::lock_guard lock(listener_mu_);
  listener_ = std::move(listener);
}

void PartitionLog::append(std::string batch, AppendCallback done) {
  commit_.submit(Pending{std::move(batch), std::move(done)});
}

Status PartitionLog::failed_refusal() const {
  return Status(Code::kStreamBackendFailed, "the partition failed a write or sync and refuses appends until it is "
                "reopened", {{"path", dir_}});
}

void PartitionLog::flush_group(std::vector<Pending>& group) {
  CommitListener listener;
  {
    std::lock_guard lock(listener_mu_);
    listener = listener_;
  }
  std::vector<AppendRange> ranges;
  ranges.reserve(group.size());
  Status s = write_group(group, ranges);
  if (s.ok()) {
    committed_next_.store(written_next_.value, std::memory_order_release);
    for (size_t i = 0; i < group.size(); ++i) group[i].done(ranges[i]);
    if (listener) listener(written_next_);
    return;
  }
  // Nothing in this group is known to be on the device: acknowledge none of it, and refuse more
  // until a reopen lets recovery decide what survived.
  commit_.fail(failed_refusal());
  spdlog::error("partition {}: {}; failing pending appends until reopened", dir_, s.to_string());
  for (auto& p : group) p.done(s);
}

Status PartitionLog::write_group(std::vector<Pending>& group, std::vector<AppendRange>& ranges) {
  const Timestamp at = std::max(clock_.now(), last_appended_at_);
  last_appended_at_ = at;
  std::shared_ptr<Segment> seg = active();
  // The group's batches go out in one gathered write per segment, without being copied together.
  write_pieces_.clear();
  uint64_t pending_bytes = 0;
  auto flush_pieces = [&]() -> Status {
    Status st = seg->append(write_pieces_);
    write_pieces_.clear();
    pending_bytes = 0;
    return st;
  };
  for (auto& p : group) {
    uint64_t seg_bytes = seg->written_size() + pending_bytes;
    if (seg_bytes > 0 && seg_bytes + p.batch.size() > options_.segment_bytes) {
      if (pending_bytes > 0) STREAMD_RETURN_IF_ERROR(flush_pieces());
      STREAMD_RETURN_IF_ERROR(seg->sync());
      seg->publish();
      committed_next_.store(seg->written_end().value, std::memory_order_release);
      STREAMD_RETURN_IF_ERROR(roll(written_next_));
      seg = active();
    }
    const Offset base = written_next_;
    const BatchHeader header = peek_header(p.batch);
    seal_batch(p.batch, base, at);
    write_pieces_.push_back(p.batch);
    pending_bytes += p.batch.size();
    ranges.push_back({base, base + header.last_delta});
    written_next_ = header.end_offset().value == 0 ? base : base + header.last_delta + 1;
  }
  if (!write_pieces_.empty()) STREAMD_RETURN_IF_ERROR(flush_pieces());
  STREAMD_RETURN_IF_ERROR(seg->sync());
  seg->publish();
  return Status();
}

Status PartitionLog::roll_active_if(const std::function<bool(const SegmentInfo&)>& roll_it) {
  // Take the writer's role: no flush runs until it is handed back.
  if (!commit_.hold()) return Status();
  Status status;
  std::shared_ptr<Segment> seg = active();
  if (!commit_.failed() && seg->written_size() > 0 && roll_it(seg->info(true))) status = roll(written_next_);
  if (!status.ok()) {
    commit_.fail(failed_refusal());
    spdlog::error("partition {}: rolling the active segment failed: {}", dir_, status.to_string());
  }
  commit_.release();
  return status;
}

Status PartitionLog::roll(Offset base) {
  std::shared_ptr<Segment> old = active();
  STREAMD_RETURN_IF_ERROR(old->seal());
  auto seg = Segment::create(fs_, dir_, base, SegmentOptions::from(options_));
  if (!seg.ok()) return seg.status();
  STREAMD_RETURN_IF_ERROR(fs_.sync_dir(dir_));
  std::unique_lock lock(segments_mu_);
  segments_.push_back(std::move(*seg));
  return Status();
}

bool PartitionLog::reads_tail(Offset from) const { return from >= active()->base(); }

std::shared_ptr<Segment> PartitionLog::active() const {
  std::shared_lock lock(segments_mu_);
  return segments_.back();
}

std::shared_ptr<Segment> PartitionLog::segment_for(Offset offset) const {
  std::shared_lock lock(segments_mu_);
  auto it = std::upper_bound(segments_.begin(), segments_.end(), offset,
                             [](Offset o, const std::shared_ptr<Segment>& s) { return o < s->base(); });
  if (it == segments_.begin()) return segments_.front();
  return *(it - 1);
}

Bounds PartitionLog::bounds() const {
  // next first: a trim racing in can only raise first, never above next.
  Offset next(committed_next_.load(std::memory_order_acquire));
  Offset first(first_.load(std::memory_order_acquire));
  return {std::min(first, next), next};
}

Result<ReadResult> PartitionLog::read(Offset from, uint32_t max_records, uint64_t max_bytes) const {
  const Bounds b = bounds();
  if (from < b.first) {
    return Status::of(Code::kOffsetTrimmed, {{"requested", from.str()}, {"first", b.first.str()}});
  }
  if (from > b.next) return Status::of(Code::kOffsetAhead, {{"requested", from.str()}, {"next", b.next.str()}});
  ReadResult out;
  out.next_from = from;
  if (from == b.next || max_records == 0) return out;

  std::vector<std::shared_ptr<Segment>> snapshot;
  {
    std::shared_lock lock(segments_mu_);
    auto it = std::upper_bound(segments_.begin(), segments_.end(), from,
                               [](Offset o, const std::shared_ptr<Segment>& s) { return o < s->base(); });
    if (it != segments_.begin()) --it;
    for (; it != segments_.end(); ++it) snapshot.push_back(*it);
  }
  uint32_t records_left = max_records;
  uint64_t bytes_left = max_bytes;
  // Room for what the limits allow, assuming records of at least 64 bytes: no regrowth in the loop.
  out.entries.reserve(std::min<uint64_t>({max_records, max_bytes / 64 + 1, b.next - from}));
  for (const auto& seg : snapshot) {
    if (seg->committed_end() <= out.next_from) continue;
    STREAMD_RETURN_IF_ERROR(seg->read(out.next_from, records_left, bytes_left, out));
    if (records_left == 0 || bytes_left == 0 || out.next_from >= b.next) break;
  }
  // Entries synced after `b` was taken stay for the next read, so answers never pass bounds().next.
  while (!out.entries.empty() && out.entries.back().offset >= b.next) out.entries.pop_back();
  if (out.next_from > b.next) out.next_from = out.entries.empty() ? std::max(from, b.next) : out.entries.back().offset + 1;
  return out;
}

Offset PartitionLog::offset_at(Timestamp t) const {
  const Bounds b = bounds();
  std::vector<std::shared_ptr<Segment>> snapshot;
  {
    std::shared_lock lock(segments_mu_);
    // Instants never decrease along a partition, so the segments' newest instants are sorted.
    auto it = std::partition_point(segments_.begin(), segments_.end(),
                                   [t](const std::shared_ptr<Segment>& s) { return s->max_time() < t; });
    snapshot.assign(it, segments_.end());
  }
  for (const auto& seg : snapshot) {
    auto found = seg->offset_at(t);
    if (found.ok() && found->has_value()) return std::clamp(**found, b.first, b.next);
  }
  return b.next;
}

Result<std::optional<ReadResult>> PartitionLog::peek() const {
  const Bounds b = bounds();
  if (b.first == b.next) return std::optional<ReadResult>();
  // The newest segment holding a record has the last one; it is synced even if it landed after `b`.
  std::vector<std::shared_ptr<Segment>> snapshot;
  {
    std::shared_lock lock(segments_mu_);
    snapshot = segments_;
  }
  for (auto it = snapshot.rbegin(); it != snapshot.rend(); ++it) {
    ReadResult out;
    STREAMD_RETURN_IF_ERROR((*it)->last_record(out));
    if (out.entries.empty()) continue;
    if (out.entries.back().offset < b.first) return std::optional<ReadResult>();
    return std::optional<ReadResult>(std::move(out));
  }
  return std::optional<ReadResult>();
}

Status PartitionLog::persist_first(Offset first) {
  const std::string path = dir_ + "/" + kFirstOffsetFile;
  const std::string tmp = path + ".tmp";
  {
    auto file = fs_.open(tmp, OpenMode::kCreate);
    if (!file.ok()) return file.status();
    STREAMD_RETURN_IF_ERROR((*file)->truncate(0));
    STREAMD_RETURN_IF_ERROR((*file)->write_at(FilePosition(0), encode_first(first)));
    STREAMD_RETURN_IF_ERROR((*file)->sync());
  }
  STREAMD_RETURN_IF_ERROR(fs_.rename(tmp, path));
  return fs_.sync_dir(dir_);
}

Status PartitionLog::trim(Offset before) {
  std::lock_guard maintenance(maintenance_mu_);
  const Bounds b = bounds();
  if (before > b.next) return Status::of(Code::kOffsetAhead, {{"requested", before.str()}, {"next", b.next.str()}});
  if (before <= b.first) return Status();
  STREAMD_RETURN_IF_ERROR(persist_first(before));
  first_.store(before.value, std::memory_order_release);
  return drop_front_locked([before](const SegmentInfo& info) { return info.end <= before; });
}

Status PartitionLog::drop_front_segments(const std::function<bool(const SegmentInfo&)>& drop) {
  std::lock_guard maintenance(maintenance_mu_);
  return drop_front_locked(drop);
}

Status PartitionLog::drop_front_locked(const std::function<bool(const SegmentInfo&)>& drop) {
  std::vector<std::shared_ptr<Segment>> removed;
  {
    std::unique_lock lock(segments_mu_);
    while (segments_.size() > 1) {
      const auto& s = segments_.front();
      if (!drop(s->info(false))) break;
      removed.push_back(s);
      segments_.erase(segments_.begin());
    }
    if (!removed.empty()) {
      Offset new_first = segments_.front()->base();
      uint64_t cur = first_.load();
      if (new_first.value > cur) first_.store(new_first.value, std::memory_order_release);
    }
  }
  if (removed.empty()) return Status();
  for (const auto& s : removed) STREAMD_RETURN_IF_ERROR(s->remove_files());
  return fs_.sync_dir(dir_);
}

std::vector<SegmentInfo> PartitionLog::segments() const {
  std::shared_lock lock(segments_mu_);
  std::vector<SegmentInfo> out;
  out.reserve(segments_.size());
  for (size_t i = 0; i < segments_.size(); ++i) out.push_back(segments_[i]->info(i + 1 == segments_.size()));
  return out;
}

uint64_t PartitionLog::size_bytes() const {
  std::shared_lock lock(segments_mu_);
  uint64_t total = 0;
  for (const auto& s : segments_) total += s->committed_size();
  return total;
}

Status PartitionLog::scan_segment(Offset base,
                                  const std::function<bool(const BatchHeader&, std::string_view)>& visit) const {
  std::shared_ptr<Segment> seg;
  {
    std::shared_lock lock(segments_mu_);
    for (size_t i = 0; i + 1 < segments_.size(); ++i) {
      if (segments_[i]->base() == base) seg = segments_[i];
    }
  }
  if (!seg) return Status(Code::kStreamBackendFailed, "no closed segment has this base offset",
                          {{"path", dir_}, {"base", base.str()}});
  return seg->scan([&](const LogBatch& b) { return visit(b.header, b.bytes); });
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
  // Old indexes go first: a crash before the rename leaves the old log, whose indexes are rebuilt;
  // after it, the new log, likewise. The rename is the one atomic step.
  for (const auto& path : {old->offset_index_path(), old->time_index_path()}) {
    Status s = fs_.remove(path);
    if (!s.ok() && fs_.exists(path)) return s;
  }
  STREAMD_RETURN_IF_ERROR(fs_.rename(rewritten_path, old->log_path()));
  STREAMD_RETURN_IF_ERROR(fs_.sync_dir(dir_));
  SegmentRecovery rec;
  auto seg = Segment::open(fs_, dir_, base, SegmentOptions::from(options_), false, false, rec);
  if (!seg.ok()) return seg.status();
  std::unique_lock lock(segments_mu_);
  segments_[index] = std::move(*seg);
  return Status();
}

std::string PartitionLog::swap_path(Offset base) const { return dir_ + "/" + Segment::file_stem(base) + ".log" + kSwapSuffix; }

void PartitionLog::close(CloseMode mode) {
  if (!commit_.close()) return;
  if (commit_.failed() || mode == CloseMode::kAsIs) return;  // the next open's recovery decides
  Status s = active()->seal();
  if (s.ok()) {
    auto marker = fs_.open(dir_ + "/" + kCleanMarker, OpenMode::kCreate);
    s = marker.ok() ? (*marker)->sync() : marker.status();
  }
  if (s.ok()) s = fs_.sync_dir(dir_);
  if (!s.ok()) spdlog::error("partition {}: clean close failed: {}", dir_, s.to_string());
}

Result<AppendRange> append_and_wait(PartitionLog& log, std::string batch) {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Result<AppendRange>> result;
  log.append(std::move(batch), [&](Result<AppendRange> r) {
    std::lock_guard lock(mu);
    result.emplace(std::move(r));
    cv.notify_one();
  });
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return result.has_value(); });
  return std::move(*result);
}

}  // namespace streamd
