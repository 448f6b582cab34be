#include "server/file_system_metrics.h"

#include <chrono>

#include "server/storage/record_batch.h"

namespace streamd {
namespace {

struct SyncMetrics {
  explicit SyncMetrics(MetricsRegistry& registry)
      : syncs(registry.counter("streamd_log_syncs_total", "fdatasync calls on partition logs and the journal")),
        failures(registry.counter("streamd_log_sync_failures_total",
                                  "fdatasync calls on partition logs and the journal that failed")),
        latency(registry.histogram("streamd_log_sync_duration_seconds",
                                   "Latency of fdatasync on partition logs and the journal", latency_buckets())),
        batches(registry.histogram("streamd_group_commit_batches",
                                   "Record batches made durable by one sync of a partition log or the journal (group commit)",
                                   exponential_buckets(1024))) {}
  Counter& syncs;
  Counter& failures;
  Histogram& latency;
  Histogram& batches;
};

// Counts the whole batches at the front of `data`: the writer hands a log whole batches, back to back.
uint64_t count_batches(std::string_view data) {
  uint64_t n = 0;
  while (data.size() >= batch_format::kMinHeaderSize) {
    const BatchHeader header = peek_header(data);
    if (header.length == 0 ||
        (header.version != batch_format::kVersion1 && header.version != batch_format::kVersion2) ||
        header.total_size() > data.size())
      break;
    ++n;
    data.remove_prefix(header.total_size());
  }
  return n;
}

class MeteredLogFile final : public File {
 public:
  MeteredLogFile(std::unique_ptr<File> inner, SyncMetrics& metrics)
      : inner_(std::move(inner)), metrics_(metrics) {}

  const std::string& path() const override { return inner_->path(); }
  Status write_at(FilePosition pos, std::string_view data) override {
    Status s = inner_->write_at(pos, data);
    if (s.ok()) unsynced_batches_ += count_batches(data);
    return s;
  }
  Status write_vectored(FilePosition pos, std::span<const std::string_view> pieces) override {
    Status s = inner_->write_vectored(pos, pieces);
    if (s.ok()) {
      for (std::string_view piece : pieces) unsynced_batches_ += count_batches(piece);
    }
    return s;
  }
  void start_writeback(FilePosition pos, uint64_t length) override { inner_->start_writeback(pos, length); }
  Result<size_t> read_at(FilePosition pos, char* out, size_t n) const override {
    return inner_->read_at(pos, out, n);
  }
  Status sync() override {
    const auto start = std::chrono::steady_clock::now();
    Status s = inner_->sync();
    metrics_.syncs.inc();
    metrics_.latency.observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (!s.ok()) {
      metrics_.failures.inc();
    } else if (unsynced_batches_ > 0) {
      metrics_.batches.observe(static_cast<double>(unsynced_batches_));
    }
    unsynced_batches_ = 0;
    return s;
  }
  Status truncate(uint64_t size) override { return inner_->truncate(size); }
  Result<uint64_t> size() const override { return inner_->size(); }
  Result<std::unique_ptr<MappedRegion>> map(size_t length) override { return inner_->map(length); }

 private:
  std::unique_ptr<File> inner_;
  SyncMetrics& metrics_;
  uint64_t unsynced_batches_ = 0;
};

class MeteredFileSystem final : public FileSystem {
 public:
  MeteredFileSystem(FileSystem& inner, MetricsRegistry& registry) : inner_(inner), metrics_(registry) {}

  Result<std::unique_ptr<File>> open(const std::string& path, OpenMode mode) override {
    auto file = inner_.open(path, mode);
    if (!file.ok() || !(path.ends_with(".log") || path.ends_with(".journal"))) return file;
    return std::unique_ptr<File>(std::make_unique<MeteredLogFile>(std::move(*file), metrics_));
  }
  Status remove(const std::string& path) override { return inner_.remove(path); }
  Status rename(const std::string& from, const std::string& to) override { return inner_.rename(from, to); }
  Status sync_dir(const std::string& dir) override { return inner_.sync_dir(dir); }
  Status create_dir(const std::string& path) override { return inner_.create_dir(path); }
  Status remove_dir(const std::string& path) override { return inner_.remove_dir(path); }
  Result<std::vector<std::string>> list_dir(const std::string& dir) override { return inner_.list_dir(dir); }
  bool exists(const std::string& path) override { return inner_.exists(path); }
  Result<std::unique_ptr<FileLock>> lock(const std::string& path) override { return inner_.lock(path); }

 private:
  FileSystem& inner_;
  SyncMetrics metrics_;
};

}  // namespace

std::unique_ptr<FileSystem> metered_file_system(FileSystem& inner, MetricsRegistry& registry) {
  return std::make_unique<MeteredFileSystem>(inner, registry);
}

}  // namespace streamd
