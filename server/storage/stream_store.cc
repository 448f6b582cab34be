#include "server/storage/stream_store.h"

#include <spdlog/spdlog.h>

#include <cerrno>

#include "server/storage/deferred_dir_syncs.h"
#include "server/storage/partition_files.h"
#include "server/storage/run_at_once.h"
#include "server/storage/stream_name.h"

namespace streamd {
namespace {

// How many partitions or streams the store's open and close work on at once (run_at_once.h).
constexpr size_t kDiskThreads = 16;

bool starts_with(const std::string& s, std::string_view prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

StreamStoreOptions with_producers(StreamStoreOptions options, std::shared_ptr<ProducerLimits> limits) {
  options.partition.producers = std::move(limits);
  return options;
}

}  // namespace

Stream::Stream(std::string name, std::string dir, const StreamMeta& meta)
    : name_(std::move(name)), dir_(std::move(dir)), created_at_(meta.created_at), policy_(meta.policy) {}

Stream::~Stream() { close(); }

PartitionSlot* Stream::partition(PartitionId p) const {
  if (p.value < 0 || p.value >= partition_count()) return nullptr;
  return partitions_[static_cast<size_t>(p.value)].get();
}

uint64_t Stream::size_bytes() const {
  uint64_t total = 0;
  for (const auto& log : partitions_) total += log->size_bytes();
  return total;
}

Status Stream::unknown_partition(PartitionId p) const {
  return Status::of(Code::kUnknownPartition, {{"stream", name_},
                                              {"partition", std::to_string(p.value)},
                                              {"partitions", std::to_string(partition_count())}});
}

void Stream::set_policy(const Policy& policy) {
  policy_.set(policy);
  for (auto& slot : partitions_) slot->set_segment_bytes(static_cast<uint64_t>(policy.segment_bytes));
}

void Stream::close() {
  for (auto& log : partitions_) log->close();
  if (groups_) groups_->close();
}

StreamStore::StreamStore(FileSystem& fs, std::unique_ptr<DataDir> data_dir, Executor& executor, const Clock& clock,
                         StreamStoreOptions options)
    : fs_(fs),
      data_dir_(std::move(data_dir)),
      streams_dir_(data_dir_->streams_dir()),
      executor_(executor),
      clock_(clock),
      producer_limits_(std::make_shared<ProducerLimits>(options.producers)),
      options_(with_producers(options, producer_limits_)),
      open_partitions_(OpenPartitions::make(options.max_open_files, executor)) {}

StreamStore::~StreamStore() { close(); }

Result<std::unique_ptr<StreamStore>> StreamStore::open(FileSystem& fs, const std::string& data_dir, Executor& executor,
                                                       const Clock& clock, StreamStoreOptions options) {
  auto dir = DataDir::open(fs, data_dir);
  if (!dir.ok()) return dir.status();
  std::unique_ptr<StreamStore> store(new StreamStore(fs, std::move(dir).value(), executor, clock, options));
  auto ids = ProducerIds::open(fs, store->data_dir_->path(), store->data_dir_->producer_ids_path());
  if (!ids.ok()) return ids.status();
  store->producer_ids_ = std::move(ids).value();
  STREAMD_RETURN_IF_ERROR(store->recover());
  return store;
}

Status StreamStore::recover() {
  auto names = fs_.list_dir(streams_dir_);
  if (!names.ok()) return names.status();
  std::vector<std::string> streams;
  for (const auto& name : *names) {
    const std::string path = streams_dir_ + "/" + name;
    if (starts_with(name, kCreatingPrefix) || starts_with(name, kDeletedPrefix)) {
      // A create that never reached its rename, or a delete that did and was cut short removing files:
      // either way the entry is not a stream.
      spdlog::info("stream store: removing {} left by an interrupted {}", path,
                   starts_with(name, kCreatingPrefix) ? "create" : "delete");
      STREAMD_RETURN_IF_ERROR(remove_tree(path));
      continue;
    }
    if (!validate_stream_name(name).ok()) {
      spdlog::warn("stream store: ignoring {}: not a stream name", path);
      continue;
    }
    streams.push_back(name);
  }
  // Synced whether or not anything was removed: a create that a crash stopped between its rename and
  // its sync of this directory left a stream whose name is not durable, and it is served from here on.
  STREAMD_RETURN_IF_ERROR(fs_.sync_dir(streams_dir_));
  STREAMD_RETURN_IF_ERROR(replay_journal());
  // Streams open independently of each other, several at a time: reading a hundred thousand
  // partitions' markers is mostly system calls, and recovering the partitions a crash left is syncs.
  std::vector<Result<std::shared_ptr<Stream>>> opened(streams.size(), Status());
  run_at_once(streams.size(), kDiskThreads, [&](size_t i) { opened[i] = open_stream(streams[i]); });
  for (size_t i = 0; i < streams.size(); ++i) {
    if (!opened[i].ok()) {
      // One damaged stream must not keep the others offline; its directory stays for inspection, and
      // its name stays taken.
      spdlog::error("stream store: cannot open stream {}: {}", streams[i], opened[i].status().to_string());
      continue;
    }
    streams_.emplace(streams[i], std::move(opened[i]).value());
  }
  return Status();
}

Status StreamStore::replay_journal() {
  const std::string dir = data_dir_->journal_dir();
  auto contents = read_journal(fs_, dir);
  if (!contents.ok()) return contents.status();
  // Each partition is opened, given its batches and closed cleanly: syncs, made several partitions at
  // a time (run_at_once.h).
  using Entry = std::pair<const std::string, std::vector<std::string>>;  // a partition key and its batches
  std::vector<const Entry*> partitions;
  for (const auto& entry : contents->batches) partitions.push_back(&entry);
  std::vector<Status> replayed(partitions.size());
  run_at_once(partitions.size(), kDiskThreads,
              [&](size_t i) { replayed[i] = replay_partition(partitions[i]->first, partitions[i]->second); });
  bool complete = true;
  for (size_t i = 0; i < partitions.size(); ++i) {
    if (!replayed[i].ok()) {
      complete = false;
      spdlog::error("stream store: replaying the journal into {} failed: {}; the journal files stay",
                    partitions[i]->first, replayed[i].to_string());
    }
  }
  // Every partition has what the journal held, synced: its files are of no more use.
  if (complete && !contents->files.empty()) {
    for (const auto& file : contents->files) STREAMD_RETURN_IF_ERROR(fs_.remove(file));
    STREAMD_RETURN_IF_ERROR(fs_.sync_dir(dir));
  }
  if (!options_.journal) return Status();
  auto journal = Journal::open(fs_, dir, streams_dir_, contents->next_sequence, options_.journal_options);
  if (!journal.ok()) return journal.status();
  journal_ = std::move(journal).value();
  return Status();
}

Status StreamStore::replay_partition(const std::string& key, const std::vector<std::string>& batches) {
  const size_t slash = key.find('/');
  const std::string name = key.substr(0, slash);
  const std::string partition = slash == std::string::npos ? std::string() : key.substr(slash + 1);
  if (!validate_stream_name(name).ok() || partition.empty() || partition.size() > 10 ||
      partition.find_first_not_of("0123456789") != std::string::npos) {
    return Status(Code::kStreamBackendFailed, "a journal record names no partition",
                  {{"op", "replay journal"}, {"key", key}});
  }
  const std::string dir = stream_dir(name) + "/" + partition;
  if (!fs_.exists(dir)) return Status();  // its stream was deleted after the records were written
  auto meta = read_stream_meta(fs_, stream_dir(name));
  if (!meta.ok()) return meta.status();
  PartitionOptions options = options_.partition;
  options.segment_bytes = static_cast<uint64_t>(meta->policy.segment_bytes);
  // A marker here was removed by the first journaled write, and the crash undid the removal: the
  // files changed since, so they are scanned. The clean close below leaves a marker that is true.
  const std::string marker = dir + "/" + partition_files::kCleanMarker;
  if (fs_.exists(marker)) STREAMD_RETURN_IF_ERROR(fs_.remove(marker));
  auto log = PartitionLog::open(fs_, dir, options, executor_, clock_);
  if (!log.ok()) return log.status();
  Status replayed = (*log)->replay(batches);
  (*log)->close(replayed.ok() ? PartitionLog::CloseMode::kClean : PartitionLog::CloseMode::kAsIs);
  return replayed;
}

Result<std::shared_ptr<Stream>> StreamStore::open_stream(const std::string& name) {
  const std::string dir = stream_dir(name);
  auto meta = read_stream_meta(fs_, dir);
  if (!meta.ok()) return meta.status();
  if (Status valid = meta->policy.validate(); !valid.ok() || meta->policy.partitions < 1) {
    return Status(Code::kStreamBackendFailed, "The stream metadata holds an invalid policy",
                  {{"op", "read stream metadata"}, {"path", dir}, {"reason", valid.message()}});
  }
  std::shared_ptr<Stream> stream(new Stream(name, dir, *meta));
  PartitionOptions partition_options = options_.partition;
  partition_options.segment_bytes = static_cast<uint64_t>(meta->policy.segment_bytes);
  partition_options.journal = journal_.get();
  // The directories of partitions opened below are synced together once they are all made.
  DeferredDirSyncs unsynced;
  for (int32_t p = 0; p < meta->policy.partitions; ++p) {
    std::string partition_dir = dir + "/" + std::to_string(p);
    std::shared_ptr<PartitionSlot> slot;
    // Unchanged since its last clean close: its marker says all a closed partition answers, and its
    // files wait until it is used. Otherwise it opens now, and recovery scans what a crash left.
    if (auto summary = PartitionLog::clean_summary(fs_, partition_dir)) {
      slot = PartitionSlot::closed(fs_, std::move(partition_dir), partition_options, executor_, clock_,
                                   open_partitions_, std::move(*summary));
    } else {
      auto opened = PartitionSlot::open(fs_, std::move(partition_dir), partition_options, executor_, clock_,
                                        open_partitions_, &unsynced);
      if (!opened.ok()) return opened.status();
      slot = std::move(opened).value();
    }
    open_partitions_->enlist(slot);
    stream->partitions_.push_back(std::move(slot));
    // Kept within the limit as it opens: a store of more partitions than the limit holds must never
    // have them all open at once.
    if (open_partitions_->over_limit()) open_partitions_->sweep();
  }
  STREAMD_RETURN_IF_ERROR(unsynced.sync_all(fs_));
  auto groups = GroupOffsets::open(fs_, dir, executor_, options_.groups);
  if (!groups.ok()) return groups.status();
  stream->groups_ = std::move(groups).value();
  return stream;
}

Result<std::shared_ptr<Stream>> StreamStore::create(const std::string& name, const Policy& policy) {
  STREAMD_RETURN_IF_ERROR(validate_stream_name(name));
  STREAMD_RETURN_IF_ERROR(policy.validate());
  std::lock_guard admin(admin_mu_);
  const std::string dir = stream_dir(name);
  {
    std::shared_lock lock(streams_mu_);
    if (streams_.count(name) > 0 || fs_.exists(dir)) return Status::of(Code::kStreamExists, {{"stream", name}});
  }

  const std::string staging = streams_dir_ + "/" + kCreatingPrefix + name;
  auto build = [&]() -> Status {
    if (fs_.exists(staging)) STREAMD_RETURN_IF_ERROR(remove_tree(staging));
    STREAMD_RETURN_IF_ERROR(fs_.create_dir(staging));
    const StreamMeta meta{policy.normalized(), clock_.now()};
    STREAMD_RETURN_IF_ERROR(write_stream_meta(fs_, staging, meta));
    for (int32_t p = 0; p < meta.policy.partitions; ++p) {
      STREAMD_RETURN_IF_ERROR(fs_.create_dir(staging + "/" + std::to_string(p)));
    }
    STREAMD_RETURN_IF_ERROR(fs_.sync_dir(staging));
    STREAMD_RETURN_IF_ERROR(fs_.rename(staging, dir));
    return fs_.sync_dir(streams_dir_);
  };
  if (Status built = build(); !built.ok()) {
    if (fs_.exists(staging)) (void)remove_tree(staging);
    if (fs_.exists(dir)) (void)remove_tree(dir);
    return built;
  }
  auto stream = open_stream(name);
  if (!stream.ok()) {
    spdlog::error("stream store: created stream {} does not open ({}); removing it", name,
                  stream.status().to_string());
    (void)remove_tree(dir);
    (void)fs_.sync_dir(streams_dir_);
    return stream.status();
  }
  std::unique_lock lock(streams_mu_);
  streams_.emplace(name, *stream);
  return stream;
}

Status StreamStore::remove(const std::string& name) {
  STREAMD_RETURN_IF_ERROR(validate_stream_name(name));
  std::lock_guard admin(admin_mu_);
  std::shared_ptr<Stream> stream;
  {
    std::unique_lock lock(streams_mu_);
    auto it = streams_.find(name);
    if (it == streams_.end()) return Status::of(Code::kStreamNotFound, {{"stream", name}});
    stream = std::move(it->second);
    streams_.erase(it);
  }
  stream->close();

  // The stream's records in the journal end here, durably, before its directory goes: a stream
  // created later under this name never receives them.
  Status forgotten = journal_ ? journal_->forget(name) : Status();
  const std::string tombstone = streams_dir_ + "/" + kDeletedPrefix + name + "." +
                                std::to_string(clock_.now().micros) + "-" + std::to_string(tombstone_seq_++);
  if (Status renamed = forgotten.ok() ? fs_.rename(stream->dir(), tombstone) : forgotten; !renamed.ok()) {
    // Nothing changed on disk: put the stream back as it was.
    auto reopened = open_stream(name);
    if (reopened.ok()) {
      std::unique_lock lock(streams_mu_);
      streams_.emplace(name, std::move(reopened).value());
    } else {
      spdlog::error("stream store: stream {} stays on disk but does not reopen: {}", name,
                    reopened.status().to_string());
    }
    return renamed;
  }
  // Past the rename the stream is gone for this process; a failed directory sync is still reported,
  // because a crash could bring the stream back.
  STREAMD_RETURN_IF_ERROR(fs_.sync_dir(streams_dir_));
  if (Status removed = remove_tree(tombstone); !removed.ok()) {
    spdlog::warn("stream store: deleted stream {} left files in {} ({}); removed at next start", name, tombstone,
                 removed.to_string());
  } else {
    (void)fs_.sync_dir(streams_dir_);
  }
  return Status();
}

Result<Policy> StreamStore::alter(const std::string& name, const PolicyEdit& edit) {
  STREAMD_RETURN_IF_ERROR(validate_stream_name(name));
  std::lock_guard admin(admin_mu_);
  auto stream = find(name);
  if (!stream.ok()) return stream.status();
  const Policy before = (*stream)->policy();
  auto edited = edit(before);
  if (!edited.ok()) return edited.status();
  const Policy after = edited->normalized();
  // The edit's checks, once more where a mistake would cost a stream that no longer opens.
  if (Status valid = after.validate(); !valid.ok()) return valid;
  if (after.partitions != before.partitions) {
    return Status(Code::kStreamMisconfigured, "partitions: a stream's partition count never changes",
                  {{"field", "partitions"}, {"value", std::to_string(after.partitions)}, {"stream", name}});
  }
  if (after == before) return after;
  bool renamed = false;
  Status written = write_stream_meta(fs_, (*stream)->dir(), StreamMeta{after, (*stream)->created_at()},
                                     [&renamed] { renamed = true; });
  // Once renamed, the file holds the new policy, which a restart reads: so does the stream from now on.
  if (renamed) (*stream)->set_policy(after);
  if (!written.ok()) return std::move(written).with("stream", name);
  return after;
}

Result<std::shared_ptr<Stream>> StreamStore::find(const std::string& name) const {
  STREAMD_RETURN_IF_ERROR(validate_stream_name(name));
  std::shared_lock lock(streams_mu_);
  auto it = streams_.find(name);
  if (it == streams_.end()) return Status::of(Code::kStreamNotFound, {{"stream", name}});
  return it->second;
}

std::vector<std::shared_ptr<Stream>> StreamStore::list() const {
  std::shared_lock lock(streams_mu_);
  std::vector<std::shared_ptr<Stream>> out;
  out.reserve(streams_.size());
  for (const auto& [name, stream] : streams_) out.push_back(stream);
  return out;
}

size_t StreamStore::size() const {
  std::shared_lock lock(streams_mu_);
  return streams_.size();
}

void StreamStore::close() {
  std::lock_guard admin(admin_mu_);
  std::map<std::string, std::shared_ptr<Stream>> streams;
  {
    std::unique_lock lock(streams_mu_);
    streams.swap(streams_);
  }
  // A partition written since its open syncs its files, writes its clean marker and syncs its
  // directory as it closes. One at a time, a broker with 1,000 such partitions took 2.6-2.9 s to stop
  // on a journaled ext4; kDiskThreads at a time, 0.5-0.7 s.
  std::vector<PartitionSlot*> slots;
  for (auto& [name, stream] : streams) {
    for (auto& slot : stream->partitions_) slots.push_back(slot.get());
  }
  run_at_once(slots.size(), kDiskThreads, [&](size_t i) { slots[i]->close(); });
  for (auto& [name, stream] : streams) stream->close();  // their group offsets; the partitions are closed
  // After the partitions: their last groups go through it.
  if (journal_) journal_->close();
}

Status StreamStore::remove_tree(const std::string& path) {
  auto names = fs_.list_dir(path);
  if (!names.ok()) {
    if (names.status().field("errno") == std::to_string(ENOTDIR)) return fs_.remove(path);
    return names.status();
  }
  for (const auto& name : *names) STREAMD_RETURN_IF_ERROR(remove_tree(path + "/" + name));
  return fs_.remove_dir(path);
}

}  // namespace streamd
