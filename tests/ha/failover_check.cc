#include "tests/ha/failover_check.h"

#include <map>
#include <sstream>
#include <utility>

#include "tests/integration/batch_payload.h"

namespace streamd::testing {
namespace {

std::string batch_name(int producer, int seq) { return "p" + std::to_string(producer) + ".b" + std::to_string(seq); }

struct Copy {
  int32_t partition = -1;
  uint64_t first = 0;
  int count = 0;
  int next_index = 0;
  std::string key;
};

// What each attempt to send batch `seq` of `producer` was answered, in order: for a report.
std::string attempts_of(const std::vector<Attempt>& attempts, int producer, int seq) {
  std::string out;
  for (const Attempt& a : attempts) {
    if (a.producer != producer || a.seq != seq) continue;
    if (a.acked) {
      out += " acknowledged at " + std::to_string(a.partition) + "/" + std::to_string(a.first) + ";";
    } else {
      out += " " + (a.error.empty() ? std::string("no answer") : a.error) + (a.unknown ? " (outcome unknown);" : ";");
    }
  }
  return out;
}

}  // namespace

LogCheck check_failover_log(const PartitionLogs& logs, const std::vector<Attempt>& attempts, bool final) {
  LogCheck out;
  std::map<std::pair<int, int>, std::vector<Copy>> copies;
  std::map<std::string, int> last_seq_of_key;  // by key@partition
  std::map<std::string, int32_t> partition_of_key;
  for (const auto& [partition, log] : logs) {
    for (size_t i = 0; i < log.size(); ++i) {
      const LoggedEntry& e = log[i];
      ++out.records;
      if (e.offset != i) {
        out.problems.push_back("partition " + std::to_string(partition) + ": offset " + std::to_string(e.offset) +
                               " at position " + std::to_string(i));
      }
      BatchPayload p;
      if (!parse_payload(e.payload, p)) {
        out.problems.push_back("unparsable payload " + e.payload);
        continue;
      }
      auto& batch = copies[{p.producer, p.seq}];
      if (p.index == 0) {
        if (!batch.empty() && batch.back().next_index != batch.back().count) {
          out.problems.push_back("batch " + batch_name(p.producer, p.seq) + " partial: a copy holds " +
                                 std::to_string(batch.back().next_index) + " of " + std::to_string(p.count));
        }
        batch.push_back({partition, e.offset, p.count, 0, e.key});
        // Per key, in sending order: a copy may follow its own batch, never a later one.
        // Within the partition: a key found in two partitions is reported as such.
        auto [where, first_seen] = partition_of_key.try_emplace(e.key, partition);
        if (!first_seen && where->second != partition) {
          out.problems.push_back("key " + e.key + " in partitions " + std::to_string(where->second) + " and " +
                                 std::to_string(partition) + " (batch " + std::to_string(p.seq) + " at offset " +
                                 std::to_string(e.offset) + ")");
        }
        auto [k, fresh] = last_seq_of_key.try_emplace(e.key + "@" + std::to_string(partition), p.seq);
        if (!fresh) {
          if (p.seq < k->second) {
            out.problems.push_back("key " + e.key + ": batch " + std::to_string(p.seq) + " after batch " +
                                   std::to_string(k->second) + " in partition " + std::to_string(partition));
          }
          k->second = std::max(k->second, p.seq);
        }
      }
      Copy* c = batch.empty() ? nullptr : &batch.back();
      if (c == nullptr || p.index != c->next_index || c->partition != partition ||
          e.offset != c->first + static_cast<uint64_t>(p.index) || p.count != c->count || e.key != c->key) {
        out.problems.push_back("record " + e.payload + " out of place at " + std::to_string(partition) + "/" +
                               std::to_string(e.offset));
        continue;
      }
      ++c->next_index;
    }
  }
  for (const auto& [id, batch] : copies) {
    for (const Copy& c : batch) {
      if (c.next_index != c.count) {
        out.problems.push_back("batch " + batch_name(id.first, id.second) + " partial: a copy holds " +
                               std::to_string(c.next_index) + " of " + std::to_string(c.count));
      }
    }
    out.duplicates += batch.size() - 1;
    if (batch.size() > 1) {
      std::string where;
      for (const Copy& c : batch) where += " " + std::to_string(c.partition) + "/" + std::to_string(c.first);
      out.problems.push_back("batch " + batch_name(id.first, id.second) + " kept " + std::to_string(batch.size()) +
                             " times by idempotent producers, at" + where + "; its attempts:" +
                             attempts_of(attempts, id.first, id.second));
    }
  }
  out.batches = copies.size();

  struct Fate {
    bool acked = false;
    bool maybe = false;  // an attempt may have been kept
  };
  std::map<std::pair<int, int>, Fate> fates;
  for (const Attempt& a : attempts) {
    Fate& f = fates[{a.producer, a.seq}];
    f.acked = f.acked || a.acked;
    f.maybe = f.maybe || a.acked || a.unknown;
    if (!a.acked) continue;
    auto it = copies.find({a.producer, a.seq});
    bool found = false;
    if (it != copies.end()) {
      for (const Copy& c : it->second) {
        found = found || (c.partition == a.partition && (c.first == a.first || !a.offset_known));
      }
    }
    if (!found) {
      out.problems.push_back("acknowledged batch " + batch_name(a.producer, a.seq) + " is not at " +
                             std::to_string(a.partition) + "/" +
                             (a.offset_known ? std::to_string(a.first) : std::string("any offset")));
    }
  }
  for (const auto& [id, fate] : fates) {
    if (fate.acked) ++out.acknowledged;
    if (final && !fate.maybe && copies.count(id) > 0) {
      out.problems.push_back("batch " + batch_name(id.first, id.second) + " was refused outright, yet is kept");
    }
  }
  for (const auto& [id, batch] : copies) {
    if (final && fates.count(id) == 0) out.problems.push_back("batch " + batch_name(id.first, id.second) + " was never sent");
  }
  return out;
}

}  // namespace streamd::testing
