#include "tests/crash/txn_workload.h"

#include <charconv>
#include <random>
#include <set>
#include <tuple>

#include "tests/crash/requests.h"
#include "tests/integration/wire_client.h"

namespace streamd::crash {
namespace {

constexpr auto kTxnAnswerWait = std::chrono::seconds(30);
const std::string kTxnId = "crash-txn";

std::string payload_of(uint64_t txn, uint32_t index, uint32_t size) {
  return "T" + std::to_string(txn) + ":" + std::to_string(index) + "/" + std::to_string(size);
}

// (transaction, index, size) of a payload payload_of() made; false for anything else.
bool parse_payload(const std::string& p, uint64_t& txn, uint32_t& index, uint32_t& size) {
  if (p.empty() || p[0] != 'T') return false;
  const char* at = p.data() + 1;
  const char* end = p.data() + p.size();
  auto r = std::from_chars(at, end, txn);
  if (r.ec != std::errc() || r.ptr == end || *r.ptr != ':') return false;
  r = std::from_chars(r.ptr + 1, end, index);
  if (r.ec != std::errc() || r.ptr == end || *r.ptr != '/') return false;
  r = std::from_chars(r.ptr + 1, end, size);
  return r.ec == std::errc() && r.ptr == end;
}

struct Producer {
  int64_t id = -1;
  int32_t epoch = 0;
  std::map<std::pair<std::string, int32_t>, int32_t> sequences;
};

// The id's producer, again: ends what the id left open (aborted) or decided (finished). Retries while
// the coordinator is still finishing a transaction (CONCURRENT_TRANSACTIONS). False when it could not.
bool init(testing::WireClient& client, Producer& p) {
  v1::Request request;
  request.mutable_init_producer()->set_transactional_id(kTxnId);
  request.mutable_init_producer()->set_transaction_timeout_ms(60'000);
  for (int attempt = 0; attempt < 250; ++attempt) {
    request.set_id(0);
    v1::Response r = client.call(request, kTxnAnswerWait);
    if (r.has_init_producer()) {
      p = Producer{r.init_producer().producer_id(), r.init_producer().epoch(), {}};
      return true;
    }
    if (testing::error_name(r) != "CONCURRENT_TRANSACTIONS") return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

v1::Request append_in(const Producer& p, const std::string& stream, int32_t partition, int32_t sequence,
                      const std::vector<std::string>& payloads) {
  v1::Request request;
  auto* body = request.mutable_append();
  body->set_stream(stream);
  for (const std::string& payload : payloads) body->add_records()->set_payload(payload);
  body->set_partition(partition);
  body->set_transactional_id(kTxnId);
  body->mutable_producer()->set_producer_id(p.id);
  body->mutable_producer()->set_epoch(p.epoch);
  body->mutable_producer()->set_sequence(sequence);
  return request;
}

v1::Request end_of(const Producer& p, bool commit) {
  v1::Request request;
  auto* body = request.mutable_end_txn();
  body->mutable_producer()->set_transactional_id(kTxnId);
  body->mutable_producer()->set_producer_id(p.id);
  body->mutable_producer()->set_epoch(p.epoch);
  body->set_commit(commit);
  return request;
}

}  // namespace

uint64_t TxnLedger::begin(uint32_t records) {
  std::lock_guard lock(mu_);
  const uint64_t txn = next_++;
  txns_[txn] = {records, End::kOpen};
  return txn;
}

void TxnLedger::ended(uint64_t txn, End end) {
  std::lock_guard lock(mu_);
  txns_[txn].second = end;
}

std::map<uint64_t, std::pair<uint32_t, TxnLedger::End>> TxnLedger::all() const {
  std::lock_guard lock(mu_);
  return txns_;
}

TxnWorkload::TxnWorkload(uint16_t port, TxnLedger& ledger, const std::atomic<bool>& power_cut, uint64_t seed,
                         TxnCounts& counts)
    : port_(port), ledger_(ledger), power_cut_(power_cut), counts_(counts) {
  thread_ = std::thread([this, seed] { run(seed); });
}

TxnWorkload::~TxnWorkload() { stop(); }

void TxnWorkload::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

void TxnWorkload::run(uint64_t seed) {
  std::mt19937_64 rng(seed);
  testing::WireClient client(port_);
  Producer p;
  if (!client.connected() || !init(client, p)) return;
  while (!stopping_ && !power_cut_) {
    // The batches of one transaction, pipelined on the connection.
    std::vector<std::tuple<std::string, int32_t, std::vector<std::string>>> batches(1 + rng() % 4);
    uint32_t size = 0;
    for (auto& [stream, partition, payloads] : batches) {
      stream = kTxnStreams[rng() % kTxnStreams.size()];
      partition = static_cast<int32_t>(rng() % kTxnPartitions);
      payloads.resize(1 + rng() % 5);
      size += static_cast<uint32_t>(payloads.size());
    }
    const uint64_t txn = ledger_.begin(size);
    uint32_t index = 0;
    std::vector<uint64_t> ids;
    for (auto& [stream, partition, payloads] : batches) {
      for (std::string& payload : payloads) payload = payload_of(txn, index++, size);
      int32_t& sequence = p.sequences[{stream, partition}];
      ids.push_back(client.send(append_in(p, stream, partition, sequence, payloads)));
      sequence += static_cast<int32_t>(payloads.size());
    }
    bool refused = false;
    for (uint64_t id : ids) {
      auto r = id == 0 ? std::nullopt : client.wait_for(id, kTxnAnswerWait);
      if (!r || power_cut_) return;  // the cut: the transaction stays open, to be aborted
      if (!r->has_append()) refused = true;
    }
    if (refused) {
      // Never ended: the id's next producer aborts it.
      ++counts_.refused;
      if (!init(client, p)) return;
      ledger_.ended(txn, TxnLedger::End::kAborted);
      continue;
    }
    const bool commit = rng() % 5 != 0;
    ledger_.ended(txn, commit ? TxnLedger::End::kCommitSent : TxnLedger::End::kAbortSent);
    v1::Response r = client.call(end_of(p, commit), kTxnAnswerWait);
    if (!answered(r) || power_cut_) {
      ++counts_.unanswered;
      return;
    }
    if (r.has_end_txn()) {
      ledger_.ended(txn, commit ? TxnLedger::End::kCommitted : TxnLedger::End::kAborted);
      ++(commit ? counts_.committed : counts_.aborted);
      continue;
    }
    // A refused end may have been decided already: it stays "sent", whole or absent, and the next
    // producer finishes or aborts it.
    ++counts_.refused;
    if (!init(client, p)) return;
  }
}

bool create_txn_streams(uint16_t port) {
  testing::WireClient client(port);
  for (const std::string& name : kTxnStreams) {
    v1::Response r = client.call(testing::create_request(name, kTxnPartitions, /*if_not_exists=*/true), kTxnAnswerWait);
    if (!r.has_create_stream()) return false;
  }
  return true;
}

TxnVerifyCounts verify_transactions(uint16_t port, TxnLedger& ledger, std::vector<std::string>& failures) {
  TxnVerifyCounts counts;
  testing::WireClient client(port);
  Producer p;
  if (!init(client, p)) {
    failures.push_back("transactions: the transactional id's producer could not be initialised after the restart");
    return counts;
  }
  std::map<uint64_t, std::set<uint32_t>> seen;
  for (const std::string& stream : kTxnStreams) {
    for (int32_t partition = 0; partition < kTxnPartitions; ++partition) {
      v1::Response b = client.call(bounds_of(stream, partition), kTxnAnswerWait);
      if (!b.has_bounds()) {
        failures.push_back("transactions: bounds of " + stream + " failed: " + testing::error_name(b));
        continue;
      }
      if (b.bounds().last_stable() != b.bounds().next()) {
        failures.push_back("transactions: " + stream + "/" + std::to_string(partition) + " has a transaction open (" +
                           "last stable " + std::to_string(b.bounds().last_stable()) + ", next " +
                           std::to_string(b.bounds().next()) + ") after its id was initialised again");
      }
      uint64_t from = b.bounds().first();
      while (from < b.bounds().last_stable()) {
        v1::Response r = client.call(read_of(stream, partition, from, 1000, 0), kTxnAnswerWait);
        if (!r.has_read() || r.read().partitions(0).has_error()) {
          failures.push_back("transactions: reading " + stream + " failed");
          break;
        }
        const auto& read = r.read().partitions(0);
        if (read.entries_size() == 0) break;
        for (const auto& e : read.entries()) {
          uint64_t txn = 0;
          uint32_t index = 0;
          uint32_t size = 0;
          if (!parse_payload(e.record().payload(), txn, index, size)) {
            failures.push_back("transactions: a record the workload never sent: " + e.record().payload());
            continue;
          }
          if (!seen[txn].insert(index).second) {
            failures.push_back("transactions: " + e.record().payload() + " read twice");
          }
          ++counts.records;
        }
        from = read.next_from();
      }
    }
  }
  using End = TxnLedger::End;
  const auto all = ledger.all();
  for (const auto& [txn, sent] : seen) {
    if (all.count(txn) == 0) failures.push_back("transactions: records of transaction " + std::to_string(txn) + " never begun");
  }
  for (const auto& [txn, entry] : all) {
    const auto [size, end] = entry;
    const size_t found = seen.count(txn) ? seen[txn].size() : 0;
    const std::string name = "transaction " + std::to_string(txn) + " of " + std::to_string(size) + " records";
    if (found != 0 && found != size) failures.push_back("transactions: " + name + " is torn: " + std::to_string(found) + " read");
    if (end == End::kCommitted && found != size) failures.push_back("transactions: " + name + " was answered committed but is not whole");
    if ((end == End::kAborted || end == End::kAbortSent || end == End::kOpen) && found != 0) {
      failures.push_back("transactions: " + name + " was aborted or never ended, yet read committed");
    }
    if (found == size) ++counts.transactions_seen;
    // What the restart settled stays settled: a later cut must keep it so.
    if (end == End::kCommitSent) ledger.ended(txn, found == size ? End::kCommitted : End::kAborted);
    if (end == End::kOpen || end == End::kAbortSent) ledger.ended(txn, End::kAborted);
  }
  return counts;
}

}  // namespace streamd::crash
