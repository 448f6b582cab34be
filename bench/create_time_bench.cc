// create_time_bench: what a Kafka ListOffsets by create time costs on a big partition
// (docs/FORMAT.md §"Create-time lookups"): a scan bounded by each batch's max_timestamp, with the
// largest timestamp of each closed segment remembered after a first walk.
//
//   create_time_bench [--dir PARENT] [--records N]
//
// Fills a partition (64 MiB segments) with N records of 100 bytes in batches of 100, create times
// increasing by 1 ms a record but each batch's jittered back by up to 50 ms, as producers' clocks and
// batching give them; then times lookups, each repeated, from the page cache. Works in a fresh directory
// under PARENT (default: the current directory), removed afterwards.
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/storage/batch_builder.h"
#include "server/storage/clock.h"
#include "server/storage/create_time_lookup.h"
#include "server/storage/executor.h"
#include "server/storage/file_system.h"
#include "server/storage/partition_log.h"
#include "server/storage/record_batch.h"

namespace streamd {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kBatchRecords = 100;
constexpr int64_t kT0 = 1'500'000'000'000;  // milliseconds: 2017

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string batch_at(uint64_t first_record, const std::string& payload) {
  BatchOptions options;
  options.create_times = true;
  BatchBuilder b(options);
  // Deterministic jitter: each batch starts up to 50 ms before its first record's slot.
  const int64_t jitter = static_cast<int64_t>((first_record / kBatchRecords * 7919) % 51);
  RecordView r;
  r.key_null = true;
  r.payload = payload;
  for (int i = 0; i < kBatchRecords; ++i) {
    r.create_time = CreateTime(kT0 + static_cast<int64_t>(first_record) + i - jitter);
    b.add(r);
  }
  return std::move(b).finish();
}

Status fill(PartitionLog& log, uint64_t records) {
  const std::string payload(100, 'p');
  std::future<Result<AppendRange>> last;
  for (uint64_t n = 0; n < records; n += kBatchRecords) {
    auto done = std::make_shared<std::promise<Result<AppendRange>>>();
    last = done->get_future();
    log.append(batch_at(n, payload), [done](Result<AppendRange> r) { done->set_value(std::move(r)); });
    // Appends complete in order: waiting on every 64th keeps at most 64 batches queued.
    if ((n / kBatchRecords) % 64 == 63) {
      auto r = last.get();
      if (!r.ok()) return r.status();
    }
  }
  if (last.valid()) {
    auto r = last.get();
    if (!r.ok()) return r.status();
  }
  return Status();
}

// Times `runs` lookups of `t` and prints the first's and the median of the rest.
Status time_lookup(const char* what, CreateTimeLookup& lookup, const SegmentedLog& log, int64_t t, int runs) {
  double first = 0;
  std::vector<double> rest;
  std::optional<TimedOffset> found;
  for (int i = 0; i < runs; ++i) {
    auto start = Clock::now();
    auto r = lookup.find(log, CreateTime(t));
    const double ms = ms_since(start);
    if (!r.ok()) return r.status();
    found = *r;
    if (i == 0) {
      first = ms;
    } else {
      rest.push_back(ms);
    }
  }
  std::sort(rest.begin(), rest.end());
  const double median = rest.empty() ? first : rest[rest.size() / 2];
  std::printf("%-34s first %9.2f ms   then %9.2f ms   -> offset %lld\n", what, first, median,
              found ? static_cast<long long>(found->offset.value) : -1LL);
  return Status();
}

Status run(const std::string& dir, uint64_t records) {
  ThreadPool pool(2);
  auto log = PartitionLog::open(posix_file_system(), dir, PartitionOptions{}, pool, SystemClock::instance());
  if (!log.ok()) return log.status();
  auto start = Clock::now();
  STREAMD_RETURN_IF_ERROR(fill(**log, records));
  std::printf("partition: %llu records, %.1f MB in %zu segments, filled in %.1f s\n",
              static_cast<unsigned long long>(records), static_cast<double>((*log)->size_bytes()) / 1e6,
              (*log)->segments().size(), ms_since(start) / 1000);
  const auto n = static_cast<int64_t>(records);
  // Each case with a fresh lookup, so that its first run walks without remembered segments.
  {
    CreateTimeLookup lookup;
    STREAMD_RETURN_IF_ERROR(time_lookup("near the start", lookup, **log, kT0 + 1000, 5));
  }
  {
    CreateTimeLookup lookup;
    STREAMD_RETURN_IF_ERROR(time_lookup("in the middle", lookup, **log, kT0 + n / 2, 5));
  }
  {
    CreateTimeLookup lookup;
    STREAMD_RETURN_IF_ERROR(time_lookup("near the end", lookup, **log, kT0 + n - 1000, 5));
  }
  {
    CreateTimeLookup lookup;
    STREAMD_RETURN_IF_ERROR(time_lookup("past every record", lookup, **log, kT0 + n + 1000, 5));
  }
  return Status();
}

}  // namespace
}  // namespace streamd

int main(int argc, char** argv) {
  std::string parent = ".";
  uint64_t records = 10'000'000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--dir" && i + 1 < argc) {
      parent = argv[++i];
    } else if (arg == "--records" && i + 1 < argc) {
      records = std::stoull(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: create_time_bench [--dir PARENT] [--records N]\n");
      return arg == "--help" || arg == "-h" ? 0 : 2;
    }
  }
  std::string pattern = parent + "/create-time-bench-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::fprintf(stderr, "create_time_bench: mkdtemp under %s: errno %d\n", parent.c_str(), errno);
    return 1;
  }
  const streamd::Status s = streamd::run(pattern, records);
  std::error_code ec;
  std::filesystem::remove_all(pattern, ec);
  if (!s.ok()) {
    std::fprintf(stderr, "create_time_bench: %s\n", s.to_string().c_str());
    return 1;
  }
  return 0;
}
