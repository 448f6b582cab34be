#include "server/broker/pg/pg_engine.h"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <atomic>
#include <map>
#include <utility>

#include "server/broker/pg/pg_schema.h"
#include "server/broker/pg/pg_txn_store.h"
#include "server/storage/stream_meta.h"

namespace streamd {
namespace {

constexpr const char* kUniqueViolation = "23505";

Status empty_dsn() {
  return Status(Code::kSqlStreamMisconfigured, "storage.postgres.dsn is empty",
                {{"field", "storage.postgres.dsn"}, {"reason", "the postgres engine needs a libpq connection string"}});
}

PgHead empty_head() { return PgHead{}; }

}  // namespace

namespace {

std::string new_notify_tag() {
  static std::atomic<unsigned> engines{0};
  return std::to_string(::getpid()) + "." + std::to_string(engines.fetch_add(1));
}

}  // namespace

PgEngine::PgEngine(const PgEngineOptions& options, const Clock& clock)
    : options_(options),
      clock_(clock),
      notify_tag_(new_notify_tag()),
      notify_sql_(std::string("NOTIFY ") + kPgChannel + ", '" + notify_tag_ + "'"),
      pool_(options.dsn, options.pool, PgSession{options.reply_timeout, options.shard}),
      producers_(options.shared_producers ? options.shared_producers
                                          : std::make_shared<ProducerLimits>(options.producers)),
      flushes_(threads_, options.pool, kStorageRunningLimit),
      threads_(options.pool) {}

Status PgEngine::init_schema(const std::string& dsn) {
  if (dsn.empty()) return empty_dsn();
  auto conn = PgConnection::connect(dsn);
  if (!conn.ok()) return conn.status();
  STREAMD_RETURN_IF_ERROR(check_settings(**conn));
  return ensure_schema(**conn);
}

Result<std::unique_ptr<PgEngine>> PgEngine::open(const PgEngineOptions& options, const Clock& clock) {
  if (options.dsn.empty()) return empty_dsn();
  std::unique_ptr<PgEngine> engine(new PgEngine(options, clock));
  {
    auto lease = engine->pool_.acquire();  // connects and checks the server's settings
    if (!lease.ok()) return lease.status();
    STREAMD_RETURN_IF_ERROR(ensure_schema(**lease));
  }
  // LISTEN before the load: what another broker commits from then on is notified, what it committed
  // before is loaded. So once open() returns (and the broker reports ready) it hears the others.
  auto listening = engine->listen();
  STREAMD_RETURN_IF_ERROR(engine->load());
  // In a set of shards a transaction's streams may be in other databases: its end goes step by step.
  PgEndWriter* ends = engine->options_.shard.empty() ? engine.get() : nullptr;
  auto txns = TxnLog::over(std::make_unique<PgTxnStore>(engine->pool_, engine->threads_, ends));
  if (!txns.ok()) return txns.status();
  engine->txns_ = std::move(txns).value();
  engine->poller_ = std::thread(&PgEngine::poll_loop, engine.get(), std::move(listening));
  return engine;
}

PgEngine::~PgEngine() { close(); }

std::shared_ptr<PgStream> PgEngine::make_stream(int64_t id, const std::string& name, const std::string& meta,
                                                const std::vector<PgHead>& heads) {
  auto decoded = decode_stream_meta(meta, "streamd_streams/" + name);
  if (!decoded.ok()) return nullptr;
  std::vector<PgHead> full = heads;
  full.resize(static_cast<size_t>(decoded->policy.partitions), empty_head());
  return std::make_shared<PgStream>(pool_, notifier_, id, name, decoded->policy, decoded->created_at, meta, threads_,
                                    flushes_, clock_, full,
                                    PgAppendSettings{producers_->idle_expiry, options_.resend_unknown_for});
}

Status PgEngine::load() {
  auto lease = pool_.acquire();
  if (!lease.ok()) return lease.status();
  auto streams = (*lease)->exec("load streams", "SELECT id, name, meta FROM streamd_streams");
  if (!streams.ok()) return streams.status();
  auto heads = (*lease)->exec("load streams",
                              std::string("SELECT stream_id, part, ") + kPgHeadColumns + " FROM streamd_heads");
  if (!heads.ok()) return heads.status();
  auto offsets =
      (*lease)->exec("load streams", "SELECT stream_id, group_name, part, next_offset, metadata FROM streamd_group_offsets");
  if (!offsets.ok()) return offsets.status();

  std::map<int64_t, std::vector<PgHead>> heads_of;
  for (int i = 0; i < heads->rows(); ++i) {
    auto& v = heads_of[heads->int8(i, 0)];
    const auto part = static_cast<size_t>(heads->int4(i, 1));
    if (v.size() <= part) v.resize(part + 1, empty_head());
    v[part] = pg_head_from(*heads, i, 2);
  }
  std::map<int64_t, std::shared_ptr<PgStream>> by_id;
  for (int i = 0; i < streams->rows(); ++i) {
    const std::string name(streams->bytes(i, 1));
    auto stream = make_stream(streams->int8(i, 0), name, std::string(streams->bytes(i, 2)), heads_of[streams->int8(i, 0)]);
    if (!stream) {
      return Status(Code::kStreamBackendFailed, "a stream's row in streamd_streams does not decode",
                    {{"op", "load streams"}, {"stream", name}});
    }
    by_id[stream->id()] = stream;
  }
  std::map<int64_t, std::vector<CommittedOffset>> offsets_of;
  for (int i = 0; i < offsets->rows(); ++i) {
    offsets_of[offsets->int8(i, 0)].push_back({std::string(offsets->bytes(i, 1)), PartitionId(offsets->int4(i, 2)),
                                               Offset(static_cast<uint64_t>(offsets->int8(i, 3))),
                                               std::string(offsets->bytes(i, 4))});
  }
  std::lock_guard lock(mu_);
  for (auto& [id, stream] : by_id) {
    stream->refresh_offsets(offsets_of[id], stream->commit_generation());
    streams_[stream->name()] = stream;
  }
  return Status();
}

Result<std::vector<std::string>> PgEngine::sync_streams(PgConnection& conn) {
  auto rows = conn.exec_prepared("refresh", "streamd_refresh_streams",
                                 "SELECT id, name, meta FROM streamd_streams", {});
  if (!rows.ok()) return rows.status();
  std::map<int64_t, int> unknown;  // id -> row, for the ids this engine does not hold
  for (int i = 0; i < rows->rows(); ++i) unknown[rows->int8(i, 0)] = i;
  std::vector<std::string> changed;
  std::vector<std::shared_ptr<PgStream>> gone;
  std::vector<std::pair<std::shared_ptr<PgStream>, int>> altered;  // another broker changed the policy
  {
    std::lock_guard lock(mu_);
    for (auto it = streams_.begin(); it != streams_.end();) {
      if (auto held = unknown.find(it->second->id()); held != unknown.end()) {
        if (!it->second->has_meta(rows->bytes(held->second, 2))) altered.emplace_back(it->second, held->second);
        unknown.erase(held);
        ++it;
        continue;
      }
      changed.push_back(it->first);
      gone.push_back(std::move(it->second));
      it = streams_.erase(it);
    }
  }
  for (const auto& [stream, row] : altered) {
    const std::string meta(rows->bytes(row, 2));
    auto decoded = decode_stream_meta(meta, "streamd_streams/" + stream->name());
    if (!decoded.ok() || decoded->policy.partitions != stream->partition_count()) {
      spdlog::warn("postgres engine: stream {}'s changed row in streamd_streams does not decode as its policy; "
                   "keeping the policy it had", stream->name());
      continue;
    }
    stream->set_policy(decoded->policy, meta);
    changed.push_back(stream->name());
  }
  for (const auto& [id, row] : unknown) {
    const std::string name(rows->bytes(row, 1));
    auto stream = make_stream(id, name, std::string(rows->bytes(row, 2)), {});
    if (!stream) {
      spdlog::warn("postgres engine: stream {}'s row in streamd_streams does not decode; not served", name);
      continue;
    }
    std::lock_guard lock(mu_);
    streams_[name] = std::move(stream);
    changed.push_back(name);
  }
  for (const auto& stream : gone) stream->close();  // their appends in flight find no head row
  return changed;
}

void PgEngine::report(const std::vector<std::string>& names) {
  if (names.empty()) return;
  std::lock_guard lock(listener_mu_);
  if (!listener_) return;
  for (const std::string& name : names) listener_(name);
}

Result<ProducerIdentity> PgEngine::init_producer(std::optional<ProducerIdentity> current) {
  if (current) {
    if (auto bumped = next_epoch(*current)) return *bumped;
  }
  auto lease = pool_.acquire();
  if (!lease.ok()) return lease.status();
  auto id = (*lease)->exec("init producer", "SELECT nextval('streamd_producer_ids')");
  if (!id.ok()) return id.status();
  return ProducerIdentity{id->int8(0, 0), 0};
}

Status PgEngine::write_ends(const std::vector<const TxnStore::End*>& ends, std::vector<std::function<void()>>& after) {
  std::map<TxnPartition, std::vector<PgPartition::Marker>> markers;
  for (const TxnStore::End* e : ends) {
    for (const TxnPartition& at : e->partitions) markers[at].push_back({{e->producer_id, e->epoch}, e->commit});
  }
  std::vector<PgPartition::MarkersOf> partitions;
  std::vector<std::shared_ptr<PgStream>> streams;  // alive until what follows the commit has run
  for (const auto& [at, of_partition] : markers) {
    // A stream deleted since holds no transaction to end.
    std::shared_ptr<PgStream> stream = held(at.stream);
    if (!stream || at.partition >= stream->partition_count()) continue;
    partitions.push_back({stream->pg_partition(at.partition), at.stream, of_partition});
    streams.push_back(std::move(stream));
  }
  auto written = PgPartition::write_markers_in(partitions);
  if (!written.ok()) return written.status();
  for (std::function<void()>& took : *written) after.push_back([streams, took = std::move(took)] { took(); });
  // After the markers, as the steps write them: a group's offset is read only with what it commits.
  for (const TxnStore::End* e : ends) {
    for (const TxnOffset& o : e->offsets) {
      std::shared_ptr<PgStream> stream = held(o.at.stream);
      if (!stream || o.at.partition >= stream->partition_count()) continue;
      STREAMD_RETURN_IF_ERROR(stream->commit_in(o));
      after.push_back([stream, o] { stream->took_commit(o); });
    }
  }
  return Status();
}

void PgEngine::set_catalog_listener(CatalogListener listener) {
  std::lock_guard lock(listener_mu_);
  listener_ = std::move(listener);
}

Status PgEngine::refresh() {
  std::vector<std::string> changed;
  Status s = reread(changed);
  reachable_.store(s.ok(), std::memory_order_relaxed);
  if (s.ok()) report(changed);  // with no connection held: the listener may take one
  return s;
}

Status PgEngine::reread(std::vector<std::string>& changed) {
  auto lease = pool_.acquire();
  if (!lease.ok()) return lease.status();
  {
    std::lock_guard catalog(catalog_mu_);
    auto synced = sync_streams(**lease);
    if (!synced.ok()) return synced.status();
    changed = std::move(synced).value();
    std::lock_guard lock(mu_);
    changed.insert(changed.end(), unreported_.begin(), unreported_.end());
    unreported_.clear();
  }
  // The streams' heads and offsets before the catalog hears of them; a failed read reports them next time.
  auto keep_unreported = [&](Status s) {
    std::lock_guard lock(mu_);
    unreported_.insert(unreported_.end(), changed.begin(), changed.end());
    return s;
  };
  // Each stream with the generations of its commits and of its partitions' maintenance, before the reads.
  struct Known {
    std::shared_ptr<PgStream> stream;
    uint64_t commits = 0;
    std::vector<uint64_t> maintenance;
  };
  std::map<int64_t, Known> by_id;
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, stream] : streams_) {
      Known& known = by_id[stream->id()];
      known.stream = stream;
      known.commits = stream->commit_generation();
      for (int32_t p = 0; p < stream->partition_count(); ++p) {
        known.maintenance.push_back(stream->pg_partition(p)->maintenance_generation());
      }
    }
  }
  // Prepared: other brokers' notifications run these up to a thousand times a second.
  auto heads = (*lease)->exec_prepared(
      "refresh", "streamd_refresh_heads",
      std::string("SELECT stream_id, part, ") + kPgHeadColumns + " FROM streamd_heads", {});
  if (!heads.ok()) return keep_unreported(heads.status());
  auto offsets = (*lease)->exec_prepared(
      "refresh", "streamd_refresh_offsets",
      "SELECT stream_id, group_name, part, next_offset, metadata FROM streamd_group_offsets", {});
  if (!offsets.ok()) return keep_unreported(offsets.status());
  for (int i = 0; i < heads->rows(); ++i) {
    auto it = by_id.find(heads->int8(i, 0));
    const int32_t part = heads->int4(i, 1);
    if (it == by_id.end() || part < 0 || part >= it->second.stream->partition_count()) continue;
    it->second.stream->pg_partition(part)->refresh(pg_head_from(*heads, i, 2),
                                                   it->second.maintenance[static_cast<size_t>(part)]);
  }
  std::map<int64_t, std::vector<CommittedOffset>> offsets_of;
  for (int i = 0; i < offsets->rows(); ++i) {
    offsets_of[offsets->int8(i, 0)].push_back({std::string(offsets->bytes(i, 1)), PartitionId(offsets->int4(i, 2)),
                                               Offset(static_cast<uint64_t>(offsets->int8(i, 3))),
                                               std::string(offsets->bytes(i, 4))});
  }
  for (auto& [id, known] : by_id) known.stream->refresh_offsets(offsets_of[id], known.commits);
  return Status();
}

uint64_t PgEngine::size_bytes() const {
  std::lock_guard lock(mu_);
  uint64_t total = 0;
  for (const auto& [name, stream] : streams_) total += stream->size_bytes();
  return total;
}

Result<std::shared_ptr<EngineStream>> PgEngine::create(const std::string& name, const Policy& policy) {
  std::lock_guard catalog(catalog_mu_);
  {
    std::lock_guard lock(mu_);
    if (streams_.count(name) > 0) return Status::of(Code::kStreamExists, {{"stream", name}});
  }
  const Policy normalized = policy.normalized();
  const StreamMeta meta{normalized, clock_.now()};
  const std::string encoded = encode_stream_meta(meta);
  auto lease = pool_.acquire();
  if (!lease.ok()) return Status(lease.status()).with("stream", name);
  PgConnection& conn = **lease;
  PgParams params;
  params.text(name).int4(normalized.partitions).bytea(encoded);
  int64_t id = 0;
  // The stream and its head rows in one statement, so another broker sees all of it or none; the
  // NOTIFY in the same transaction, so it goes exactly when the stream exists.
  Status s = conn.transaction("create stream", [&]() -> Status {
    auto r = conn.exec("create stream",
                       "WITH s AS (INSERT INTO streamd_streams (name, partitions, meta) VALUES ($1, $2, $3) "
                       "RETURNING id) "
                       "INSERT INTO streamd_heads (stream_id, part, first_offset, next_offset, bytes, last_at, "
                       "active_base, active_bytes, active_min_at, segments) "
                       "SELECT s.id, p, 0, 0, 0, 0, 0, 0, 0, 1 FROM s, generate_series(0, $2 - 1) AS p "
                       "RETURNING stream_id",
                       params);
    if (!r.ok()) return r.status();
    id = r->int8(0, 0);
    return options_.notify ? conn.run("create stream", notify_sql_) : Status();
  });
  if (!s.ok()) {
    if (s.field("sqlstate") != kUniqueViolation) return s.with("stream", name);
    // Another broker created it first: hold it from now on (the catalog takes it from find()).
    if (auto synced = sync_streams(conn); synced.ok()) {
      std::lock_guard lock(mu_);
      unreported_.insert(unreported_.end(), synced->begin(), synced->end());
    }
    return Status::of(Code::kStreamExists, {{"stream", name}});
  }
  auto stream = make_stream(id, name, encoded, {});
  std::lock_guard lock(mu_);
  streams_[name] = stream;
  return std::shared_ptr<EngineStream>(std::move(stream));
}

std::shared_ptr<PgStream> PgEngine::held(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = streams_.find(name);
  return it == streams_.end() ? nullptr : it->second;
}

Status PgEngine::remove(const std::string& name) {
  std::lock_guard catalog(catalog_mu_);
  std::shared_ptr<PgStream> stream = held(name);
  if (!stream) return Status::of(Code::kStreamNotFound, {{"stream", name}});
  auto lease = pool_.acquire();
  if (!lease.ok()) return Status(lease.status()).with("stream", name);
  PgParams id;
  id.int8(stream->id());
  // The segment rows first, as every transaction that locks them and head rows does (a compaction's
  // rewrite); then the head rows, whose locks wait for appends in flight, which then find no head.
  Status s = (*lease)->transaction("delete stream", [&]() -> Status {
    for (const char* sql : {"SELECT 1 FROM streamd_segments WHERE stream_id = $1 FOR UPDATE",
                            "DELETE FROM streamd_heads WHERE stream_id = $1",
                            "DELETE FROM streamd_batches WHERE stream_id = $1",
                            "DELETE FROM streamd_segments WHERE stream_id = $1",
                            "DELETE FROM streamd_group_offsets WHERE stream_id = $1",
                            "DELETE FROM streamd_producers WHERE stream_id = $1",
                            "DELETE FROM streamd_open_txns WHERE stream_id = $1",
                            "DELETE FROM streamd_aborted_txns WHERE stream_id = $1",
                            "DELETE FROM streamd_streams WHERE id = $1"}) {
      STREAMD_RETURN_IF_ERROR((*lease)->exec("delete stream", sql, id).status());
    }
    return options_.notify ? (*lease)->run("delete stream", notify_sql_) : Status();
  });
  if (!s.ok()) return s.with("stream", name);  // nothing changed: the stream stays as it was
  {
    std::lock_guard lock(mu_);
    streams_.erase(name);
  }
  stream->close();
  return Status();
}

Result<Policy> PgEngine::alter(const std::string& name, const PolicyEdit& edit) {
  std::lock_guard catalog(catalog_mu_);
  std::shared_ptr<PgStream> stream = held(name);
  if (!stream) return Status::of(Code::kStreamNotFound, {{"stream", name}});
  auto lease = pool_.acquire();
  if (!lease.ok()) return Status(lease.status()).with("stream", name);
  PgConnection& conn = **lease;
  PgParams id;
  id.int8(stream->id());
  Policy after;
  std::string encoded;
  // The row is locked from its reading to the COMMIT: a change another broker makes meanwhile waits,
  // then edits what this one wrote, so neither undoes a field the other set. The NOTIFY goes with the
  // change, as a create's does.
  Status s = conn.transaction("alter stream", [&]() -> Status {
    auto row = conn.exec("alter stream", "SELECT meta FROM streamd_streams WHERE id = $1 FOR UPDATE", id);
    if (!row.ok()) return row.status();
    if (row->rows() == 0) return Status::of(Code::kStreamNotFound, {{"stream", name}});  // another broker deleted it
    auto current = decode_stream_meta(row->bytes(0, 0), "streamd_streams/" + name);
    if (!current.ok()) return current.status();
    auto edited = edit(current->policy);
    if (!edited.ok()) return edited.status();
    after = edited->normalized();
    encoded = encode_stream_meta(StreamMeta{after, current->created_at});
    if (encoded == row->bytes(0, 0)) return Status();
    PgParams update;
    update.int8(stream->id()).bytea(encoded);
    STREAMD_RETURN_IF_ERROR(
        conn.exec("alter stream", "UPDATE streamd_streams SET meta = $2 WHERE id = $1", update).status());
    return options_.notify ? conn.run("alter stream", notify_sql_) : Status();
  });
  // On a lost COMMIT whose outcome is unknown, a refresh reads the row and takes what it holds.
  if (!s.ok()) return std::move(s).with("stream", name);
  stream->set_policy(after, std::move(encoded));
  return after;
}

Result<std::shared_ptr<EngineStream>> PgEngine::find(const std::string& name) const {
  std::shared_ptr<PgStream> stream = held(name);
  if (!stream) return Status::of(Code::kStreamNotFound, {{"stream", name}});
  return std::shared_ptr<EngineStream>(std::move(stream));
}

std::vector<std::shared_ptr<EngineStream>> PgEngine::list() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<EngineStream>> out;
  out.reserve(streams_.size());
  for (const auto& [name, stream] : streams_) out.push_back(stream);
  return out;
}

void PgEngine::close() {
  stopping_.store(true);
  notifier_.wake();
  if (poller_.joinable()) poller_.join();
  std::map<std::string, std::shared_ptr<PgStream>> streams;
  {
    std::lock_guard lock(mu_);
    streams.swap(streams_);
  }
  for (const auto& [name, stream] : streams) stream->close();
}

}  // namespace streamd
