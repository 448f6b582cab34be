// SearchJob and ScanJobs: a search over a stream's keys, payloads and headers that never holds a
// thread for long and never runs without a budget (docs/HTTP.md §Search).
//
// A job scans on the API's worker pool in slices of about kSliceBudget each, then posts its next
// slice behind whatever else waits there, so reads and other scans interleave with it; the network
// loop never runs any of it. Each slice reads a bounded chunk of one partition at a time, round
// robin, newest-first (reading chunks backwards from the end) or oldest-first. It stops at the end,
// at max_records scanned, at max_matches found, at max_time, or when cancelled, and says which, with
// the cursor a later search resumes from. Matching is a plain substring test (optionally ASCII
// case-insensitive): no regular expression, no code from the client, nothing that backtracks.
//
// Threading: a job's slices run one at a time on workers; progress() may be read from any thread
// (a mutex guards what it reports). ScanJobs is thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/broker/broker.h"
#include "server/http_api/record_pages.h"
#include "server/storage/executor.h"

namespace streamd::http_api {

struct SearchSpec {
  std::string stream;
  std::string query;
  bool in_key = true;
  bool in_payload = true;
  bool in_headers = true;
  bool ignore_case = false;
  PageOrder order = PageOrder::kNewest;
  Cursor start;  // per partition: where oldest-first starts, or where newest-first ends (exclusive)
  uint64_t max_records = 10'000'000;
  uint32_t max_matches = 100;
  std::chrono::milliseconds max_time{60'000};
};

struct FoundRecord {
  PartitionId partition;
  Offset offset;
  Timestamp appended_at;
  Record record;
  std::optional<CreateTime> create_time;  // a producer's timestamp, when the record carries one
};

struct SearchProgress {
  uint64_t scanned = 0;
  uint64_t total = 0;  // records in the ranges to scan when it started
  std::vector<FoundRecord> matches;
  bool done = false;
  // Why it stopped: "end", "max_records", "max_matches", "max_time", "cancelled"; empty while running.
  std::string stopped_by;
  Cursor resume;  // where a search that goes on starts
  int64_t elapsed_ms = 0;
  int64_t longest_slice_us = 0;
};

class SearchJob : public std::enable_shared_from_this<SearchJob> {
 public:
  // A slice stops once it has run this long, after the chunk in progress; chunks are kept small
  // enough (records and bytes) that a slice stays well under 5 ms on a busy machine.
  static constexpr std::chrono::microseconds kSliceBudget{2000};
  static constexpr uint64_t kChunkRecords = 512;
  static constexpr uint64_t kChunkBytes = 1 << 20;

  SearchJob(const Broker& broker, Executor& workers, SearchSpec spec, Cursor first, uint64_t total);

  void start() { post(); }
  void cancel();
  SearchProgress progress() const;
  bool finished() const;
  std::chrono::steady_clock::time_point finished_at() const;

  // Whether `r` matches `spec`; exposed for tests.
  static bool matches(const SearchSpec& spec, std::string_view key, std::string_view payload,
                      const std::vector<HeaderView>& headers);

 private:
  void post();
  void slice();
  // Scans one chunk of partition `p`; false when the partition is exhausted.
  bool scan_chunk(int32_t p, uint64_t& remaining_budget);
  void stop(std::string why);

  const Broker& broker_;
  Executor& workers_;
  const SearchSpec spec_;
  const Cursor first_;  // each partition's first offset when the job began (newest-first stops there)
  const std::chrono::steady_clock::time_point began_ = std::chrono::steady_clock::now();

  // The scan's own state: touched only by the slice running (one at a time).
  Cursor position_;
  Cursor chunk_;               // per partition: records per chunk
  std::vector<int32_t> live_;  // partitions not exhausted, in round-robin order
  size_t turn_ = 0;

  mutable std::mutex mu_;
  SearchProgress progress_;
  bool cancelled_ = false;
  std::chrono::steady_clock::time_point finished_at_{};
};

class ScanJobs {
 public:
  static constexpr size_t kMaxRunning = 4;               // broker-wide
  static constexpr size_t kMaxPerPrincipal = 2;          // running, per principal
  static constexpr std::chrono::minutes kKeepFinished{5};

  // The job's id, or UNAVAILABLE when too many run.
  Result<std::string> add(const std::string& principal, std::shared_ptr<SearchJob> job);
  // The job, when it exists and `principal` started it.
  std::shared_ptr<SearchJob> find(const std::string& id, const std::string& principal);
  bool cancel(const std::string& id, const std::string& principal);
  void stop();

 private:
  void reap();
  struct Entry {
    std::string principal;
    std::shared_ptr<SearchJob> job;
  };
  std::mutex mu_;
  std::map<std::string, Entry> jobs_;
};

}  // namespace streamd::http_api
