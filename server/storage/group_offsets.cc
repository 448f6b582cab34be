#include "server/storage/group_offsets.h"

#include <climits>

#include "server/storage/coding.h"

namespace streamd {
namespace {

namespace log_fmt = group_log_format;

// Type 1 for a commit without metadata (the only type older logs hold), 2 with it, 3 for a forget.
size_t body_size(const std::string& group, PartitionId partition, Offset next, std::string_view metadata) {
  size_t n = 1 + coding::varint_length(group.size()) + group.size() +
             coding::varint_length(static_cast<uint32_t>(partition.value)) + coding::varint_length(next.value);
  if (!metadata.empty()) n += coding::varint_length(metadata.size()) + metadata.size();
  return n;
}

size_t record_size(const std::string& group, PartitionId partition, Offset next, std::string_view metadata) {
  return RecordLog::framed_size(body_size(group, partition, next, metadata));
}

std::string commit_body(const std::string& group, PartitionId partition, Offset next, std::string_view metadata) {
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
  return body;
}

std::string forget_body(const std::string& group, PartitionId partition) {
  std::string body;
  body.push_back(static_cast<char>(log_fmt::kForgetType));
  coding::append_varint(body, group.size());
  body += group;
  coding::append_varint(body, static_cast<uint32_t>(partition.value));
  return body;
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

}  // namespace

Result<std::unique_ptr<GroupOffsets>> GroupOffsets::open(FileSystem& fs, std::string dir, Executor& executor,
                                                         GroupOffsetsOptions options) {
  std::unique_ptr<GroupOffsets> offsets(new GroupOffsets());
  auto log = RecordLog::open(fs, std::move(dir), log_fmt::kFormat, executor, options, *offsets);
  if (!log.ok()) return log.status();
  offsets->log_ = std::move(log).value();
  return offsets;
}

GroupOffsets::~GroupOffsets() { close(); }

bool GroupOffsets::replay(std::string_view body) {
  ParsedRecord record;
  if (!parse_body(body, record)) return false;
  std::unique_lock lock(map_mu_);
  if (record.forget) {
    remove(record.group, record.partition);
  } else {
    apply(record.group, record.partition, record.next, record.metadata);
  }
  return true;
}

void GroupOffsets::live_records(std::string& out) const {
  std::shared_lock lock(map_mu_);
  for (const auto& [key, kept] : offsets_) {
    RecordLog::frame(out, commit_body(key.first, PartitionId(key.second), kept.next, kept.metadata));
  }
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

void GroupOffsets::commit(std::string group, PartitionId partition, Offset next, std::string metadata, Done done) {
  std::string body = commit_body(group, partition, next, metadata);
  log_->append(std::move(body), [this, group = std::move(group), partition, next, metadata = std::move(metadata),
                                 done = std::move(done)](Status s) {
    if (s.ok()) {
      std::unique_lock lock(map_mu_);
      apply(group, partition, next, metadata);
    }
    done(std::move(s));
  });
}

void GroupOffsets::forget(std::string group, PartitionId partition, Done done) {
  std::string body = forget_body(group, partition);
  log_->append(std::move(body), [this, group = std::move(group), partition, done = std::move(done)](Status s) {
    if (s.ok()) {
      std::unique_lock lock(map_mu_);
      remove(group, partition);
    }
    done(std::move(s));
  });
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

}  // namespace streamd
