// StreamCatalog: the broker's open streams by name, and the locks that guard them.
//
// Each open stream is an OpenStream: the engine's stream plus what the broker keeps beside it — the
// rotation for unkeyed batches, the backpressure state (the stream's max_bytes and the engine's capacity), the long-poll watchers of each partition and
// a lock that keeps two compactions of one partition apart. Open streams are shared: an operation that
// found one keeps it alive, and a removal only unlists it.
//
// Locking, all inside the catalog: one admin lock serialises create, alter, remove, auto-create, close
// and the engine's word of other brokers' creates, changes and deletes (they touch the engine's storage
// while holding it); a shared lock guards the map, held only for lookups and swaps, never across I/O.
//
// An engine other brokers share tells the catalog of their creates, policy changes and deletes
// (set_catalog_listener): the catalog then opens, unlists or replaces that stream as the engine now
// holds it, or, for the same stream, takes its policy's limits anew. A create refused
// STREAM_EXISTS because another broker created the name first opens the engine's stream at once, so an
// auto-create racing another broker's appends to it.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "server/broker/backpressure.h"
#include "server/broker/broker.h"
#include "server/broker/watchers.h"
#include "server/broker/stream_engine.h"

namespace streamd {

struct OpenStream {
  OpenStream() = default;
  // Offers the room its stream frees to the engine's waiters (see stream_catalog.cc).
  ~OpenStream();
  OpenStream(const OpenStream&) = delete;
  OpenStream& operator=(const OpenStream&) = delete;

  std::shared_ptr<EngineStream> stream;
  std::atomic<uint64_t> rotation{0};
  // Always present, since a policy change may bound a stream that was not (max_bytes 0 and no engine
  // capacity: it admits every append at once).
  std::shared_ptr<Backpressure> backpressure;
  std::shared_ptr<EngineBudget> budget;        // null when the engine has no capacity of its own
  std::vector<std::shared_ptr<PartitionWatchers>> watchers;
  std::vector<std::unique_ptr<std::mutex>> compaction_mu;

  const std::string& name() const { return stream->name(); }
  // Room may have been freed (trim, retention, compaction).
  void room_freed() const {
    if (budget) return budget->room_freed();  // room in the engine is room for every stream
    backpressure->room_freed();
  }
  // The stream's policy changed: the backpressure takes its max_bytes and block_timeout. (Routing,
  // retention and compaction read the policy anew each time.)
  void policy_changed() const;
  // The stream is going away: waiters are refused, watchers woken.
  void shut(const Status& status) const;
};

class StreamCatalog {
 public:
  // Opens every stream `engine` holds. `scheduler` runs the backpressure waits. Creates past
  // `max_partitions` partitions in all are refused (BrokerOptions::max_partitions).
  StreamCatalog(StreamEngine& engine, Scheduler& scheduler, int64_t max_partitions);
  StreamCatalog(const StreamCatalog&) = delete;
  StreamCatalog& operator=(const StreamCatalog&) = delete;

  // STREAM_MISCONFIGURED (bad name) or STREAM_NOT_FOUND.
  Result<std::shared_ptr<OpenStream>> find(const std::string& name) const;
  std::vector<std::shared_ptr<OpenStream>> all() const;
  size_t size() const;

  // Creates the stream; STREAM_EXISTS unless `if_not_exists`. `created` says whether it did.
  Status create(const std::string& name, const Policy& policy, bool if_not_exists, bool* created);
  // The open stream, creating it with `policy` when absent (auto-create).
  Result<std::shared_ptr<OpenStream>> find_or_create(const std::string& name, const Policy& policy);
  // The engine's alter (stream_engine.h), then the open stream takes the policy it kept.
  // STREAM_NOT_FOUND, or the engine's or edit's refusal.
  Result<Policy> alter(const std::string& name, const PolicyEdit& edit);
  // Unlists and deletes the stream; STREAM_NOT_FOUND unless `if_exists`. `deleted` says whether it did.
  Status remove(const std::string& name, bool if_exists, bool* deleted);
  // Unlists every stream, shuts each with `status`, and closes the engine.
  void close(const Status& status);

 private:
  // Makes the catalog's entry for `name` what the engine holds now (another broker's create, change or
  // delete).
  void sync(const std::string& name);
  // After the engine refused a create STREAM_EXISTS: the engine's stream, opened here unless it already
  // was. Holds admin_mu_.
  Result<std::shared_ptr<OpenStream>> adopt(const std::string& name);
  std::shared_ptr<OpenStream> open(std::shared_ptr<EngineStream> stream) const;
  // The engine's create, unless `policy` would take the broker past max_partitions_. Holds admin_mu_.
  Result<std::shared_ptr<EngineStream>> create_within_limit(const std::string& name, const Policy& policy);

  StreamEngine& engine_;
  Scheduler& scheduler_;
  const int64_t max_partitions_;
  std::shared_ptr<EngineBudget> budget_;
  std::mutex admin_mu_;
  mutable std::shared_mutex streams_mu_;
  std::map<std::string, std::shared_ptr<OpenStream>> streams_;
};

}  // namespace streamd
