#include "server/storage/group_offsets.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>

#include "server/storage/coding.h"
#include "server/storage/crc32c.h"

namespace streamd {
namespace {

namespace log_fmt = group_log_format;

std::string file_header() {
  std::string out(log_fmt::kMagic, sizeof log_fmt::kMagic);
  out.push_back(static_cast<char>(log_fmt::kVersion));
  out.append(3, '\0');
  return out;
}

// Type 1 for a commit without metadata (the only type older logs hold), 2 with it, 3 for a forget.
size_t body_size(const std::string& group, PartitionId partition, Offset next, std::string_view metadata) {
  size_t n = 1 + coding::varint_length(group.size()) + group.size() +
             coding::varint_length(static_cast<uint32_t>(partition.value)) + coding::varint_length(next.value);
  if (!metadata.empty()) n += coding::varint_length(metadata.size()) + metadata.size();
  return n;
}

size_t record_size(const std::string& group, PartitionId partition, Offset next, std::string_view metadata) {
  return log_fmt::kRecordHeaderSize + body_size(group, partition, next, metadata);
}

void append_framed(std::string& out, const std::string& body) {
  char header[log_fmt::kRecordHeaderSize];
  coding::put_fixed32(header, static_cast<uint32_t>(body.size()));
  coding::put_fixed32(header + 4, crc32c(body));
  out.append(header, sizeof header);
  out += body;
}

void append_record(std::string& out, const std::string& group, PartitionId partition, Offset next,
                   std::string_view metadata) {
  std::string body;
  body.reserve(body_size(group, partition, next, metadata));
  body.push_back(static_cast<char>(metadata.empty() ? log_fmt::kCommitType : log_fmt::kCommitWithMetadataType));
  coding::append_varint(body, group.size());
  body += group;
  coding::append_varint(body, static_cast<uint32_t>(partition.value));
  coding::append_varint(body, next.value);
  if (!metadata.empty()) {
    coding::append_varint(body, metadata.size());
    body += metadata;
  }
  append_framed(out, body);
}

void append_forget(std::string& out, const std::string& group, PartitionId partition) {
  std::string body;
  body.push_back(static_cast<char>(log_fmt::kForgetType));
  coding::append_varint(body, group.size());
  body += group;
  coding::append_varint(body, static_cast<uint32_t>(partition.value));
  append_framed(out, body);
}

struct ParsedRecord {
  std::string group;
  PartitionId partition;
  Offset next;
  std::string metadata;
  bool forget = false;
};

// Decodes the body of one record whose CRC already matched.
bool parse_body(std::string_view body, ParsedRecord& out) {
  if (body.empty()) return false;
  const auto type = static_cast<uint8_t>(body[0]);
  if (type != log_fmt::kCommitType && type != log_fmt::kCommitWithMetadataType && type != log_fmt::kForgetType) return false;
  body.remove_prefix(1);
  std::string_view group;
  uint64_t partition = 0;
  uint64_t next = 0;
  if (!coding::get_length_prefixed(body, group) || group.empty() || !coding::get_varint(body, partition) ||
      partition > INT32_MAX) {
    return false;
  }
  out.group = std::string(group);
  out.partition = PartitionId(static_cast<int32_t>(partition));
  out.forget = type == log_fmt::kForgetType;
  if (out.forget) return body.empty();
  if (!coding::get_varint(body, next)) return false;
  out.next = Offset(next);
  if (type == log_fmt::kCommitWithMetadataType) {
    std::string_view metadata;
    if (!coding::get_length_prefixed(body, metadata) || metadata.empty()) return false;
    out.metadata = std::string(metadata);
  }
  return body.empty();
}

bool all_zero(std::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
}

Status damaged_offsets_log(const std::string& path, std::string reason) {
  return Status(Code::kStreamBackendFailed, "The group offsets log " + path + " is damaged: " + reason,
                {{"op", "read group offsets"}, {"path", path}, {"reason", reason}});
}

}  // namespace

GroupOffsets::GroupOffsets(FileSystem& fs, std::string dir, Executor& executor, GroupOffsetsOptions options)
    : fs_(fs),
      dir_(std::move(dir)),
      path_(dir_ + "/" + log_fmt::kFileName),
      options_(options),
      zero_fill_(options.preallocate_bytes),
      commit_(executor, Status(Code::kUnavailable, "The group offsets of this stream are closed"),
              [this](std::vector<Pending>& group) { flush(group); }) {}

GroupOffsets::~GroupOffsets() { close(); }

Result<std::unique_ptr<GroupOffsets>> GroupOffsets::open(FileSystem& fs, std::string dir, Executor& executor,
                                                         GroupOffsetsOptions options) {
  std::unique_ptr<GroupOffsets> offsets(new GroupOffsets(fs, std::move(dir), executor, options));
  STREAMD_RETURN_IF_ERROR(offsets->recover());
  return offsets;
}

Status GroupOffsets::recover() {
  const std::string temp = dir_ + "/" + log_fmt::kTempFileName;
  // A temp file is a rewrite that never reached its rename: the log it would have replaced is intact.
  if (fs_.exists(temp)) STREAMD_RETURN_IF_ERROR(fs_.remove(temp));
  if (!fs_.exists(path_)) return rewrite();

  auto file = fs_.open(path_, OpenMode::kReadWrite);
  if (!file.ok()) return file.status();
  auto size = (*file)->size();
  if (!size.ok()) return size.status();
  std::string bytes(*size, '\0');
  auto n = (*file)->read_at(FilePosition(0), bytes.data(), bytes.size());
  if (!n.ok()) return n.status();
  bytes.resize(*n);

  // A log shorter than its header was being created when the process stopped: it holds no commit.
  if (bytes.size() < log_fmt::kFileHeaderSize) return rewrite();
  if (std::string_view(bytes).substr(0, log_fmt::kFileHeaderSize) != file_header()) {
    return damaged_offsets_log(path_, "bad file header");
  }

  size_t pos = log_fmt::kFileHeaderSize;
  uint64_t records = 0;
  std::string stopped;  // why the scan ended before the zero-filled end of the file
  bool corrupt = false;
  const std::string_view all(bytes);
  while (pos < bytes.size()) {
    std::string_view rest = all.substr(pos);
    if (rest.size() < log_fmt::kRecordHeaderSize || coding::get_fixed32(rest.data()) == 0) {
      // Zero-filled space is the end; anything else here is a write cut short.
      if (!all_zero(rest)) stopped = "record header cut short";
      break;
    }
    uint32_t length = coding::get_fixed32(rest.data());
    uint32_t crc = coding::get_fixed32(rest.data() + 4);
    if (length > log_fmt::kMaxBodyBytes) {
      stopped = "impossible record length " + std::to_string(length);
      corrupt = true;
      break;
    }
    if (rest.size() < log_fmt::kRecordHeaderSize + length) {
      stopped = "record cut short";
      break;
    }
    std::string_view body = rest.substr(log_fmt::kRecordHeaderSize, length);
    ParsedRecord record;
    if (crc32c(body) != crc || !parse_body(body, record)) {
      stopped = "bad record";
      // The last record written failing its CRC is a torn write; records after it mean damage.
      corrupt = !all_zero(rest.substr(log_fmt::kRecordHeaderSize + length));
      break;
    }
    if (record.forget) {
      remove(record.group, record.partition);
    } else {
      apply(record.group, record.partition, record.next, record.metadata);
    }
    ++records;
    pos += log_fmt::kRecordHeaderSize + length;
  }

  if (!stopped.empty()) {
    if (corrupt) {
      spdlog::error("group offsets log {}: {} at byte {}; the {} bytes after it are dropped, {} records kept",
                    path_, stopped, pos, bytes.size() - pos, records);
    } else {
      spdlog::info("group offsets log {}: torn tail at byte {} ({}), {} records kept", path_, pos, stopped,
                   records);
    }
  }
  if (!stopped.empty() || pos > std::max<uint64_t>(options_.rewrite_min_bytes, 2 * live_bytes_)) {
    return rewrite();
  }
  file_ = std::move(file).value();
  end_ = pos;
  zero_fill_.reset(bytes.size());
  return Status();
}

void GroupOffsets::apply(const std::string& group, PartitionId partition, Offset next, std::string_view metadata) {
  auto [it, inserted] = offsets_.try_emplace(Key(group, partition.value), Kept{next, std::string(metadata)});
  if (!inserted) {
    live_bytes_ -= record_size(group, partition, it->second.next, it->second.metadata);
    it->second = Kept{next, std::string(metadata)};
  }
  live_bytes_ += record_size(group, partition, next, metadata);
}

void GroupOffsets::remove(const std::string& group, PartitionId partition) {
  auto it = offsets_.find(Key(group, partition.value));
  if (it == offsets_.end()) return;
  live_bytes_ -= record_size(group, partition, it->second.next, it->second.metadata);
  offsets_.erase(it);
}

Status GroupOffsets::rewrite() {
  std::string bytes = file_header();
  {
    std::shared_lock lock(map_mu_);
    bytes.reserve(log_fmt::kFileHeaderSize + live_bytes_);
    for (const auto& [key, kept] : offsets_) {
      append_record(bytes, key.first, PartitionId(key.second), kept.next, kept.metadata);
    }
  }
  // A failure before the rename leaves the old log in place and file_ on it; past the rename, file_
  // stays empty on failure, because appending to the old (now unlinked) log would lose commits.
  STREAMD_RETURN_IF_ERROR(
      replace_file(fs_, dir_, dir_ + "/" + log_fmt::kTempFileName, path_, bytes, [this] { file_.reset(); }));
  auto file = fs_.open(path_, OpenMode::kReadWrite);
  if (!file.ok()) return file.status();
  file_ = std::move(file).value();
  end_ = bytes.size();
  zero_fill_.reset(bytes.size());
  return Status();
}

void GroupOffsets::commit(std::string group, PartitionId partition, Offset next, std::string metadata, Done done) {
  commit_.submit(Pending{std::move(group), partition, next, std::move(metadata), false, std::move(done)});
}

void GroupOffsets::forget(std::string group, PartitionId partition, Done done) {
  commit_.submit(Pending{std::move(group), partition, Offset(0), std::string(), true, std::move(done)});
}

void GroupOffsets::flush(std::vector<Pending>& group) {
  std::string bytes;
  for (const Pending& p : group) {
    if (p.forget) {
      append_forget(bytes, p.group, p.partition);
    } else {
      append_record(bytes, p.group, p.partition, p.next, p.metadata);
    }
  }

  Status status = zero_fill_.ensure(*file_, end_, end_ + bytes.size());
  if (status.ok()) status = file_->write_at(FilePosition(end_), bytes);
  if (status.out_of_space()) {
    // Nothing of this group is synced, and what was is intact: cut the unfinished write away and take
    // commits again once space is freed.
    Status cut = cut_unfinished_write(*file_, end_, &zero_fill_);
    if (cut.ok()) {
      spdlog::warn("group offsets log {}: {}; the commits were not written", path_, status.to_string());
      const Status refusal(Code::kStreamBackendFailed,
                           "no space left on the device: the commit was not written; commits are taken again "
                           "once space is freed",
                           status.fields());
      for (Pending& p : group) p.done(refusal);
      return;
    }
    status = cut;
  }
  if (status.ok()) status = file_->sync();
  if (!status.ok()) {
    spdlog::error("group offsets log {}: {}; refusing commits until reopened", path_, status.to_string());
    commit_.fail(status);
    for (Pending& p : group) p.done(status);
    return;
  }
  end_ += bytes.size();
  {
    std::unique_lock lock(map_mu_);
    for (const Pending& p : group) {
      if (p.forget) {
        remove(p.group, p.partition);
      } else {
        apply(p.group, p.partition, p.next, p.metadata);
      }
    }
  }
  for (Pending& p : group) p.done(Status());
  if (end_ > std::max<uint64_t>(options_.rewrite_min_bytes, 2 * live_bytes_)) {
    // Every commit is already durable in the long log; a failed rewrite leaves it in place, and the
    // next open tries again.
    Status rewritten = rewrite();
    if (!rewritten.ok()) {
      spdlog::warn("group offsets log {}: rewrite failed: {}", path_, rewritten.to_string());
      if (!file_) commit_.fail(rewritten);
    }
  }
}

std::optional<Offset> GroupOffsets::committed(const std::string& group, PartitionId partition) const {
  std::shared_lock lock(map_mu_);
  auto it = offsets_.find(Key(group, partition.value));
  if (it == offsets_.end()) return std::nullopt;
  return it->second.next;
}

std::optional<GroupOffsets::Entry> GroupOffsets::find(const std::string& group, PartitionId partition) const {
  std::shared_lock lock(map_mu_);
  auto it = offsets_.find(Key(group, partition.value));
  if (it == offsets_.end()) return std::nullopt;
  return Entry{group, partition, it->second.next, it->second.metadata};
}

std::vector<GroupOffsets::Entry> GroupOffsets::list() const {
  std::shared_lock lock(map_mu_);
  std::vector<Entry> out;
  out.reserve(offsets_.size());
  for (const auto& [key, kept] : offsets_) {
    out.push_back(Entry{key.first, PartitionId(key.second), kept.next, kept.metadata});
  }
  return out;
}

void GroupOffsets::close() { commit_.close(); }

bool GroupOffsets::failed() const { return commit_.failed(); }

uint64_t GroupOffsets::log_bytes() const { return end_.load(); }

}  // namespace streamd
