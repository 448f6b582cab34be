#include "tests/crash/workload.h"

#include <map>
#include <tuple>

#include "proto/placement.h"
#include "tests/crash/payload.h"
#include "tests/crash/requests.h"
#include "tests/integration/wire_client.h"

namespace streamd::crash {
namespace {

// Long enough to mean "the daemon is gone": a shorter wait could cut a frame in half.
constexpr auto kAnswerWait = std::chrono::seconds(30);

}  // namespace

NewStream random_stream(std::mt19937_64& rng) {
  static constexpr int64_t kSegmentBytes[] = {16 << 10, 64 << 10, 256 << 10, 1 << 20};
  return {static_cast<int32_t>(1 + rng() % 4), kSegmentBytes[rng() % 4]};
}

Workload::Workload(uint16_t port, Ledger& ledger, const std::atomic<bool>& power_cut, WorkloadOptions options,
                   WorkloadCounts& counts)
    : port_(port), ledger_(ledger), power_cut_(power_cut), options_(std::move(options)), counts_(counts) {
  for (int i = 0; i < options_.producers; ++i) threads_.emplace_back([this, i] { produce(i); });
  for (int i = 0; i < options_.consumers; ++i) threads_.emplace_back([this, i] { consume(i); });
  if (options_.admin) threads_.emplace_back([this] { administer(); });
}

Workload::~Workload() { stop(); }

void Workload::stop() {
  stopping_ = true;
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void Workload::produce(int index) {
  std::mt19937_64 rng(options_.seed * 7919 + static_cast<uint64_t>(index));
  testing::WireClient client(port_);
  if (!client.connected()) return;
  const size_t window = 1 + rng() % static_cast<size_t>(options_.window);
  std::map<uint64_t, uint64_t> in_flight;  // request id → batch
  // An idempotent producer: an identity, and per stream incarnation and partition the next sequence.
  // After a refusal it takes a new identity, whose sequences start anew, rather than track the gap.
  int64_t producer_id = -1;
  std::map<std::tuple<std::string, uint64_t, int32_t>, int32_t> sequences;
  auto take_identity = [&] {
    v1::Response r = client.call(init_producer(), kAnswerWait);
    producer_id = r.has_init_producer() ? r.init_producer().producer_id() : -1;
    sequences.clear();
    return producer_id >= 0;
  };
  if (!take_identity()) return;
  bool broken = false;
  while (!broken && !stopping_) {
    while (in_flight.size() < window && !stopping_) {
      const auto targets = ledger_.live();
      if (targets.empty()) break;
      const Target& target = targets[rng() % targets.size()];
      const auto count = static_cast<uint32_t>(rng() % 4 == 0 ? 1 + rng() % 20 : 1 + rng() % 3);
      Batch batch = ledger_.begin_batch(target, count);
      // The batch's key (payload.h) decides its partition; the stamp names it.
      const int32_t partition = placement::partition_of(key_for(batch.id), target.partitions);
      int32_t& sequence = sequences[{target.name, target.incarnation, partition}];
      batch.stamp = Stamp{producer_id, 0, sequence, partition};
      ledger_.stamped(batch.id, batch.stamp);
      sequence = static_cast<int32_t>((int64_t{sequence} + count) % (int64_t{1} << 31));
      const uint64_t id = client.send(append_of(batch));
      ++counts_.appends_sent;
      if (id == 0) {
        ledger_.unanswered(batch.id);
        broken = true;
        break;
      }
      in_flight[id] = batch.id;
    }
    if (broken) break;
    if (in_flight.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    auto response = client.receive(kAnswerWait);
    if (!response) break;
    auto it = in_flight.find(response->id());
    if (it == in_flight.end()) continue;
    const uint64_t batch = it->second;
    in_flight.erase(it);
    if (response->has_append()) {
      const auto& a = response->append();
      ledger_.acknowledged(batch, a.partition(), a.first(), a.last());
      ++counts_.appends_acknowledged;
      counts_.records_acknowledged += a.last() + 1 - a.first();
    } else if (power_cut_) {
      ledger_.unanswered(batch);
    } else {
      ledger_.refused(batch, testing::error_name(*response));
      ++counts_.appends_refused;
      if (!take_identity()) break;
    }
  }
  for (const auto& [id, batch] : in_flight) ledger_.unanswered(batch);
}

void Workload::consume(int index) {
  std::mt19937_64 rng(options_.seed * 104729 + static_cast<uint64_t>(index));
  const std::string group = "g" + std::to_string(index);
  testing::WireClient client(port_);
  if (!client.connected()) return;
  std::map<std::tuple<std::string, uint64_t, int32_t>, uint64_t> positions;
  while (!stopping_) {
    const auto targets = ledger_.live();
    if (targets.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    const Target& target = targets[rng() % targets.size()];
    const auto partition = static_cast<int32_t>(rng() % static_cast<uint64_t>(target.partitions));
    const auto key = std::make_tuple(target.name, target.incarnation, partition);
    if (positions.count(key) == 0) {
      // Where the group left off, else the partition's start.
      v1::Response r = client.call(committed_of(target.name, group, partition), kAnswerWait);
      if (!answered(r)) return;
      if (r.has_committed()) {
        positions[key] = r.committed().next();
      } else {
        v1::Response b = client.call(bounds_of(target.name, partition), kAnswerWait);
        if (!answered(b)) return;
        if (!b.has_bounds()) continue;
        positions[key] = b.bounds().first();
      }
    }
    v1::Response r = client.call(read_of(target.name, partition, positions[key], 200, 20), kAnswerWait);
    if (!answered(r)) return;
    if (!r.has_read() || r.read().partitions_size() != 1) continue;  // the stream went meanwhile
    const auto& read = r.read().partitions(0);
    if (read.has_error()) {  // trimmed past the cursor: start again from the bounds
      positions.erase(key);
      continue;
    }
    std::vector<std::pair<uint64_t, std::string>> records;
    for (const auto& e : read.entries()) {
      if (e.record().key() != key_for(parse_payload(e.record().payload()).value_or(RecordId{}).batch)) {
        ledger_.fail("stream " + target.name + " partition " + std::to_string(partition) + " offset " +
                     std::to_string(e.offset()) + ": a reader got a record whose key does not match it");
      }
      records.emplace_back(e.offset(), e.record().payload());
    }
    ledger_.read_by_consumer(target, partition, records);
    counts_.records_read += records.size();
    if (read.next_from() == positions[key]) continue;
    positions[key] = read.next_from();
    const size_t sent = ledger_.commit_sent(target, group, partition, read.next_from());
    ++counts_.commits_sent;
    v1::Response c = client.call(commit_of(target.name, group, partition, read.next_from()), kAnswerWait);
    if (!answered(c)) return;
    if (c.has_commit()) {
      ledger_.commit_acknowledged(target, group, partition, sent);
      ++counts_.commits_acknowledged;
    }
  }
}

void Workload::administer() {
  std::mt19937_64 rng(options_.seed * 15485863);
  testing::WireClient client(port_);
  if (!client.connected()) return;
  while (!stopping_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 150));
    const auto live = ledger_.live();
    const auto free = ledger_.free_names(options_.stream_names);
    const uint64_t choice = rng() % 10;
    if (choice < 6 && !live.empty()) {
      // Trim a partition to somewhere in its second half: records accumulate across cycles, bounded.
      const Target& target = live[rng() % live.size()];
      const auto partition = static_cast<int32_t>(rng() % static_cast<uint64_t>(target.partitions));
      v1::Response b = client.call(bounds_of(target.name, partition), kAnswerWait);
      if (!answered(b)) return;
      if (!b.has_bounds() || b.bounds().next() <= b.bounds().first()) continue;
      const uint64_t first = b.bounds().first();
      const uint64_t span = b.bounds().next() - first;
      const uint64_t before = first + span / 2 + rng() % (span / 2 + 1);
      ledger_.trim_sent(target, partition, before);
      ++counts_.trims_sent;
      v1::Response t = client.call(trim_of(target.name, partition, before), kAnswerWait);
      if (!answered(t)) return;
      if (t.has_trim()) {
        ledger_.trim_acknowledged(target, partition, t.trim().first());
        ++counts_.trims_acknowledged;
      }
    } else if (choice < 8 && static_cast<int>(live.size()) > options_.min_live_streams) {
      const Target& target = live[rng() % live.size()];
      ledger_.delete_sent(target.name);
      ++counts_.deletes_sent;
      v1::Response d = client.call(delete_of(target.name), kAnswerWait);
      if (!answered(d)) return;
      if (d.has_delete_stream()) {
        ledger_.delete_acknowledged(target.name);
        ++counts_.deletes_acknowledged;
      } else if (!power_cut_) {
        ledger_.delete_refused(target.name);
      }
    } else if (!free.empty()) {
      const std::string& name = free[rng() % free.size()];
      const NewStream policy = random_stream(rng);
      const uint64_t incarnation = ledger_.create_sent(name, policy.partitions, policy.segment_bytes);
      ++counts_.creates_sent;
      v1::Response c = client.call(create_of(name, policy.partitions, policy.segment_bytes), kAnswerWait);
      if (!answered(c)) return;
      if (!c.has_create_stream()) {
        if (!power_cut_) ledger_.create_refused(name, incarnation);
        continue;
      }
      ledger_.create_acknowledged(name, incarnation, 0);
      ++counts_.creates_acknowledged;
      v1::Response d = client.call(describe_of(name), kAnswerWait);
      if (!answered(d)) return;
      if (d.has_describe_stream()) ledger_.create_acknowledged(name, incarnation, d.describe_stream().created_at_us());
    }
  }
}

}  // namespace streamd::crash
