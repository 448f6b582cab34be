#include "tests/support/fault_injection_fs.h"

#include <algorithm>
#include <iterator>
#include <set>

namespace streamd::testing {
namespace {

// Disjoint, non-adjacent half-open byte ranges [begin, end), keyed by begin.
class RangeSet {
 public:
  void add(uint64_t begin, uint64_t end) {
    if (begin >= end) return;
    auto it = ranges_.upper_bound(begin);
    if (it != ranges_.begin() && std::prev(it)->second >= begin) --it;
    while (it != ranges_.end() && it->first <= end) {
      begin = std::min(begin, it->first);
      end = std::max(end, it->second);
      it = ranges_.erase(it);
    }
    ranges_.emplace(begin, end);
  }
  void clear() { ranges_.clear(); }
  const std::map<uint64_t, uint64_t>& ranges() const { return ranges_; }

 private:
  std::map<uint64_t, uint64_t> ranges_;
};

}  // namespace

struct FaultInjectionFileSystem::FileState {
  std::mutex mu;
  // Created through this object: a crash before its first sync loses the file itself.
  bool created = false;
  bool ever_synced = false;
  // Whether `durable` holds the synced content. Until the first change through this object the file on
  // disk is its own synced content, so a file that is only read is never copied.
  bool loaded = false;
  std::string durable;
  // Ranges where the file may differ from `durable`; everything past durable.size() differs too.
  RangeSet dirty;
  // Lengths of the live mappings: stores through them can happen at any time, so their ranges stay
  // dirty until the mapping is gone and a sync has captured them.
  std::multiset<size_t> live_maps;

  // Copies the file's current content as its synced content, before the first change through us.
  Status load(const File& file) {
    if (loaded) return Status();
    auto size = file.size();
    if (!size.ok()) return size.status();
    durable.assign(*size, '\0');
    auto n = file.read_at(FilePosition(0), durable.data(), durable.size());
    if (!n.ok()) return n.status();
    durable.resize(*n);
    loaded = true;
    return Status();
  }

  // After a successful fdatasync: the file as it is now becomes its synced content.
  Status capture(const File& file) {
    auto size = file.size();
    if (!size.ok()) return size.status();
    const uint64_t old_size = durable.size();
    RangeSet changed = dirty;
    changed.add(old_size, *size);
    for (size_t len : live_maps) changed.add(0, len);
    durable.resize(*size);
    for (const auto& [begin, end] : changed.ranges()) {
      if (begin >= *size) break;
      const uint64_t stop = std::min<uint64_t>(end, *size);
      auto n = file.read_at(FilePosition(begin), durable.data() + begin, stop - begin);
      if (!n.ok()) return n.status();
    }
    dirty.clear();
    for (size_t len : live_maps) dirty.add(0, len);
    ever_synced = true;
    return Status();
  }
};

class FaultInjectionFileSystem::FaultRegion final : public MappedRegion {
 public:
  FaultRegion(FaultInjectionFileSystem& fs, std::string path, std::unique_ptr<MappedRegion> base,
              std::shared_ptr<FileState> state)
      : fs_(fs), path_(std::move(path)), base_(std::move(base)), state_(std::move(state)) {}

  ~FaultRegion() override {
    std::lock_guard lock(state_->mu);
    auto it = state_->live_maps.find(base_->size());
    if (it != state_->live_maps.end()) state_->live_maps.erase(it);
    state_->dirty.add(0, base_->size());
  }

  char* data() override { return base_->data(); }
  size_t size() const override { return base_->size(); }

  Status sync() override {
    STREAMD_RETURN_IF_ERROR(fs_.take_fault(fs_.sync_fault_, path_, "msync"));
    {
      std::lock_guard lock(state_->mu);
      STREAMD_RETURN_IF_ERROR(base_->sync());
      // msync makes exactly the mapped bytes durable; the mapping shares the page cache, so they are
      // also what write_at put there.
      if (state_->durable.size() < base_->size()) state_->durable.resize(base_->size());
      std::copy_n(base_->data(), base_->size(), state_->durable.data());
      state_->ever_synced = true;
    }
    fs_.count_sync(path_);
    return Status();
  }

 private:
  FaultInjectionFileSystem& fs_;
  const std::string path_;
  std::unique_ptr<MappedRegion> base_;
  std::shared_ptr<FileState> state_;
};

class FaultInjectionFileSystem::FaultFile final : public File {
 public:
  FaultFile(FaultInjectionFileSystem& fs, std::unique_ptr<File> base, std::shared_ptr<FileState> state)
      : fs_(fs), base_(std::move(base)), state_(std::move(state)) {}

  const std::string& path() const override { return base_->path(); }

  Status write_at(FilePosition pos, std::string_view data) override {
    STREAMD_RETURN_IF_ERROR(fs_.take_fault(fs_.write_fault_, path(), "pwrite"));
    {
      std::lock_guard lock(state_->mu);
      STREAMD_RETURN_IF_ERROR(state_->load(*base_));
      Status s = base_->write_at(pos, data);
      // A failed pwrite may still have written a part: treat its whole range as changed.
      state_->dirty.add(pos.value, pos.value + data.size());
      STREAMD_RETURN_IF_ERROR(s);
    }
    fs_.count_write(path());
    return Status();
  }

  // One write, as far as faults and counts go: the model needs no more than the concatenation.
  Status write_vectored(FilePosition pos, std::span<const std::string_view> pieces) override {
    std::string joined;
    for (std::string_view piece : pieces) joined.append(piece);
    return write_at(pos, joined);
  }

  // Starting writeback makes nothing durable: the synced content this model keeps is unchanged.
  void start_writeback(FilePosition pos, uint64_t length) override { base_->start_writeback(pos, length); }

  Result<size_t> read_at(FilePosition pos, char* out, size_t n) const override {
    STREAMD_RETURN_IF_ERROR(fs_.read_fault(path()));
    return base_->read_at(pos, out, n);
  }

  Status sync() override {
    STREAMD_RETURN_IF_ERROR(fs_.take_fault(fs_.sync_fault_, path(), "fdatasync"));
    {
      std::lock_guard lock(state_->mu);
      STREAMD_RETURN_IF_ERROR(state_->load(*base_));
      STREAMD_RETURN_IF_ERROR(base_->sync());
      STREAMD_RETURN_IF_ERROR(state_->capture(*base_));
    }
    fs_.count_sync(path());
    return Status();
  }

  Status truncate(uint64_t size) override {
    std::lock_guard lock(state_->mu);
    STREAMD_RETURN_IF_ERROR(state_->load(*base_));
    auto old = base_->size();
    if (!old.ok()) return old.status();
    STREAMD_RETURN_IF_ERROR(base_->truncate(size));
    state_->dirty.add(std::min(size, *old), std::max(size, *old));
    return Status();
  }

  Result<uint64_t> size() const override { return base_->size(); }

  Result<std::unique_ptr<MappedRegion>> map(size_t length) override {
    std::lock_guard lock(state_->mu);
    STREAMD_RETURN_IF_ERROR(state_->load(*base_));
    auto region = base_->map(length);
    if (!region.ok()) return region.status();
    state_->live_maps.insert(length);
    state_->dirty.add(0, length);
    return std::unique_ptr<MappedRegion>(new FaultRegion(fs_, path(), std::move(*region), state_));
  }

 private:
  FaultInjectionFileSystem& fs_;
  std::unique_ptr<File> base_;
  std::shared_ptr<FileState> state_;
};

FaultInjectionFileSystem::FaultInjectionFileSystem(FileSystem& base) : base_(base) {}

FaultInjectionFileSystem::~FaultInjectionFileSystem() = default;

Result<std::unique_ptr<File>> FaultInjectionFileSystem::open(const std::string& path, OpenMode mode) {
  const bool existed = base_.exists(path);
  if (!existed && mode != OpenMode::kReadOnly && mode != OpenMode::kReadWrite) {
    STREAMD_RETURN_IF_ERROR(take_fault(create_fault_, path, "open"));
  }
  auto file = base_.open(path, mode);
  if (!file.ok()) return file.status();
  std::shared_ptr<FileState> state;
  {
    std::lock_guard lock(mu_);
    auto& slot = files_[path];
    if (!existed || slot == nullptr) {
      slot = std::make_shared<FileState>();
      if (!existed) {
        slot->created = true;
        slot->loaded = true;  // its synced content is no file at all, represented as empty
      }
    }
    state = slot;
  }
  return std::unique_ptr<File>(new FaultFile(*this, std::move(*file), std::move(state)));
}

Status FaultInjectionFileSystem::remove(const std::string& path) {
  STREAMD_RETURN_IF_ERROR(base_.remove(path));
  std::lock_guard lock(mu_);
  files_.erase(path);
  return Status();
}

Status FaultInjectionFileSystem::rename(const std::string& from, const std::string& to) {
  STREAMD_RETURN_IF_ERROR(base_.rename(from, to));
  std::lock_guard lock(mu_);
  files_.erase(to);
  auto it = files_.find(from);
  if (it != files_.end()) {
    files_[to] = std::move(it->second);
    files_.erase(it);
  }
  // A renamed directory takes the files tracked inside it along.
  const std::string from_dir = from + "/";
  for (auto child = files_.lower_bound(from_dir);
       child != files_.end() && child->first.compare(0, from_dir.size(), from_dir) == 0;) {
    files_[to + "/" + child->first.substr(from_dir.size())] = std::move(child->second);
    child = files_.erase(child);
  }
  return Status();
}

Status FaultInjectionFileSystem::sync_dir(const std::string& dir) {
  STREAMD_RETURN_IF_ERROR(base_.sync_dir(dir));
  std::lock_guard lock(mu_);
  ++dir_syncs_;
  return Status();
}

Status FaultInjectionFileSystem::create_dir(const std::string& path) {
  return base_.create_dir(path);
}

Status FaultInjectionFileSystem::remove_dir(const std::string& path) {
  return base_.remove_dir(path);
}

Result<std::vector<std::string>> FaultInjectionFileSystem::list_dir(const std::string& dir) {
  return base_.list_dir(dir);
}

bool FaultInjectionFileSystem::exists(const std::string& path) {
  return base_.exists(path);
}

Result<std::unique_ptr<FileLock>> FaultInjectionFileSystem::lock(const std::string& path) {
  return base_.lock(path);
}

Status FaultInjectionFileSystem::drop_unsynced_data() {
  std::map<std::string, std::shared_ptr<FileState>> files;
  {
    std::lock_guard lock(mu_);
    files = files_;
  }
  for (const auto& [path, state] : files) {
    std::lock_guard lock(state->mu);
    if (state->created && !state->ever_synced) {
      if (base_.exists(path)) STREAMD_RETURN_IF_ERROR(base_.remove(path));
      std::lock_guard fs_lock(mu_);
      auto it = files_.find(path);
      if (it != files_.end() && it->second == state) files_.erase(it);
      continue;
    }
    if (!state->loaded) continue;  // never changed through us
    auto file = base_.open(path, OpenMode::kReadWrite);
    if (!file.ok()) return file.status();
    const uint64_t size = state->durable.size();
    STREAMD_RETURN_IF_ERROR((*file)->truncate(size));
    for (const auto& [begin, end] : state->dirty.ranges()) {
      if (begin >= size) break;
      const uint64_t stop = std::min(end, size);
      STREAMD_RETURN_IF_ERROR((*file)->write_at(
          FilePosition(begin), std::string_view(state->durable).substr(begin, stop - begin)));
    }
    state->dirty.clear();
  }
  return Status();
}

void FaultInjectionFileSystem::fail_next_write(int err, std::string path_filter) {
  std::lock_guard lock(mu_);
  write_fault_ = Fault{true, err, std::move(path_filter)};
}

void FaultInjectionFileSystem::fail_next_sync(int err, std::string path_filter) {
  std::lock_guard lock(mu_);
  sync_fault_ = Fault{true, err, std::move(path_filter)};
}

void FaultInjectionFileSystem::fail_next_create(int err, std::string path_filter) {
  std::lock_guard lock(mu_);
  create_fault_ = Fault{true, err, std::move(path_filter)};
}

Status FaultInjectionFileSystem::take_fault(Fault& fault, const std::string& path, std::string_view op) {
  std::lock_guard lock(mu_);
  if (!fault.armed || path.find(fault.filter) == std::string::npos) return Status();
  fault.armed = false;
  return Status::io_error(op, path, fault.err);
}

void FaultInjectionFileSystem::fail_reads(int err, std::string path_filter) {
  std::lock_guard lock(mu_);
  read_fault_ = Fault{true, err, std::move(path_filter)};
}

void FaultInjectionFileSystem::stop_failing_reads() {
  std::lock_guard lock(mu_);
  read_fault_ = Fault{};
}

uint64_t FaultInjectionFileSystem::read_faults() const {
  std::lock_guard lock(mu_);
  return read_faults_;
}

Status FaultInjectionFileSystem::read_fault(const std::string& path) {
  std::lock_guard lock(mu_);
  if (!read_fault_.armed || path.find(read_fault_.filter) == std::string::npos) return Status();
  ++read_faults_;
  return Status::io_error("pread", path, read_fault_.err);
}

void FaultInjectionFileSystem::count_write(const std::string& path) {
  std::lock_guard lock(mu_);
  ++counts_[path].writes;
}

void FaultInjectionFileSystem::count_sync(const std::string& path) {
  std::lock_guard lock(mu_);
  ++counts_[path].syncs;
}

uint64_t FaultInjectionFileSystem::writes(std::string_view path_filter) const {
  std::lock_guard lock(mu_);
  uint64_t n = 0;
  for (const auto& [path, c] : counts_) {
    if (path.find(path_filter) != std::string::npos) n += c.writes;
  }
  return n;
}

uint64_t FaultInjectionFileSystem::syncs(std::string_view path_filter) const {
  std::lock_guard lock(mu_);
  uint64_t n = 0;
  for (const auto& [path, c] : counts_) {
    if (path.find(path_filter) != std::string::npos) n += c.syncs;
  }
  return n;
}

uint64_t FaultInjectionFileSystem::dir_syncs() const {
  std::lock_guard lock(mu_);
  return dir_syncs_;
}

void FaultInjectionFileSystem::reset_counters() {
  std::lock_guard lock(mu_);
  counts_.clear();
  dir_syncs_ = 0;
}

}  // namespace streamd::testing
