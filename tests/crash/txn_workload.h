// Transactions through power cuts (docs/TRANSACTIONS.md, docs/RELIABILITY.md §"Power loss"): a
// transactional producer beside the Workload's clients, on streams of its own, and the check of what
// every cut left.
//
// TxnWorkload drives one transactional id over one connection: each transaction pipelines 1 to 4
// batches of 1 to 5 records to random partitions of the streams kTxnStreams (2 partitions each, which
// no other client of the harness touches), then commits it, or one in five aborts it. Each record's
// payload names its transaction, its index and the transaction's size. TxnLedger keeps, across cycles,
// every transaction and what became of its end.
//
// verify_transactions(), after a restart, initialises the id again (which aborts a transaction the cut
// left open and finishes one that was decided), then reads the streams at read_committed and checks:
// every transaction whole or absent (never torn), every one answered committed there, every one
// answered aborted or never ended absent, no record twice, and nothing left open on any partition.
//
// Thread-safety: TxnLedger's methods may be called from any thread (one mutex); TxnWorkload is run and
// stopped from one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace streamd::crash {

inline const std::vector<std::string> kTxnStreams{"txn0", "txn1"};
inline constexpr int32_t kTxnPartitions = 2;

class TxnLedger {
 public:
  enum class End { kOpen, kCommitSent, kCommitted, kAbortSent, kAborted };

  uint64_t begin(uint32_t records);
  void ended(uint64_t txn, End end);
  // Every transaction's size and end, by number.
  std::map<uint64_t, std::pair<uint32_t, End>> all() const;

 private:
  mutable std::mutex mu_;
  uint64_t next_ = 1;
  std::map<uint64_t, std::pair<uint32_t, End>> txns_;
};

struct TxnCounts {
  std::atomic<uint64_t> committed{0}, aborted{0}, unanswered{0}, refused{0};
};

class TxnWorkload {
 public:
  TxnWorkload(uint16_t port, TxnLedger& ledger, const std::atomic<bool>& power_cut, uint64_t seed,
              TxnCounts& counts);
  ~TxnWorkload();
  TxnWorkload(const TxnWorkload&) = delete;
  TxnWorkload& operator=(const TxnWorkload&) = delete;

  void stop();

 private:
  void run(uint64_t seed);

  const uint16_t port_;
  TxnLedger& ledger_;
  const std::atomic<bool>& power_cut_;
  TxnCounts& counts_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// Creates kTxnStreams unless they exist; false when the broker refused.
bool create_txn_streams(uint16_t port);

struct TxnVerifyCounts {
  uint64_t transactions_seen = 0;  // whole at read_committed
  uint64_t records = 0;
};
// Adds what it finds wrong to `failures`; settles in `ledger` what the restart decided.
TxnVerifyCounts verify_transactions(uint16_t port, TxnLedger& ledger, std::vector<std::string>& failures);

}  // namespace streamd::crash
