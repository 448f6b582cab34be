// PgShards: the postgres engine over several databases, each a shard holding whole streams
// (storage.postgres.shards; docs/SCALING.md §"Shards"). Each shard is a PgEngine of its own — its
// pool, its listening session, its members — and a stream's records, heads and group offsets live in
// the one shard its name is placed on (pg_placement.h), so every operation on a stream is an operation
// of that shard's engine. Every broker opens every shard: a client of any broker sees every stream.
//
// Placement is the rule alone, over the shard names every shard records (pg_shard_record.h), so every
// broker places a name alike and none has to ask another. A stream found on a shard other than its
// rule's (created under another list) is still served from where it is, and a name held anywhere is
// never created again elsewhere.
//
// A shard that cannot be reached at start-up does not stop the broker while another can: the others
// serve their streams, and the missing one is opened again every poll interval; its streams appear
// when it does (the catalog listener hears each name). Meanwhile a name placed on it is answered
// STREAM_BACKEND_FAILED naming the shard (missing()), not STREAM_NOT_FOUND, since its stream may well
// exist. A shard that goes down later keeps its streams listed; their operations fail with the
// connection's error, which names the shard (PgSession). unreachable() names both kinds for /readyz.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/broker/pg/pg_engine.h"

namespace streamd {

struct PgShardSpec {
  std::string name;
  std::string dsn;
};

class PgShards final : public StreamEngine {
 public:
  // `base` holds every option but dsn and shard, which come from each of `shards`.
  static Result<std::unique_ptr<PgShards>> open(const std::vector<PgShardSpec>& shards, const PgEngineOptions& base,
                                                const Clock& clock);
  // Creates or checks the schema and the shard record of every shard (streamd --init-postgres).
  static Status init_schema(const std::vector<PgShardSpec>& shards);
  ~PgShards() override;

  const char* kind() const override { return "postgres"; }
  bool durable() const override { return true; }
  uint64_t size_bytes() const override;

  Result<std::shared_ptr<EngineStream>> create(const std::string& name, const Policy& policy) override;
  Status remove(const std::string& name) override;
  Result<Policy> alter(const std::string& name, const PolicyEdit& edit) override;
  Result<std::shared_ptr<EngineStream>> find(const std::string& name) const override;
  std::vector<std::shared_ptr<EngineStream>> list() const override;
  void set_catalog_listener(CatalogListener listener) override;
  RotationShare rotation_share() const override;
  // A new id comes from the sequence of the first shard that answers (in listed order, from the one
  // after the last asked): its value times the number of shards plus that shard's index, so no two
  // shards ever hand out the same id and any one of them suffices.
  Result<ProducerIdentity> init_producer(std::optional<ProducerIdentity> current) override;
  // One set of bounds and counts for every shard's partitions (PgEngineOptions::shared_producers).
  const ProducerLimits& producers() const override { return *producers_; }
  // The first listed shard's (PgEngine::transactions): a transaction's partitions may be on any shard,
  // its coordinator's state is on that one. nullptr while it cannot be reached.
  TxnLog* transactions() override;
  Status missing(const std::string& name) const override;
  std::vector<std::string> unreachable() const override;
  void close() override;

  // The shard `name` is placed on by the rule.
  const std::string& shard_of(const std::string& name) const;

 private:
  struct Shard {
    PgShardSpec spec;
    std::shared_ptr<PgEngine> engine;  // null while the shard could not be opened
    Status last_failure;               // why it could not
  };

  PgShards(const std::vector<PgShardSpec>& shards, const PgEngineOptions& base, const Clock& clock);
  // Opens shard i's engine after checking its record; the failure otherwise.
  Result<std::shared_ptr<PgEngine>> open_shard(size_t i) const;
  // The engines open now (null for a shard that is not).
  std::vector<std::shared_ptr<PgEngine>> engines() const;
  // The open engine holding `name`, or null.
  std::shared_ptr<PgEngine> holder(const std::string& name) const;
  // Opens the shards that were not, every poll interval, until all are or the engine closes.
  void reopen_loop();
  // Installs shard i's engine and names its streams to the catalog listener.
  void adopt(size_t i, std::shared_ptr<PgEngine> engine);

  const PgEngineOptions base_;
  const std::shared_ptr<ProducerLimits> producers_;
  std::atomic<size_t> next_producer_shard_{0};
  const Clock& clock_;
  std::vector<std::string> names_;  // the shards' names, in listed order

  mutable std::mutex mu_;
  std::vector<Shard> shards_;
  bool closing_ = false;
  std::condition_variable closing_cv_;
  std::thread reopener_;

  // Held while the catalog listener is set or called, as StreamEngine's contract asks.
  std::mutex listener_mu_;
  CatalogListener listener_;
};

}  // namespace streamd
