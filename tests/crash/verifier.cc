#include "tests/crash/verifier.h"

#include <algorithm>

#include <map>
#include <set>
#include <tuple>

#include "tests/crash/requests.h"
#include "tests/crash/txn_workload.h"
#include "tests/integration/wire_client.h"

namespace streamd::crash {
namespace {

constexpr auto kWait = std::chrono::seconds(30);

std::string at(int32_t partition, uint64_t offset) {
  return "partition " + std::to_string(partition) + " offset " + std::to_string(offset);
}

std::string describe_ref(const std::pair<uint64_t, uint32_t>& ref) {
  return "batch " + std::to_string(ref.first) + " record " + std::to_string(ref.second);
}

// Where the records of one batch were found in a partition.
struct Seen {
  int64_t base = 0;  // the offset of its record 0
  uint32_t count = 0;
  std::set<uint32_t> indexes;
};

}  // namespace

void Verifier::fail(const Incarnation& inc, const std::string& what) {
  ledger_.fail_locked("stream " + inc.name + "#" + std::to_string(inc.number) + ": " + what);
}

VerifyCounts Verifier::run() {
  std::lock_guard lock(ledger_.mutex());
  v1::Response list = client_.call(list_streams(), kWait);
  if (!list.has_list_streams()) {
    ledger_.fail_locked("ListStreams after the restart failed: " + testing::error_name(list));
    return counts_;
  }
  std::map<std::string, int32_t> present;
  for (const auto& s : list.list_streams().streams()) present[s.name()] = s.partitions();

  auto& incarnations = ledger_.incarnations();
  for (auto& [name, inc] : incarnations) {
    const bool exists = present.count(name) > 0;
    switch (inc->life) {
      case Life::kLive:
        if (!exists) fail(*inc, "its create was acknowledged and it was never deleted, but it is gone");
        break;
      case Life::kGone:
        if (exists) fail(*inc, "its delete was acknowledged, but a stream of that name exists");
        break;
      case Life::kCreating:
      case Life::kDeleting:
        ++counts_.streams_in_flight;
        inc->life = exists ? Life::kLive : Life::kGone;
        break;
    }
    if (inc->decided) ++counts_.streams_decided;
    inc->decided = false;
    if (exists && inc->life == Life::kLive) check_stream(*inc);
  }
  for (const auto& [name, partitions] : present) {
    // The transactional producer's streams are checked by verify_transactions (txn_workload.h).
    if (std::find(kTxnStreams.begin(), kTxnStreams.end(), name) != kTxnStreams.end()) {
      ++counts_.streams;
      counts_.partitions += static_cast<uint64_t>(partitions);
      continue;
    }
    if (incarnations.count(name) == 0) ledger_.fail_locked("stream " + name + " exists but was never created");
  }
  ledger_.deletes_acknowledged().clear();

  // The batches of this cycle are settled: what was found is durable from now on (and in the
  // partitions' truth), and what was not can never appear — but for a stamped batch left unanswered,
  // which its producer sends again (Resend): the broker must answer it with where it was found, or
  // write it now if it was not.
  // A refused batch consumed no sequence, so the ones its producer sent behind it to the same
  // partition are out of order for the broker now (a real producer numbers them again, see
  // docs/CLIENT.md): they are not resent. The map holds the batches in the order they were sent.
  ledger_.resends().clear();
  std::set<std::tuple<int64_t, std::string, uint64_t, int32_t>> refused_before;
  for (const auto& [id, batch] : ledger_.batches()) {
    const auto lane = std::make_tuple(batch.stamp.producer_id, batch.stream, batch.incarnation, batch.stamp.partition);
    if (batch.outcome == Outcome::kRefused) refused_before.insert(lane);
    auto inc = incarnations.find(batch.stream);
    const bool live = inc != incarnations.end() && inc->second->number == batch.incarnation &&
                      inc->second->life == Life::kLive;
    if (!live || batch.outcome == Outcome::kRefused || batch.outcome == Outcome::kAcknowledged) continue;
    auto found = found_at_.find(id);
    if (batch.stamp.producer_id >= 0 && refused_before.count(lane) == 0) {
      ledger_.resends().push_back({batch, found == found_at_.end() ? std::nullopt : std::optional(found->second)});
    }
    if (found == found_at_.end()) ++counts_.unacknowledged_lost;
  }
  ledger_.batches().clear();
  return counts_;
}

void Verifier::check_stream(Incarnation& inc) {
  v1::Response d = client_.call(describe_of(inc.name), kWait);
  if (!d.has_describe_stream()) {
    fail(inc, "DescribeStream failed: " + testing::error_name(d));
    return;
  }
  const auto& desc = d.describe_stream();
  ++counts_.streams;
  if (desc.partitions_size() != inc.partitions) {
    fail(inc, "has " + std::to_string(desc.partitions_size()) + " partitions, created with " +
                  std::to_string(inc.partitions));
    return;
  }
  if (inc.created_at_us != 0 && desc.created_at_us() != inc.created_at_us) {
    fail(inc, "was created at " + std::to_string(inc.created_at_us) + " us but now says " +
                  std::to_string(desc.created_at_us()) + " us: another incarnation");
  }
  inc.created_at_us = desc.created_at_us();
  for (const auto& p : desc.partitions()) check_partition(inc, p.partition(), p.first(), p.next());
  check_groups(inc);
}

void Verifier::check_partition(Incarnation& inc, int32_t partition, uint64_t first, uint64_t next) {
  ++counts_.partitions;
  PartitionTruth& truth = inc.parts[static_cast<size_t>(partition)];
  const std::string where = "partition " + std::to_string(partition);
  if (!truth.trims.empty()) ++counts_.trims;
  if (first < truth.first_floor) {
    fail(inc, where + ": first is " + std::to_string(first) + ", below the acknowledged trim to " +
                  std::to_string(truth.first_floor));
  }
  bool first_allowed = first == truth.first;
  for (uint64_t t : truth.trims) first_allowed = first_allowed || first == t;
  if (!first_allowed) {
    fail(inc, where + ": first is " + std::to_string(first) + ", neither the previous first " +
                  std::to_string(truth.first) + " nor a trim point sent");
  }

  // Everything from first to next, in reads of up to 1,000 records.
  std::map<uint64_t, v1::Entry> entries;
  for (uint64_t from = first; from < next;) {
    v1::Response r = client_.call(read_of(inc.name, partition, from, 1000, 0), kWait);
    if (!r.has_read() || r.read().partitions_size() != 1 || r.read().partitions(0).has_error()) {
      const std::string error = r.has_read() && r.read().partitions_size() == 1
                                    ? r.read().partitions(0).error().name() + " " + r.read().partitions(0).error().message()
                                    : testing::error_name(r) + " " + r.error().message();
      fail(inc, where + ": a read from " + std::to_string(from) + " failed: " + error);
      return;
    }
    const auto& read = r.read().partitions(0);
    for (const auto& e : read.entries()) entries[e.offset()] = e;
    if (read.next_from() <= from) {
      fail(inc, where + ": a read from " + std::to_string(from) + " made no progress before next " +
                    std::to_string(next));
      return;
    }
    from = read.next_from();
  }
  counts_.records += entries.size();
  if (entries.size() != next - first || (!entries.empty() && (entries.begin()->first != first ||
                                                              entries.rbegin()->first != next - 1))) {
    fail(inc, where + ": " + std::to_string(entries.size()) + " records between first " + std::to_string(first) +
                  " and next " + std::to_string(next) + ": offsets are missing");
  }

  auto& batches = ledger_.batches();
  std::map<uint64_t, Seen> seen;
  for (const auto& [offset, e] : entries) {
    auto id = parse_payload(e.record().payload());
    if (!id) {
      fail(inc, at(partition, offset) + ": holds a record the harness never sent (damaged?)");
      continue;
    }
    if (id->stream != inc.name || id->incarnation != inc.number) {
      fail(inc, at(partition, offset) + ": holds a record of " + id->stream + "#" +
                    std::to_string(id->incarnation));
      continue;
    }
    const bool headed = id->batch % 5 == 0;
    if (e.record().key() != key_for(id->batch) || e.record().headers_size() != (headed ? 1 : 0) ||
        (headed && e.record().headers(0).value() != std::to_string(id->batch))) {
      fail(inc, at(partition, offset) + ": the key or headers of " + describe_ref({id->batch, id->index}) +
                    " are not what was sent");
    }
    const auto ref = std::make_pair(id->batch, id->index);
    auto known = truth.durable.find(offset);
    if (known != truth.durable.end() && known->second != ref) {
      fail(inc, at(partition, offset) + ": holds " + describe_ref(ref) + ", but " +
                    describe_ref(known->second) + " was acknowledged or found there");
    }
    if (known == truth.durable.end()) {
      auto b = batches.find(id->batch);
      if (b == batches.end()) {
        fail(inc, at(partition, offset) + ": " + describe_ref(ref) +
                      " appeared, but an earlier verification found that batch elsewhere or not at all");
      } else if (b->second.outcome == Outcome::kRefused) {
        fail(inc, at(partition, offset) + ": " + describe_ref(ref) + " is there, but its append was refused (" +
                      b->second.error + ")");
      }
    }
    Seen& s = seen[id->batch];
    const int64_t base = static_cast<int64_t>(offset) - id->index;
    if (!s.indexes.empty() && s.base != base) {
      fail(inc, at(partition, offset) + ": the records of batch " + std::to_string(id->batch) +
                    " are not at consecutive offsets");
    }
    s.base = base;
    s.count = id->count;
    s.indexes.insert(id->index);
  }

  // Nothing known durable is missing.
  for (auto it = truth.durable.lower_bound(first); it != truth.durable.end(); ++it) {
    if (entries.count(it->first) == 0) {
      fail(inc, at(partition, it->first) + ": " + describe_ref(it->second) +
                    " was acknowledged or found there, and is gone (next is " + std::to_string(next) + ")");
    }
  }
  // Every batch whole (a trim may only have cut its front), in one partition.
  for (const auto& [batch, s] : seen) {
    auto [where_found, fresh] = found_batches_.try_emplace(batch, inc.name + "/" + std::to_string(partition));
    if (!fresh) fail(inc, where + ": batch " + std::to_string(batch) + " is also in " + where_found->second);
    found_at_[batch] = {partition, static_cast<uint64_t>(s.base)};
    for (uint32_t i = 0; i < s.count; ++i) {
      const int64_t offset = s.base + i;
      if (offset < static_cast<int64_t>(first)) continue;
      if (s.indexes.count(i) == 0) {
        fail(inc, where + ": batch " + std::to_string(batch) + " is partial: record " + std::to_string(i) + " of " +
                      std::to_string(s.count) + " is missing");
      }
    }
    auto b = batches.find(batch);
    if (b == batches.end()) continue;
    if (b->second.outcome == Outcome::kAcknowledged) {
      ++counts_.acknowledged_batches;
      counts_.acknowledged_records += s.count;
    } else if (b->second.outcome != Outcome::kRefused) {
      ++counts_.unacknowledged_kept;
    }
  }

  // What was found is the truth from here on.
  truth.durable.clear();
  for (const auto& [offset, e] : entries) {
    if (auto id = parse_payload(e.record().payload())) truth.durable[offset] = {id->batch, id->index};
  }
  truth.first = first;
  truth.first_floor = first;
  truth.trims.clear();
}

void Verifier::check_groups(Incarnation& inc) {
  v1::Response r = client_.call(list_groups_of(inc.name), kWait);
  if (!r.has_list_groups()) {
    fail(inc, "ListGroups failed: " + testing::error_name(r));
    return;
  }
  std::map<std::pair<std::string, int32_t>, uint64_t> found;
  for (const auto& g : r.list_groups().groups()) found[{g.group(), g.partition()}] = g.committed();
  for (const auto& [key, committed] : found) {
    if (inc.groups.count(key) == 0) {
      fail(inc, "group " + key.first + " has a commit on partition " + std::to_string(key.second) +
                    " that was never sent");
    }
  }
  for (auto& [key, truth] : inc.groups) {
    auto it = found.find(key);
    const std::optional<uint64_t> now = it == found.end() ? std::nullopt : std::optional<uint64_t>(it->second);
    if (!truth.sent.empty()) ++counts_.commits;
    // Commits apply in order: the last acknowledged one or a later one, else the one before or a later one.
    bool allowed = truth.last_acked < 0 && now == truth.found;
    for (size_t i = truth.last_acked < 0 ? 0 : static_cast<size_t>(truth.last_acked); i < truth.sent.size(); ++i) {
      allowed = allowed || now == truth.sent[i];
    }
    if (!allowed) {
      std::string sent;
      for (uint64_t v : truth.sent) sent += " " + std::to_string(v);
      fail(inc, "group " + key.first + " partition " + std::to_string(key.second) + " has committed " +
                    (now ? std::to_string(*now) : std::string("nothing")) + "; before the cut it had " +
                    (truth.found ? std::to_string(*truth.found) : std::string("nothing")) + ", then sent" + sent +
                    (truth.last_acked >= 0 ? ", acknowledged up to " + std::to_string(truth.sent[static_cast<size_t>(truth.last_acked)])
                                           : std::string(", none acknowledged")));
    }
    truth.found = now;
    truth.sent.clear();
    truth.last_acked = -1;
  }
}

}  // namespace streamd::crash
