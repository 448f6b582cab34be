// Ledger: what the crash harness knows the broker must hold, kept across power cuts — every batch sent
// and what became of it, and per stream incarnation the records known durable, the trims, the group
// commits and whether the stream exists. The workload's threads write to it as answers arrive; the
// verification (verifier.h) checks the restarted broker against it and then records what it found,
// which from then on is known durable too.
//
// A record is known durable at an offset once its append was acknowledged, once a reader got it (a
// reader sees only synced records), or once a verification found it there. A stream incarnation is one
// life of a stream name, from its create to its delete; records carry their incarnation, so a deleted
// stream's records coming back under a later incarnation are caught.
//
// Thread-safety: every method may be called from any thread (one mutex).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/crash/payload.h"

namespace streamd::crash {

enum class Outcome { kInFlight, kAcknowledged, kRefused, kUnanswered };

// An idempotent producer's stamp on a batch (docs/SEMANTICS.md §11): the batch names its partition.
struct Stamp {
  int64_t producer_id = -1;
  int32_t epoch = 0;
  int32_t sequence = 0;
  int32_t partition = -1;
};

struct Batch {
  uint64_t id = 0;
  std::string stream;
  uint64_t incarnation = 0;
  uint32_t count = 0;
  Stamp stamp;
  Outcome outcome = Outcome::kInFlight;
  int32_t partition = -1;  // where it was acknowledged
  uint64_t first = 0;
  std::string error;  // why it was refused
};

// A batch the cut left without an answer, to be sent again with its stamp once the broker is back:
// where the verification found it, if it did (the resend must then be answered with those offsets).
struct Resend {
  Batch batch;
  std::optional<std::pair<int32_t, uint64_t>> found;  // (partition, first offset)
};

struct PartitionTruth {
  // offset → (batch, index): records known durable there.
  std::map<uint64_t, std::pair<uint64_t, uint32_t>> durable;
  uint64_t first = 0;        // as the last verification found it
  uint64_t first_floor = 0;  // no lower than an acknowledged trim left it
  std::vector<uint64_t> trims;  // `before` of the trims sent since the last verification
};

struct GroupTruth {
  std::optional<uint64_t> found;  // as the last verification found it
  std::vector<uint64_t> sent;     // commits sent since, in order
  int last_acked = -1;            // the last of them acknowledged (index into sent)
};

enum class Life { kCreating, kLive, kDeleting, kGone };

struct Incarnation {
  std::string name;
  uint64_t number = 0;
  int32_t partitions = 0;
  int64_t segment_bytes = 0;
  Life life = Life::kCreating;
  bool decided = false;       // a create or delete of it was acknowledged since the last verification
  int64_t created_at_us = 0;  // 0 until known
  std::vector<PartitionTruth> parts;
  std::map<std::pair<std::string, int32_t>, GroupTruth> groups;
};

// A live stream incarnation, as the workload picks it.
struct Target {
  std::string name;
  uint64_t incarnation = 0;
  int32_t partitions = 0;
};

class Ledger {
 public:
  // --- the workload
  std::vector<Target> live() const;
  // A new batch of `count` records to `target`, and the stamp it is then given.
  Batch begin_batch(const Target& target, uint32_t count);
  void stamped(uint64_t batch, const Stamp& stamp);
  // A batch of an earlier cycle sent again (a Resend): in flight again until its answer.
  void resend_begun(const Batch& batch);
  void acknowledged(uint64_t batch, int32_t partition, uint64_t first, uint64_t last);
  void refused(uint64_t batch, const std::string& error);
  void unanswered(uint64_t batch);
  // A reader got these records (offset, payload) from `partition`.
  void read_by_consumer(const Target& target, int32_t partition,
                        const std::vector<std::pair<uint64_t, std::string>>& records);
  size_t commit_sent(const Target& target, const std::string& group, int32_t partition, uint64_t next);
  void commit_acknowledged(const Target& target, const std::string& group, int32_t partition, size_t index);
  void trim_sent(const Target& target, int32_t partition, uint64_t before);
  void trim_acknowledged(const Target& target, int32_t partition, uint64_t first);
  // A create of `name` (which has no live incarnation) is being sent: its incarnation number.
  uint64_t create_sent(const std::string& name, int32_t partitions, int64_t segment_bytes);
  void create_acknowledged(const std::string& name, uint64_t incarnation, int64_t created_at_us);
  // The broker answered the create with an error: nothing was created.
  void create_refused(const std::string& name, uint64_t incarnation);
  void delete_sent(const std::string& name);
  void delete_acknowledged(const std::string& name);
  // The broker answered the delete with an error: the stream stays.
  void delete_refused(const std::string& name);
  // Names with no incarnation, or whose last one is gone: free for a create.
  std::vector<std::string> free_names(const std::vector<std::string>& pool) const;

  // A check failed (the harness reports every one and fails the run).
  void fail(std::string what);
  std::vector<std::string> failures() const;

  // --- the verification, with the workload stopped
  std::mutex& mutex() const { return mu_; }
  // Under mutex(): the current incarnation of every name, and every batch sent since the last verification.
  std::map<std::string, std::unique_ptr<Incarnation>>& incarnations() { return incarnations_; }
  std::map<uint64_t, Batch>& batches() { return batches_; }
  // Under mutex(): names whose delete was acknowledged since the last verification (which clears it).
  std::set<std::string>& deletes_acknowledged() { return deletes_acknowledged_; }
  // Under mutex(): the stamped batches the last verification found unanswered, to be sent again.
  std::vector<Resend>& resends() { return resends_; }
  void fail_locked(std::string what) { failures_.push_back(std::move(what)); }

 private:
  Incarnation* find_locked(const Target& target);
  void add_durable_locked(Incarnation& inc, int32_t partition, uint64_t offset, uint64_t batch, uint32_t index,
                          const char* how);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Incarnation>> incarnations_;
  std::map<std::string, uint64_t> next_incarnation_;
  std::map<uint64_t, Batch> batches_;
  std::set<std::string> deletes_acknowledged_;
  std::vector<Resend> resends_;
  uint64_t next_batch_ = 1;
  std::vector<std::string> failures_;
};

const char* life_name(Life life);

}  // namespace streamd::crash
