// PgEngine's side of the change feed (pg_change_feed.h): the NOTIFY it sends for what this broker
// committed, and the heads other brokers' NOTIFYs carry, taken without a query.
#include <utility>

#include "server/broker/pg/pg_engine.h"

namespace streamd {

bool PgEngine::send_changes(PgConnection& listener, Listening& state) {
  PgNotifier::Pending pending = notifier_.take_pending();
  std::vector<std::string> items = std::move(pending.heads);
  if (pending.refresh) items.emplace_back("r");
  const bool announcing = !state.announce.empty();
  if (announcing) items.push_back(std::exchange(state.announce, std::string()));
  // Alone among the members, nobody listens: a NOTIFY would cost the database a transaction for
  // nothing. A broker that joins says so (j), and this one then tells it to read everything (r).
  if (items.empty() || (state.alone && !announcing)) return true;
  PgParams params;
  const std::string payload = pg_changes::payload(notify_tag_, items);
  params.text(kPgChannel).text(payload);
  if (!listener.exec_prepared("notify", "streamd_notify", "SELECT pg_notify($1, $2)", params).ok()) return false;
  state.last_notify = std::chrono::steady_clock::now();
  return true;
}

void PgEngine::apply_heads(const std::vector<pg_changes::HeadChange>& heads) {
  for (const pg_changes::HeadChange& change : heads) {
    auto it = by_id_cache_.find(change.stream_id);
    std::shared_ptr<PgStream> stream = it == by_id_cache_.end() ? nullptr : it->second.lock();
    if (!stream) {
      // A stream this cache has not seen: take every id the engine holds now.
      by_id_cache_.clear();
      std::lock_guard lock(mu_);
      for (const auto& [name, held] : streams_) by_id_cache_[held->id()] = held;
      it = by_id_cache_.find(change.stream_id);
      stream = it == by_id_cache_.end() ? nullptr : it->second.lock();
    }
    // Unknown yet (created a moment ago): the create's own NOTIFY brings it, with its heads.
    if (!stream || change.part < 0 || change.part >= stream->partition_count()) continue;
    PgPartition* partition = stream->pg_partition(change.part);
    partition->refresh(change.head, partition->maintenance_generation());
  }
}

}  // namespace streamd
