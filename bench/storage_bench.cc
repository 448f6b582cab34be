// storage_bench: how fast the storage layer is on this machine's disk, next to what the disk itself
// does, so the ratios say how much of the disk PartitionLog gets. Self-timed, every loop bounded by a
// count and a time; the whole run stays well under a minute.
//
//   storage_bench [--dir PARENT] [--json]
//
// Works in a fresh directory created under PARENT (default: the current directory, so the figures are
// for the filesystem the caller is on), removed afterwards. MB is 10^6 bytes of record payload.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/storage/batch_builder.h"
#include "server/storage/clock.h"
#include "server/storage/executor.h"
#include "server/storage/file_system.h"
#include "server/storage/group_offsets.h"
#include "server/storage/partition_log.h"
#include "server/storage/record_batch.h"

namespace streamd {
namespace {

using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

constexpr double kMB = 1e6;
// The window of bench/run-all's W1 producer (streamctl bench produce --in-flight 32): with a window
// of 8, groups alternated around 4 batches and the disk idled between their syncs.
constexpr int kInFlight = 32;
constexpr int kGroupAppenders = 16;
constexpr uint64_t kOpenTargetBytes = 1ull << 30;
constexpr uint64_t kOpenSegmentBytes = 64ull << 20;

double since(Clock::time_point start) {
  return Seconds(Clock::now() - start).count();
}

struct Figures {
  double fdatasync_per_s = 0;
  double synced_mb_s = 0;
  double append_1000x100_mb_s = 0;
  double append_1x100_per_s = 0;
  double group_commit_16x1_per_s = 0;
  double read_mb_s = 0;
  double open_1gib_ms = 0;
  double commits_per_s = 0;
  uint64_t open_bytes = 0;
  size_t open_segments = 0;
};

// A fresh directory under `parent`, removed with its contents on destruction.
class BenchDir {
 public:
  explicit BenchDir(const std::string& parent) {
    std::string pattern = parent + "/storage-bench-XXXXXX";
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~BenchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  BenchDir(const BenchDir&) = delete;
  BenchDir& operator=(const BenchDir&) = delete;
  bool ok() const { return !path_.empty(); }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// --- The disk alone -----------------------------------------------------------------------------

// 4 KiB appended to a growing file, then fdatasync: each sync also commits the new size.
Result<double> raw_fdatasync_per_s(const std::string& path) {
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::io_error("open", path, errno);
  std::string block(4096, 'x');
  auto start = Clock::now();
  int n = 0;
  for (; n < 20000 && since(start) < 2.0; ++n) {
    if (::pwrite(fd, block.data(), block.size(), static_cast<off_t>(n) * 4096) != 4096 ||
        ::fdatasync(fd) != 0) {
      int err = errno;
      ::close(fd);
      return Status::io_error("pwrite/fdatasync", path, err);
    }
  }
  double elapsed = since(start);
  ::close(fd);
  return n / elapsed;
}

// Sequential 1 MiB writes over space already zero-filled and synced, fdatasync after each: the best a
// log writer that preallocates can hope for.
Result<double> raw_synced_mb_s(const std::string& path) {
  constexpr size_t kChunk = 1 << 20;
  constexpr int kChunks = 256;
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::io_error("open", path, errno);
  auto fail = [&](const char* op) {
    int err = errno;
    ::close(fd);
    return Status::io_error(op, path, err);
  };
  std::string zeros(kChunk, '\0');
  for (int i = 0; i < kChunks; ++i) {
    if (::pwrite(fd, zeros.data(), kChunk, static_cast<off_t>(i) * kChunk) != static_cast<ssize_t>(kChunk)) {
      return fail("pwrite");
    }
  }
  if (::fsync(fd) != 0) return fail("fsync");
  std::string data(kChunk, 'd');
  auto start = Clock::now();
  int n = 0;
  for (; n < kChunks && since(start) < 3.0; ++n) {
    if (::pwrite(fd, data.data(), kChunk, static_cast<off_t>(n) * kChunk) != static_cast<ssize_t>(kChunk)) {
      return fail("pwrite");
    }
    if (::fdatasync(fd) != 0) return fail("fdatasync");
  }
  double elapsed = since(start);
  ::close(fd);
  return n * static_cast<double>(kChunk) / kMB / elapsed;
}

// --- Through PartitionLog -----------------------------------------------------------------------

std::string make_batch(int records, size_t payload_bytes) {
  BatchBuilder b;
  std::string payload(payload_bytes, 'p');
  for (int i = 0; i < records; ++i) b.add({}, payload);
  return std::move(b).finish();
}

struct Appended {
  uint64_t batches = 0;
  uint64_t payload_bytes = 0;
  double seconds = 0;
};

// One producer keeping up to kInFlight batches queued, as a client pipelining appends on one
// connection does; stops after max_bytes of payload or max_seconds. Each batch is a copy of one built
// beforehand, as a broker receives batches its clients built: building 1000 records one by one costs
// about 0.1 ms of CPU a batch, which on a two-core machine the producer took from the log's threads.
Result<Appended> pipelined_append(PartitionLog& log, int records, size_t payload_bytes, uint64_t max_bytes,
                                  double max_seconds) {
  const std::string built = make_batch(records, payload_bytes);
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  Status error;
  Appended out;
  auto start = Clock::now();
  while (out.payload_bytes < max_bytes && since(start) < max_seconds) {
    std::string batch = built;
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return in_flight < kInFlight; });
      if (!error.ok()) break;
      ++in_flight;
    }
    log.append(std::move(batch), [&](Result<AppendRange> r) {
      std::lock_guard lock(mu);
      --in_flight;
      if (!r.ok() && error.ok()) error = r.status();
      cv.notify_all();
    });
    ++out.batches;
    out.payload_bytes += static_cast<uint64_t>(records) * payload_bytes;
  }
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return in_flight == 0; });
  out.seconds = since(start);
  if (!error.ok()) return error;
  return out;
}

// One producer, one record per batch, each acknowledged before the next is sent.
Result<double> single_appends_per_s(PartitionLog& log) {
  auto start = Clock::now();
  int n = 0;
  for (; n < 20000 && since(start) < 2.0; ++n) {
    auto r = append_and_wait(log, make_batch(1, 100));
    if (!r.ok()) return r.status();
  }
  return n / since(start);
}

// kGroupAppenders threads each run `op` (worker index, iteration) up to `per_worker` times, waiting for
// each before the next, for about two seconds: completed operations per second, or the first error.
Result<double> closed_loop_per_s(uint64_t per_worker, const std::function<Status(int, uint64_t)>& op) {
  std::atomic<uint64_t> acked{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  Status error;
  auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int w = 0; w < kGroupAppenders; ++w) {
    threads.emplace_back([&, w] {
      for (uint64_t i = 0; i < per_worker && !stop.load(); ++i) {
        Status st = op(w, i);
        if (!st.ok()) {
          std::lock_guard lock(mu);
          if (error.ok()) error = st;
          stop = true;
          return;
        }
        acked.fetch_add(1);
        if (since(start) >= 2.0) stop = true;
      }
    });
  }
  for (auto& t : threads) t.join();
  double elapsed = since(start);
  if (!error.ok()) return error;
  return acked.load() / elapsed;
}

// kGroupAppenders producers on one partition, each waiting for its ack before its next append: the
// syncs they share are what group commit buys.
Result<double> group_commit_per_s(PartitionLog& log) {
  return closed_loop_per_s(5000, [&](int, uint64_t) { return append_and_wait(log, make_batch(1, 100)).status(); });
}

// kGroupAppenders consumer groups committing to one stream's offsets log at once, each waiting for its
// commit to be durable before the next: the syncs they share are what the log's group commit buys.
Result<double> commits_per_s(const std::string& dir, Executor& pool) {
  std::filesystem::create_directories(dir);
  auto offsets = GroupOffsets::open(posix_file_system(), dir, pool);
  if (!offsets.ok()) return offsets.status();
  std::vector<std::string> groups;
  for (int g = 0; g < kGroupAppenders; ++g) groups.push_back("group-" + std::to_string(g));
  return closed_loop_per_s(100000, [&](int worker, uint64_t i) {
    std::promise<Status> done;
    (*offsets)->commit(groups[static_cast<size_t>(worker)], PartitionId(worker % 4), Offset(i + 1),
                       [&](Status st) { done.set_value(std::move(st)); });
    return done.get_future().get();
  });
}

// Reads the partition from its first offset to its end, 1 MiB per read.
Result<double> read_all_mb_s(const PartitionLog& log) {
  Bounds b = log.bounds();
  Offset from = b.first;
  uint64_t bytes = 0;
  auto start = Clock::now();
  while (from < b.next && since(start) < 5.0) {
    auto r = log.read(from, 100000, 1 << 20);
    if (!r.ok()) return r.status();
    if (r->entries.empty()) break;
    for (const auto& e : r->entries) bytes += e.key.size() + e.payload.size();
    from = r->next_from;
  }
  return bytes / kMB / since(start);
}

Result<std::unique_ptr<PartitionLog>> open_log(const std::string& dir, Executor& pool,
                                               PartitionOptions options = {}) {
  return PartitionLog::open(posix_file_system(), dir, options, pool, SystemClock::instance());
}

// Fills a partition with about 1 GiB in 64 MiB segments, closes it cleanly, and times the reopen.
Status measure_open(const std::string& dir, Executor& pool, Figures& f) {
  PartitionOptions options;
  options.segment_bytes = kOpenSegmentBytes;
  uint64_t target = kOpenTargetBytes;
  struct statvfs st {};
  if (::statvfs(dir.substr(0, dir.rfind('/')).c_str(), &st) == 0) {
    uint64_t free_bytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
    if (free_bytes < 2 * target) target = free_bytes / 4;  // leave the disk room; report what was kept
  }
  {
    auto log = open_log(dir, pool, options);
    if (!log.ok()) return log.status();
    auto filled = pipelined_append(**log, 1000, 1000, target, 25.0);
    if (!filled.ok()) return filled.status();
    (*log)->close();
  }
  auto start = Clock::now();
  auto log = open_log(dir, pool, options);
  if (!log.ok()) return log.status();
  f.open_1gib_ms = since(start) * 1000;
  f.open_bytes = (*log)->size_bytes();
  f.open_segments = (*log)->segments().size();
  return Status();
}

Status run(const std::string& parent, Figures& f) {
  BenchDir dir(parent);
  if (!dir.ok()) return Status::io_error("mkdtemp", parent, errno);
  ThreadPool pool(2);

  auto fsyncs = raw_fdatasync_per_s(dir.sub("raw-append"));
  if (!fsyncs.ok()) return fsyncs.status();
  f.fdatasync_per_s = *fsyncs;
  auto synced = raw_synced_mb_s(dir.sub("raw-sequential"));
  if (!synced.ok()) return synced.status();
  f.synced_mb_s = *synced;
  std::filesystem::remove(dir.sub("raw-sequential"));

  {
    auto log = open_log(dir.sub("pipelined"), pool);
    if (!log.ok()) return log.status();
    auto appended = pipelined_append(**log, 1000, 100, 400 * 1000 * 1000ull, 4.0);
    if (!appended.ok()) return appended.status();
    f.append_1000x100_mb_s = appended->payload_bytes / kMB / appended->seconds;
    auto read = read_all_mb_s(**log);
    if (!read.ok()) return read.status();
    f.read_mb_s = *read;
  }
  {
    auto log = open_log(dir.sub("single"), pool);
    if (!log.ok()) return log.status();
    auto single = single_appends_per_s(**log);
    if (!single.ok()) return single.status();
    f.append_1x100_per_s = *single;
  }
  {
    auto log = open_log(dir.sub("group"), pool);
    if (!log.ok()) return log.status();
    auto group = group_commit_per_s(**log);
    if (!group.ok()) return group.status();
    f.group_commit_16x1_per_s = *group;
  }
  {
    auto commits = commits_per_s(dir.sub("groups"), pool);
    if (!commits.ok()) return commits.status();
    f.commits_per_s = *commits;
  }
  return measure_open(dir.sub("open"), pool, f);
}

double ratio(double a, double b) {
  return b > 0 ? a / b : 0;
}

void print_json(const Figures& f, double total_s) {
  std::printf(
      "{\"fdatasync_per_s\":%.1f,\"synced_mb_s\":%.1f,\"append_1000x100_mb_s\":%.1f,"
      "\"append_1x100_per_s\":%.1f,\"group_commit_16x1_per_s\":%.1f,\"read_mb_s\":%.1f,"
      "\"open_1gib_ms\":%.1f,\"open_bytes\":%llu,\"open_segments\":%zu,"
      "\"append_1000x100_over_synced\":%.3f,\"group_commit_16x1_over_append_1x100\":%.2f,"
      "\"commits_per_s\":%.1f,\"total_s\":%.1f,"
      "\"notes\":{\"mb\":\"10^6 bytes of record payload\","
      "\"append_1000x100\":\"one appender keeping up to %d batches of 1000 x 100 B records in flight, as a "
      "pipelining producer would, each a copy of one batch built beforehand\","
      "\"append_1x100\":\"one appender, 1-record batches, each acknowledged before the next\","
      "\"group_commit_16x1\":\"%d appenders on one partition, 1-record batches, each waiting for its ack\","
      "\"read\":\"sequential PartitionLog::read of the append_1000x100 data, from the page cache\","
      "\"open\":\"PartitionLog::open after a clean close of open_bytes in open_segments segments\","
      "\"commits\":\"%d consumer groups committing to one stream, each waiting for its commit\"}}\n",
      f.fdatasync_per_s, f.synced_mb_s, f.append_1000x100_mb_s, f.append_1x100_per_s,
      f.group_commit_16x1_per_s, f.read_mb_s, f.open_1gib_ms, static_cast<unsigned long long>(f.open_bytes),
      f.open_segments, ratio(f.append_1000x100_mb_s, f.synced_mb_s),
      ratio(f.group_commit_16x1_per_s, f.append_1x100_per_s), f.commits_per_s, total_s, kInFlight,
      kGroupAppenders, kGroupAppenders);
}

void print_table(const Figures& f, double total_s) {
  std::printf("%-28s %12s  %s\n", "figure", "value", "what");
  std::printf("%-28s %12.0f  %s\n", "fdatasync_per_s", f.fdatasync_per_s,
              "raw: 4 KiB append + fdatasync, growing file");
  std::printf("%-28s %12.1f  %s\n", "synced_mb_s", f.synced_mb_s,
              "raw: 1 MiB write + fdatasync, zero-filled file");
  std::printf("%-28s %12.1f  one appender, batches of 1000 x 100 B, up to %d in flight (pipelined)\n",
              "append_1000x100_mb_s", f.append_1000x100_mb_s, kInFlight);
  std::printf("%-28s %12.0f  %s\n", "append_1x100_per_s", f.append_1x100_per_s,
              "one appender, 1-record batches, one at a time");
  std::printf("%-28s %12.0f  %d appenders, 1-record batches, each awaiting its ack\n",
              "group_commit_16x1_per_s", f.group_commit_16x1_per_s, kGroupAppenders);
  std::printf("%-28s %12.1f  %s\n", "read_mb_s", f.read_mb_s, "sequential PartitionLog::read, page cache");
  std::printf("%-28s %12.1f  open after clean close: %.2f GiB in %zu segments\n", "open_1gib_ms",
              f.open_1gib_ms, static_cast<double>(f.open_bytes) / (1ull << 30), f.open_segments);
  std::printf("%-28s %12.0f  %d consumer groups committing, each awaiting its commit\n", "commits_per_s",
              f.commits_per_s, kGroupAppenders);
  std::printf("%-28s %12.3f\n", "append_1000x100 / synced", ratio(f.append_1000x100_mb_s, f.synced_mb_s));
  std::printf("%-28s %12.2f\n", "group_commit_16x1 / 1x100",
              ratio(f.group_commit_16x1_per_s, f.append_1x100_per_s));
  std::printf("(MB = 10^6 bytes of record payload; run took %.1f s)\n", total_s);
}

}  // namespace
}  // namespace streamd

int main(int argc, char** argv) {
  std::string parent = ".";
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--json") {
      json = true;
    } else if (arg == "--dir" && i + 1 < argc) {
      parent = argv[++i];
    } else {
      std::fprintf(stderr, "usage: storage_bench [--dir PARENT] [--json]\n");
      return arg == "--help" || arg == "-h" ? 0 : 2;
    }
  }
  auto start = std::chrono::steady_clock::now();
  streamd::Figures figures;
  streamd::Status s = streamd::run(parent, figures);
  if (!s.ok()) {
    std::fprintf(stderr, "storage_bench: %s\n", s.to_string().c_str());
    return 1;
  }
  double total = streamd::since(start);
  if (json) {
    streamd::print_json(figures, total);
  } else {
    streamd::print_table(figures, total);
  }
  return 0;
}
