#include "server/storage/journal.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>
#include <utility>

#include "server/storage/coding.h"
#include "server/storage/crc32c.h"
#include "server/storage/numbered_name.h"
#include "server/storage/record_batch.h"
#include "server/storage/segment.h"

namespace streamd {
namespace {

// A record: u32 body length, u32 CRC32C of the body, then the body: u8 kind, u16 key length, the key,
// and for kBatches the sealed batches end to end. A zero length is the zero-filled space past the end.
constexpr size_t kRecordHeader = 8;
constexpr size_t kBodyPrefix = 3;
constexpr uint8_t kBatches = 1;
constexpr uint8_t kForget = 2;
constexpr const char* kSuffix = ".journal";
// The file grows zero-filled a window at a time, so a sync changes no file size (durable_write.h).
// Every group of every partition waits while the journal's writer fills a window: 4 MiB windows
// stalled them for a few milliseconds each, and W2's p99 with them (docs/PERFORMANCE.md).
constexpr uint64_t kFillWindow = 512ull << 10;

// Splits a record's payload into whole, valid batches; false when any is not one.
bool split_batches(std::string_view payload, std::vector<std::string_view>& out) {
  while (!payload.empty()) {
    BatchHeader header;
    if (check_batch(payload, header) != BatchCheck::kOk) return false;
    out.push_back(payload.substr(0, header.total_size()));
    payload.remove_prefix(header.total_size());
  }
  return true;
}

void forget_stream(JournalContents& contents, const std::string& stream) {
  const std::string prefix = stream + "/";
  auto it = contents.batches.lower_bound(prefix);
  while (it != contents.batches.end() && it->first.compare(0, prefix.size(), prefix) == 0) {
    it = contents.batches.erase(it);
  }
}

Status read_file(FileSystem& fs, const std::string& path, JournalContents& contents) {
  auto file = fs.open(path, OpenMode::kReadOnly);
  if (!file.ok()) return file.status();
  auto size = (*file)->size();
  if (!size.ok()) return size.status();
  std::string bytes(static_cast<size_t>(*size), '\0');
  auto n = (*file)->read_at(FilePosition(0), bytes.data(), bytes.size());
  if (!n.ok()) return n.status();
  bytes.resize(*n);
  std::string_view rest(bytes);
  if (rest.size() < Journal::kMagic.size() || rest.substr(0, Journal::kMagic.size()) != Journal::kMagic) {
    // A file whose first sync never happened holds nothing acknowledged; anything else is not a journal.
    if (std::all_of(rest.begin(), rest.end(), [](char c) { return c == 0; })) return Status();
    return Status(Code::kStreamBackendFailed, "a journal file does not start with the journal's magic",
                  {{"op", "read journal"}, {"path", path}});
  }
  rest.remove_prefix(Journal::kMagic.size());
  std::vector<std::string_view> batches;
  while (rest.size() >= kRecordHeader) {
    const uint32_t length = coding::get_fixed32(rest.data());
    const uint32_t crc = coding::get_fixed32(rest.data() + 4);
    if (length < kBodyPrefix || length > rest.size() - kRecordHeader) break;
    std::string_view body = rest.substr(kRecordHeader, length);
    if (crc32c(body) != crc) break;
    const uint8_t kind = static_cast<uint8_t>(body[0]);
    const uint16_t key_length = static_cast<uint16_t>(static_cast<uint8_t>(body[1]) | (static_cast<uint8_t>(body[2]) << 8));
    if (key_length > body.size() - kBodyPrefix) break;
    std::string key(body.substr(kBodyPrefix, key_length));
    std::string_view payload = body.substr(kBodyPrefix + key_length);
    if (kind == kForget && payload.empty()) {
      forget_stream(contents, key);
    } else if (kind == kBatches) {
      batches.clear();
      if (!split_batches(payload, batches)) break;
      auto& list = contents.batches[key];
      for (std::string_view b : batches) list.emplace_back(b);
    } else {
      break;
    }
    rest.remove_prefix(kRecordHeader + length);
  }
  return Status();
}

}  // namespace

std::string Journal::file_name(uint64_t sequence) { return numbered_name::stem(sequence) + kSuffix; }

Result<JournalContents> read_journal(FileSystem& fs, const std::string& dir) {
  JournalContents contents;
  if (!fs.exists(dir)) return contents;
  auto names = fs.list_dir(dir);
  if (!names.ok()) return names.status();
  std::map<uint64_t, std::string> files;
  for (const auto& name : *names) {
    if (auto seq = numbered_name::parse(name, kSuffix)) files.emplace(*seq, dir + "/" + name);
  }
  for (const auto& [seq, path] : files) {
    STREAMD_RETURN_IF_ERROR(read_file(fs, path, contents));
    contents.files.push_back(path);
    contents.next_sequence = seq + 1;
  }
  return contents;
}

Journal::Journal(FileSystem& fs, std::string dir, std::string streams_dir, JournalOptions options)
    : fs_(fs),
      dir_(std::move(dir)),
      streams_dir_(std::move(streams_dir)),
      options_(options),
      fill_(kFillWindow),
      commit_(writer_, Status(Code::kUnavailable, "the journal is closed", {{"path", dir_}}),
              [this](std::vector<Entry>& group) { write(group); }) {}

Journal::~Journal() { close(); }

Result<std::unique_ptr<Journal>> Journal::open(FileSystem& fs, std::string dir, std::string streams_dir,
                                               uint64_t sequence, JournalOptions options) {
  STREAMD_RETURN_IF_ERROR(fs.create_dir(dir));
  // The directory's own entry must be durable too, or a crash takes every file in it along.
  const size_t slash = dir.find_last_of('/');
  STREAMD_RETURN_IF_ERROR(fs.sync_dir(slash == std::string::npos ? "." : slash == 0 ? "/" : dir.substr(0, slash)));
  std::unique_ptr<Journal> journal(new Journal(fs, std::move(dir), std::move(streams_dir), options));
  STREAMD_RETURN_IF_ERROR(journal->start_file(sequence));
  return journal;
}

Status Journal::start_file(uint64_t sequence) {
  const std::string path = dir_ + "/" + file_name(sequence);
  auto file = fs_.open(path, OpenMode::kCreateNew);
  if (!file.ok()) return file.status();
  Status s = (*file)->write_at(FilePosition(0), kMagic);
  // The name must be durable before any record in the file is acknowledged; the magic is synced with
  // the file's first records.
  if (s.ok()) s = fs_.sync_dir(dir_);
  if (!s.ok()) {
    (void)fs_.remove(path);
    return s;
  }
  file_ = std::move(file).value();
  path_ = path;
  sequence_ = sequence;
  size_ = kMagic.size();
  fill_.reset(size_);
  return Status();
}

std::string Journal::key_for(const std::string& partition_dir) const {
  return partition_dir.substr(streams_dir_.size() + 1);
}

void Journal::submit(Entry entry) { commit_.submit(std::move(entry)); }

Status Journal::forget(const std::string& stream) {
  std::promise<Status> written;
  Entry entry;
  entry.forget = stream;
  entry.done = [&written](Status s) { written.set_value(std::move(s)); };
  commit_.submit(std::move(entry));
  return written.get_future().get();
}

void Journal::write(std::vector<Entry>& group) {
  Status s = write_records(group);
  if (!s.ok() && !s.out_of_space()) {
    // What reached the file is unknown, so nothing more may be written after it.
    commit_.fail(s);
    spdlog::error("journal {}: {}; partitions sync their own segments from here on", path_, s.to_string());
  }
  for (Entry& e : group) {
    if (s.ok() && e.segment) dirty_.emplace(e.segment.get(), e.segment);
    if (s.ok() && !e.dir.empty()) dirty_dirs_.insert(std::move(e.dir));
    e.done(s);
  }
  if (s.ok() && (size_ >= options_.file_bytes || dirty_.size() >= options_.max_segments)) rotate();
}

Status Journal::write_records(std::vector<Entry>& group) {
  headers_.assign(group.size(), std::string());
  pieces_.clear();
  uint64_t total = 0;
  for (size_t i = 0; i < group.size(); ++i) {
    const Entry& e = group[i];
    const std::string& key = e.forget.empty() ? e.key : e.forget;
    std::string& header = headers_[i];
    header.resize(kRecordHeader + kBodyPrefix);
    header[kRecordHeader] = static_cast<char>(e.forget.empty() ? kBatches : kForget);
    header[kRecordHeader + 1] = static_cast<char>(key.size() & 0xff);
    header[kRecordHeader + 2] = static_cast<char>(key.size() >> 8);
    header += key;
    uint64_t body = header.size() - kRecordHeader;
    uint32_t crc = crc32c_extend(0, header.data() + kRecordHeader, body);
    for (std::string_view b : e.batches) {
      crc = crc32c_extend(crc, b.data(), b.size());
      body += b.size();
    }
    coding::put_fixed32(header.data(), static_cast<uint32_t>(body));
    coding::put_fixed32(header.data() + 4, crc);
    total += kRecordHeader + body;
  }
  // The pieces point into headers_, which no longer reallocates.
  for (size_t i = 0; i < group.size(); ++i) {
    pieces_.push_back(headers_[i]);
    for (std::string_view b : group[i].batches) pieces_.push_back(b);
  }
  Status s = fill_.ensure(*file_, size_, size_ + total);
  if (s.ok()) s = file_->write_vectored(FilePosition(size_), pieces_);
  if (s.ok()) s = file_->sync();
  if (s.ok()) {
    size_ += total;
  } else if (s.out_of_space()) {
    // Cut away so that the next group's records follow the last whole one.
    if (Status cut = cut_unfinished_write(*file_, size_, &fill_); !cut.ok()) return cut;
  }
  return s;
}

void Journal::rotate() {
  Retired full{path_, {}, {}};
  std::unique_ptr<File> previous = std::move(file_);
  if (Status s = start_file(sequence_ + 1); !s.ok()) {
    // Keep writing the full file; the next group tries again.
    file_ = std::move(previous);
    if (!std::exchange(rotate_failing_, true)) {
      spdlog::warn("journal {}: cannot start the next file ({}); the current one keeps growing", path_, s.to_string());
    }
    return;
  }
  rotate_failing_ = false;
  retire_dirty(full);
  {
    std::lock_guard lock(retired_mu_);
    retired_.push_back(std::move(full));
  }
  checkpointer_.post([this] { checkpoint(); });
}

void Journal::retire_dirty(Retired& retired) {
  retired.segments.reserve(dirty_.size());
  for (auto& [ptr, segment] : dirty_) retired.segments.push_back(std::move(segment));
  dirty_.clear();
  retired.dirs.assign(std::make_move_iterator(dirty_dirs_.begin()), std::make_move_iterator(dirty_dirs_.end()));
  dirty_dirs_.clear();
}

void Journal::checkpoint() {
  for (;;) {
    Retired* next = nullptr;
    {
      std::lock_guard lock(retired_mu_);
      if (retired_.empty()) return;
      next = &retired_.front();
    }
    // Only this thread removes from the front, so `next` stays valid while it is worked on.
    Status s;
    for (const auto& segment : next->segments) {
      // Sealing synced it whole (a roll, a clean close), and it takes no more records.
      if (segment->sealed()) continue;
      s = segment->sync();
      if (!s.ok()) break;
    }
    for (size_t i = 0; s.ok() && i < next->dirs.size(); ++i) {
      // A directory removed since (its stream deleted) has nothing left to make durable.
      if (fs_.exists(next->dirs[i])) s = fs_.sync_dir(next->dirs[i]);
    }
    if (s.ok()) s = fs_.remove(next->path);
    if (s.ok()) s = fs_.sync_dir(dir_);
    if (!s.ok()) {
      spdlog::error("journal: checkpoint of {} failed ({}); it stays and is tried again", next->path, s.to_string());
      return;
    }
    std::lock_guard lock(retired_mu_);
    retired_.pop_front();
  }
}

void Journal::close(CloseMode mode) {
  if (!commit_.close()) return;
  file_.reset();
  Retired last{path_, {}, {}};
  retire_dirty(last);
  if (mode == CloseMode::kCheckpoint) {
    std::lock_guard lock(retired_mu_);
    retired_.push_back(std::move(last));
  }
  // Also waits for a checkpoint under way, which holds segments' files open.
  if (mode == CloseMode::kCheckpoint) checkpointer_.post([this] { checkpoint(); });
  wait_for_checkpoints();
}

void Journal::wait_for_checkpoints() {
  // The checkpointer is one thread: what it was given before this runs before it.
  std::promise<void> done;
  checkpointer_.post([&done] { done.set_value(); });
  done.get_future().wait();
}

}  // namespace streamd
