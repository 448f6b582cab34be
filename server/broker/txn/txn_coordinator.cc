#include "server/broker/txn/txn_coordinator.h"

#include <algorithm>
#include <memory>
#include <utility>

namespace streamd {
namespace {

using Done = TxnCoordinator::Done;

Status concurrent(const std::string& id) {
  return Status(Code::kConcurrentTransactions,
                "The transactional id's previous request is still being carried out; retry",
                {{"transactional_id", id}});
}

Status invalid_state(const TxnEntry& e, const std::string& why) {
  return Status(Code::kInvalidTxnState, why,
                {{"transactional_id", e.header.id}, {"state", txn_status_name(e.header.status)}});
}

// Runs step(i, done) for i in [0, n) at once and `done` when every one answered, with the first failure.
void for_all(size_t n, const std::function<void(size_t, Done)>& step, Done done) {
  if (n == 0) return done(Status());
  struct Join {
    std::mutex mu;
    size_t left = 0;
    Status first;
    Done done;
  };
  auto join = std::make_shared<Join>();
  join->left = n;
  join->done = std::move(done);
  for (size_t i = 0; i < n; ++i) {
    step(i, [join](Status s) {
      Status result;
      {
        std::lock_guard lock(join->mu);
        if (!s.ok() && join->first.ok()) join->first = std::move(s);
        if (--join->left > 0) return;
        result = join->first;
      }
      join->done(std::move(result));
    });
  }
}

}  // namespace

TxnCoordinator::TxnCoordinator(TxnLog& log, TxnEffects& effects, const Clock& clock, TxnLimits limits)
    : log_(log), effects_(effects), clock_(clock), limits_(limits) {}

bool TxnCoordinator::claim(const std::string& id, bool ending) {
  std::lock_guard lock(mu_);
  if (ending && producing_.contains(id)) return false;
  return busy_.emplace(id, ending).second;
}

void TxnCoordinator::release(const std::string& id) {
  std::function<void()> next;
  {
    std::lock_guard lock(mu_);
    busy_.erase(id);
    auto it = waiting_.find(id);
    if (it == waiting_.end()) return;
    next = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) waiting_.erase(it);
  }
  next();
}

bool TxnCoordinator::wait_turn(const std::string& id, std::function<void()> retry) {
  std::lock_guard lock(mu_);
  auto it = busy_.find(id);
  if (it == busy_.end() || it->second) return false;
  waiting_[id].push_back(std::move(retry));
  return true;
}

Status TxnCoordinator::check_producer(const TxnEntry& e, ProducerIdentity p) {
  if (p.id != e.header.producer_id) {
    return Status(Code::kInvalidProducerIdMapping,
                  "The producer id is not the one the transactional id holds",
                  {{"transactional_id", e.header.id},
                   {"producer_id", std::to_string(p.id)},
                   {"expected", std::to_string(e.header.producer_id)}});
  }
  if (p.epoch != e.header.epoch) {
    return Status(Code::kProducerFenced,
                  "A newer epoch of this transactional id's producer exists: epoch " +
                      std::to_string(e.header.epoch) + ", the request's " + std::to_string(p.epoch),
                  {{"transactional_id", e.header.id},
                   {"producer_id", std::to_string(p.id)},
                   {"epoch", std::to_string(p.epoch)},
                   {"current_epoch", std::to_string(e.header.epoch)}});
  }
  return Status();
}

Result<TxnEntry> TxnCoordinator::entry_for(const std::string& id, ProducerIdentity p) const {
  std::optional<TxnEntry> e = log_.find(id);
  if (!e) {
    return Status(Code::kInvalidProducerIdMapping,
                  "The transactional id holds no producer: InitProducerId first",
                  {{"transactional_id", id}, {"producer_id", std::to_string(p.id)}});
  }
  STREAMD_RETURN_IF_ERROR(check_producer(*e, p));
  return std::move(*e);
}

void TxnCoordinator::init_producer(const std::string& id, int32_t timeout_ms,
                                   std::optional<ProducerIdentity> current, ProducerDone done) {
  if (timeout_ms <= 0 || timeout_ms > limits_.max_timeout.count()) {
    return done(
        Status(Code::kInvalidTransactionTimeout,
               "The transaction timeout must be above zero and at most limits.max_transaction_timeout",
               {{"transactional_id", id},
                {"timeout_ms", std::to_string(timeout_ms)},
                {"max_timeout_ms", std::to_string(limits_.max_timeout.count())}}));
  }
  std::optional<TxnEntry> e = log_.find(id);
  if (e && current) {
    // KIP-360: a producer that asks for its next epoch must still be the id's current one.
    if (Status s = check_producer(*e, *current); !s.ok()) return done(s);
  }
  if (!claim(id, true)) return done(concurrent(id));
  ProducerDone finish = [this, id, done = std::move(done)](Result<ProducerIdentity> r) {
    release(id);
    done(std::move(r));
  };
  if (!e) {
    if (log_.size() >= limits_.max_ids) {
      return finish(Status(Code::kTooManyTransactionalIds,
                           "The coordinator holds limits.max_transactional_ids transactional ids; a new one is "
                           "taken once an idle one expires (limits.transactional_id_expiry)",
                           {{"transactional_id", id}, {"max_transactional_ids", std::to_string(limits_.max_ids)}}));
    }
    auto fresh = effects_.new_producer(std::nullopt);
    if (!fresh.ok()) return finish(fresh.status());
    return log_.set({id, fresh->id, fresh->epoch, timeout_ms, TxnStatus::kEmpty, clock_.now()},
                    [fresh = *fresh, finish](Status s) {
                      if (!s.ok()) return finish(s);
                      finish(fresh);
                    });
  }
  // What the id left unfinished is finished first: decided, as decided; open, aborted with a bump that
  // fences the instance that left it.
  auto then = [this, id, timeout_ms, finish](Status s) {
    if (!s.ok()) return finish(s);
    next_producer(*log_.find(id), timeout_ms, finish);
  };
  switch (e->header.status) {
    case TxnStatus::kOngoing: {
      const auto bumped = next_epoch({e->header.producer_id, e->header.epoch});
      return decide(*e, false, bumped ? bumped->epoch : e->header.epoch, counts_.aborts, then);
    }
    case TxnStatus::kPrepareCommit:
    case TxnStatus::kPrepareAbort:
      return complete(*e, then);
    default:
      return next_producer(*e, timeout_ms, finish);
  }
}

void TxnCoordinator::next_producer(const TxnEntry& e, int32_t timeout_ms, ProducerDone done) {
  std::optional<ProducerIdentity> next = next_epoch({e.header.producer_id, e.header.epoch});
  if (!next) {
    // The epoch is spent: the id moves to a new producer id, as Kafka's does.
    auto fresh = effects_.new_producer(std::nullopt);
    if (!fresh.ok()) return done(fresh.status());
    next = *fresh;
  }
  TxnHeader h = e.header;
  h.producer_id = next->id;
  h.epoch = next->epoch;
  h.timeout_ms = timeout_ms;
  h.status = TxnStatus::kEmpty;
  h.started_at = clock_.now();  // the id is in use: its idle expiry counts from here
  log_.set(std::move(h), [next = *next, done = std::move(done)](Status s) {
    if (!s.ok()) return done(s);
    done(next);
  });
}

TxnHeader TxnCoordinator::begun(const TxnHeader& h) const {
  TxnHeader out = h;
  out.status = TxnStatus::kOngoing;
  out.started_at = clock_.now();
  return out;
}

void TxnCoordinator::begin(const TxnEntry& e, Done then) {
  if (e.header.status == TxnStatus::kOngoing) return then(Status());
  log_.set(begun(e.header), std::move(then));
}

Result<TxnEntry> TxnCoordinator::start(const std::string& id, ProducerIdentity p, bool ending, Done& done) {
  auto e = entry_for(id, p);
  if (!e.ok()) return e.status();
  if (!claim(id, ending)) return concurrent(id);
  done = [this, id, done = std::move(done)](Status s) {
    release(id);
    done(std::move(s));
  };
  return e;
}

void TxnCoordinator::add(const TxnEntry& e, bool known, std::function<void(Done)> write, Done done) {
  if (e.header.status == TxnStatus::kPrepareCommit || e.header.status == TxnStatus::kPrepareAbort) {
    return done(concurrent(e.header.id));
  }
  begin(e, [known, write = std::move(write), done = std::move(done)](Status s) {
    if (!s.ok() || known) return done(s);
    write(done);
  });
}

void TxnCoordinator::add_partitions(const std::string& id, ProducerIdentity p,
                                    std::vector<TxnPartition> partitions, Done done, JoinAnswer answer) {
  auto again = [this, id, p, partitions, done, answer] { add_partitions(id, p, partitions, done, answer); };
  if (wait_turn(id, again)) return;
  auto e = start(id, p, false, done);
  if (!e.ok()) return done(e.status());
  if (e->header.status == TxnStatus::kPrepareCommit || e->header.status == TxnStatus::kPrepareAbort) {
    return done(concurrent(id));
  }
  std::optional<TxnHeader> begin;
  if (e->header.status != TxnStatus::kOngoing) begin = begun(e->header);
  std::vector<TxnPartition> added;
  for (TxnPartition& at : partitions) {
    if (begin || !e->partitions.contains(at)) added.push_back(std::move(at));
  }
  if (!begin && added.empty()) return done(Status());
  // One write for the beginning and the partitions, answered before it is durable where the log can
  // and `answer` allows (TxnLog::join): the decision cannot be durable without it, and a restart adopts
  // what it lost of a partition that holds the transaction's batch.
  log_.join(std::move(begin), id, std::move(added), std::move(done), answer);
}

void TxnCoordinator::add_group(const std::string& id, ProducerIdentity p, std::string group, Done done) {
  if (wait_turn(id, [this, id, p, group, done] { add_group(id, p, group, done); })) return;
  auto e = start(id, p, false, done);
  if (!e.ok()) return done(e.status());
  const bool known = e->header.status == TxnStatus::kOngoing && e->groups.contains(group);
  add(
      *e, known, [this, id, group = std::move(group)](Done written) { log_.add_group(id, group, written); },
      std::move(done));
}

void TxnCoordinator::stage_offsets(const std::string& id, ProducerIdentity p, const std::string& group,
                                   std::vector<TxnOffset> offsets, Done done) {
  if (wait_turn(id, [this, id, p, group, offsets, done] { stage_offsets(id, p, group, offsets, done); })) return;
  auto e = start(id, p, false, done);
  if (!e.ok()) return done(e.status());
  if (e->header.status != TxnStatus::kOngoing || !e->groups.contains(group)) {
    return done(invalid_state(
        *e, "The group was not added to the producer's open transaction: AddOffsetsToTxn first"));
  }
  auto staged = std::make_shared<std::vector<TxnOffset>>(std::move(offsets));
  for (TxnOffset& o : *staged) o.group = group;
  for_all(
      staged->size(),
      [this, id, staged](size_t i, Done one) { log_.stage_offset(id, (*staged)[i], std::move(one)); },
      std::move(done));
}

void TxnCoordinator::end(const std::string& id, ProducerIdentity p, bool commit, Done done) {
  auto e = start(id, p, true, done);
  if (!e.ok()) return done(e.status());
  const TxnStatus wanted_end = commit ? TxnStatus::kCompleteCommit : TxnStatus::kCompleteAbort;
  const TxnStatus wanted_decision = commit ? TxnStatus::kPrepareCommit : TxnStatus::kPrepareAbort;
  const TxnStatus s = e->header.status;
  if (s == TxnStatus::kOngoing)
    return decide(*e, commit, e->header.epoch, commit ? counts_.commits : counts_.aborts, done);
  if (s == wanted_decision) return complete(*e, done);  // a completion that failed part way
  if (s == wanted_end) return done(Status());           // a retry of an end that was answered
  done(invalid_state(
      *e, std::string("The producer has no transaction open to ") + (commit ? "commit" : "abort")));
}

void TxnCoordinator::decide(TxnEntry e, bool commit, int16_t epoch, std::atomic<uint64_t>& count, Done done) {
  if (log_.writes_ends()) {
    TxnStore::End end{e.header.producer_id, epoch, commit, {e.partitions.begin(), e.partitions.end()},
                      commit ? e.offsets : std::vector<TxnOffset>{}};
    TxnHeader ended = e.header;
    ended.status = commit ? TxnStatus::kCompleteCommit : TxnStatus::kCompleteAbort;
    ended.epoch = epoch;
    log_.set(std::move(ended), std::move(end), [&count, done = std::move(done)](Status s) {
      if (s.ok()) count.fetch_add(1, std::memory_order_relaxed);
      done(std::move(s));
    });
    return;
  }
  e.header.status = commit ? TxnStatus::kPrepareCommit : TxnStatus::kPrepareAbort;
  e.header.epoch = epoch;
  TxnHeader h = e.header;
  log_.set(std::move(h), [this, e = std::move(e), &count, done = std::move(done)](Status s) {
    if (!s.ok()) return done(s);
    count.fetch_add(1, std::memory_order_relaxed);
    complete(e, done);
  });
}

void TxnCoordinator::complete(const TxnEntry& e, Done done) {
  const bool commit = e.header.status == TxnStatus::kPrepareCommit;
  const ProducerIdentity p{e.header.producer_id, e.header.epoch};
  auto partitions = std::make_shared<std::vector<TxnPartition>>(e.partitions.begin(), e.partitions.end());
  auto offsets = std::make_shared<std::vector<TxnOffset>>(commit ? e.offsets : std::vector<TxnOffset>{});
  TxnHeader ended = e.header;
  ended.status = commit ? TxnStatus::kCompleteCommit : TxnStatus::kCompleteAbort;
  auto record_end = [this, ended = std::move(ended), done](Status s) mutable {
    if (!s.ok()) return done(s);  // still decided: the next end() or restart completes it
    // Answered before the end is durable where the log can (TxnLog::end): a crash that takes it
    // leaves the decision, which the restart completes again (a marker written already is refused and
    // counts as written; an offset is committed again at the same value).
    log_.end(std::move(ended), done);
  };
  // The offsets after every marker: a group reads its committed offset only once what the transaction
  // wrote is readable.
  auto write_offsets = [this, offsets, record_end = std::move(record_end)](Status s) mutable {
    if (!s.ok()) return record_end(s);
    for_all(
        offsets->size(),
        [this, offsets](size_t i, Done one) { effects_.commit_offset((*offsets)[i], std::move(one)); },
        std::move(record_end));
  };
  for_all(
      partitions->size(),
      [this, partitions, p, commit](size_t i, Done one) {
        effects_.write_marker((*partitions)[i], p, commit, std::move(one));
      },
      std::move(write_offsets));
}

Status TxnCoordinator::begin_produce(const std::string& id, ProducerIdentity p, const TxnPartition& at) {
  std::lock_guard lock(mu_);
  if (auto it = busy_.find(id); it != busy_.end() && it->second) return concurrent(id);
  auto e = entry_for(id, p);
  if (!e.ok()) return e.status();
  if (e->header.status != TxnStatus::kOngoing || !e->partitions.contains(at)) {
    return invalid_state(
               *e, "The partition was not added to the producer's open transaction: AddPartitionsToTxn first")
        .with("stream", at.stream)
        .with("partition", std::to_string(at.partition));
  }
  ++producing_[id];
  return Status();
}

bool TxnCoordinator::holds(const std::string& id, ProducerIdentity p, const TxnPartition& at) const {
  auto e = entry_for(id, p);
  return e.ok() && e->header.status == TxnStatus::kOngoing && e->partitions.contains(at);
}

void TxnCoordinator::end_produce(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = producing_.find(id);
  if (it != producing_.end() && --it->second == 0) producing_.erase(it);
}

void TxnCoordinator::expire(Timestamp now, Done done) {
  // One pass over the ids without copying them (a coordinator may hold many), then the claims.
  std::vector<TxnEntry> due;
  std::vector<std::string> idle;
  const int64_t expiry_us = std::chrono::duration_cast<std::chrono::microseconds>(limits_.id_expiry).count();
  log_.scan([&](const TxnEntry& e) {
    const int64_t age_us = now.micros - e.header.started_at.micros;
    if (e.header.status == TxnStatus::kOngoing && age_us > int64_t{e.header.timeout_ms} * 1000) due.push_back(e);
    if (!txn_active(e.header.status) && age_us > expiry_us) idle.push_back(e.header.id);
  });
  // One being ended already needs no abort; one in use is not idle.
  std::erase_if(due, [&](const TxnEntry& e) { return !claim(e.header.id, true); });
  std::erase_if(idle, [&](const std::string& id) { return !claim(id, true); });
  auto aborts = std::make_shared<std::vector<TxnEntry>>(std::move(due));
  auto forgets = std::make_shared<std::vector<std::string>>(std::move(idle));
  for_all(
      aborts->size() + forgets->size(),
      [this, aborts, forgets](size_t i, Done one) {
        if (i < aborts->size()) return abort_with_bump((*aborts)[i], counts_.timeouts, std::move(one));
        const std::string& id = (*forgets)[i - aborts->size()];
        // Claimed, so nothing changed it since the scan; a producer of it that comes back is
        // INVALID_PRODUCER_ID_MAPPING and initialises again, as in Kafka.
        log_.forget(id, [this, id, one = std::move(one)](Status s) {
          if (s.ok()) counts_.expired_ids.fetch_add(1, std::memory_order_relaxed);
          release(id);
          one(std::move(s));
        });
      },
      std::move(done));
}

void TxnCoordinator::abort_with_bump(const TxnEntry& e, std::atomic<uint64_t>& count, Done done) {
  const auto bumped = next_epoch({e.header.producer_id, e.header.epoch});
  decide(e, false, bumped ? bumped->epoch : e.header.epoch, count, [this, id = e.header.id, done](Status s) {
    release(id);
    done(std::move(s));
  });
}

void TxnCoordinator::abort(const std::string& id, Done done) {
  std::optional<TxnEntry> e = log_.find(id);
  if (!e) {
    return done(Status(Code::kTransactionalIdNotFound, "The coordinator holds no such transactional id",
                       {{"transactional_id", id}}));
  }
  if (!txn_active(e->header.status)) return done(invalid_state(*e, "The transactional id has no transaction open"));
  if (!claim(id, true)) return done(concurrent(id));
  // Read again under the claim: a request that ended the transaction may have released it just now.
  e = log_.find(id);
  if (e->header.status == TxnStatus::kOngoing) return abort_with_bump(*e, counts_.operator_aborts, std::move(done));
  Done finish = [this, id, done = std::move(done)](Status s) {
    release(id);
    done(std::move(s));
  };
  if (!txn_active(e->header.status)) return finish(invalid_state(*e, "The transactional id has no transaction open"));
  complete(*e, std::move(finish));
}

bool TxnCoordinator::adopt(const TxnPartition& at, ProducerIdentity p, Done done) {
  std::optional<TxnEntry> holder;
  log_.scan([&](const TxnEntry& e) {
    if (e.header.producer_id == p.id && e.header.epoch == p.epoch) holder = e;
  });
  // A decided transaction lists every partition joined before its decision was durable.
  if (!holder || holder->header.status == TxnStatus::kPrepareCommit ||
      holder->header.status == TxnStatus::kPrepareAbort) {
    return false;
  }
  const std::string id = holder->header.id;
  if (!claim(id, true)) return false;
  std::optional<TxnHeader> begin;
  if (holder->header.status != TxnStatus::kOngoing) begin = begun(holder->header);
  log_.join(std::move(begin), id, {at}, [this, id, done = std::move(done)](Status s) {
    release(id);
    done(std::move(s));
  });
  return true;
}

TxnOpenSummary TxnCoordinator::open_summary() const {
  TxnOpenSummary out;
  const Timestamp now = clock_.now();
  log_.scan([&](const TxnEntry& e) {
    if (!txn_active(e.header.status)) return;
    ++out.open;
    out.oldest = std::max(out.oldest, std::chrono::microseconds(now.micros - e.header.started_at.micros));
  });
  return out;
}

void TxnCoordinator::recover(Done done) {
  std::vector<TxnEntry> decided;
  for (TxnEntry& e : log_.list()) {
    if (e.header.status != TxnStatus::kPrepareCommit && e.header.status != TxnStatus::kPrepareAbort) continue;
    if (claim(e.header.id, true)) decided.push_back(std::move(e));
  }
  auto all = std::make_shared<std::vector<TxnEntry>>(std::move(decided));
  for_all(
      all->size(),
      [this, all](size_t i, Done one) {
        complete((*all)[i], [this, id = (*all)[i].header.id, one](Status s) {
          release(id);
          one(std::move(s));
        });
      },
      std::move(done));
}

}  // namespace streamd
