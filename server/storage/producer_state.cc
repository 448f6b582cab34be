#include "server/storage/producer_state.h"

#include <algorithm>
#include <limits>

#include "server/storage/coding.h"
#include "server/storage/crc32c.h"
#include "server/storage/txn_marker.h"

namespace streamd {
namespace {

// Version 2 adds each producer's open transaction and the aborted transactions; version 1 is still read.
constexpr uint8_t kSnapshotVersion = 2;
constexpr size_t kV1EntryFixedBytes = 8 + 2 + 8 + 1;  // id, epoch, last_used, batch count
constexpr size_t kEntryFixedBytes = 8 + 2 + 8 + 8 + 1;  // id, epoch, last_used, txn first, batch count
constexpr size_t kBatchBytes = 4 + 4 + 8 + 8;          // first and last sequence, first and last offset
constexpr size_t kAbortedBytes = 8 + 8 + 8;            // producer id, first offset, marker offset
constexpr uint64_t kNoTxn = UINT64_MAX;

void append16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>(v >> 8));
}
void append32(std::string& out, uint32_t v) {
  char buf[4];
  coding::put_fixed32(buf, v);
  out.append(buf, 4);
}
void append64(std::string& out, uint64_t v) {
  char buf[8];
  coding::put_fixed64(buf, v);
  out.append(buf, 8);
}
uint16_t get16(const char* p) {
  return static_cast<uint16_t>(static_cast<uint8_t>(p[0]) | (static_cast<uint8_t>(p[1]) << 8));
}

Status out_of_order(const ProducerStamp& s, int32_t expected) {
  return Status(Code::kOutOfOrderSequence,
                "The batch's sequence does not follow the producer's last batch on this partition: expected " +
                    std::to_string(expected) + ", got " + std::to_string(s.first_sequence),
                {{"producer_id", std::to_string(s.id)},
                 {"epoch", std::to_string(s.epoch)},
                 {"sequence", std::to_string(s.first_sequence)},
                 {"expected", std::to_string(expected)}});
}

Status invalid_txn_state(const ProducerStamp& s, std::string message) {
  return Status(Code::kInvalidTxnState, std::move(message),
                {{"producer_id", std::to_string(s.id)}, {"epoch", std::to_string(s.epoch)}});
}

Status fenced(const ProducerStamp& s, int16_t current) {
  return Status(Code::kProducerFenced,
                "A newer epoch of this producer id has written to the partition: epoch " + std::to_string(current) +
                    ", the batch's " + std::to_string(s.epoch),
                {{"producer_id", std::to_string(s.id)},
                 {"epoch", std::to_string(s.epoch)},
                 {"current_epoch", std::to_string(current)}});
}

void append_aborted(std::string& out, const std::vector<AbortedTxn>& aborted) {
  append32(out, static_cast<uint32_t>(aborted.size()));
  for (const AbortedTxn& a : aborted) {
    append64(out, static_cast<uint64_t>(a.producer_id));
    append64(out, a.first.value);
    append64(out, a.marker.value);
  }
}

}  // namespace

ProducerStamp stamp_of(const BatchHeader& h, std::string_view batch) {
  ProducerStamp s{h.producer.id, h.producer.epoch, h.producer.base_sequence, TxnRole::kNone};
  if (h.control()) {
    const std::optional<MarkerType> type = parse_txn_marker(batch);
    s.txn = !type ? TxnRole::kOtherControl : *type == MarkerType::kCommit ? TxnRole::kCommit : TxnRole::kAbort;
  } else if (h.transactional()) {
    s.txn = TxnRole::kData;
  }
  return s;
}

std::optional<ProducerIdentity> next_epoch(const ProducerIdentity& current) {
  if (current.id < 0 || current.epoch < 0 || current.epoch >= std::numeric_limits<int16_t>::max() - 1) {
    return std::nullopt;
  }
  return ProducerIdentity{current.id, static_cast<int16_t>(current.epoch + 1)};
}

void ProducerState::Entry::push(const Batch& b) {
  if (count < kBatchesKept) {
    batches[(head + count) % kBatchesKept] = b;
    ++count;
  } else {
    batches[head] = b;
    head = static_cast<uint8_t>((head + 1) % kBatchesKept);
  }
}

ProducerState::ProducerState(ProducerLimits* limits) : limits_(limits) {}

ProducerState::~ProducerState() {
  if (limits_ != nullptr) limits_->count -= entries_.size();
}

int32_t ProducerState::last_sequence(int32_t first, uint32_t last_delta) {
  constexpr int64_t kWrap = int64_t{std::numeric_limits<int32_t>::max()} + 1;
  return static_cast<int32_t>((int64_t{first} + last_delta) % kWrap);
}

int32_t ProducerState::next_sequence(int32_t last) {
  return last == std::numeric_limits<int32_t>::max() ? 0 : last + 1;
}

ProducerState::Check ProducerState::check(const ProducerStamp& stamp, uint32_t last_delta) const {
  Check out;
  if (!stamp.idempotent()) return out;
  std::lock_guard lock(mu_);
  if (stamp.marker()) return check_marker_locked(stamp);
  if (stamp.txn == TxnRole::kOtherControl) {
    return {Verdict::kRefused, {}, invalid_txn_state(stamp, "A control batch other than a commit or abort marker")};
  }
  auto it = entries_.find(stamp.id);
  if (it == entries_.end()) {
    if (stamp.first_sequence < 0) out = {Verdict::kRefused, {}, out_of_order(stamp, 0)};
    return out;
  }
  const Entry& e = it->second;
  if (stamp.epoch < e.epoch) return {Verdict::kRefused, {}, fenced(stamp, e.epoch)};
  if (stamp.epoch > e.epoch) {
    if (e.txn_first) {
      // Only the transaction's marker, which may carry the newer epoch, ends it.
      out = {Verdict::kRefused, {},
             invalid_txn_state(stamp, "The producer's transaction of an older epoch is still open on the partition, "
                                      "since offset " + std::to_string(e.txn_first->value))};
    } else if (stamp.first_sequence != 0) {
      out = {Verdict::kRefused, {}, out_of_order(stamp, 0)};
    }
    return out;
  }
  const int32_t last = last_sequence(stamp.first_sequence, last_delta);
  for (uint8_t i = 0; i < e.count; ++i) {
    const Batch& b = e.batches[(e.head + i) % kBatchesKept];
    if (b.first_sequence == stamp.first_sequence && b.last_sequence == last) {
      out.verdict = Verdict::kDuplicate;
      out.original = b.range;
      return out;
    }
  }
  // A marker with a newer epoch leaves the epoch without batches: its first starts at 0.
  const int32_t expected = e.count == 0 ? 0 : next_sequence(e.newest().last_sequence);
  if (stamp.first_sequence != expected) return {Verdict::kRefused, {}, out_of_order(stamp, expected)};
  if (e.txn_first && stamp.txn != TxnRole::kData) {
    out = {Verdict::kRefused, {},
           invalid_txn_state(stamp, "The producer has a transaction open on the partition since offset " +
                                        std::to_string(e.txn_first->value) +
                                        ": a batch outside it waits for its commit or abort")};
  }
  return out;
}

ProducerState::Check ProducerState::check_marker_locked(const ProducerStamp& stamp) const {
  auto it = entries_.find(stamp.id);
  if (it != entries_.end() && stamp.epoch < it->second.epoch) {
    return {Verdict::kRefused, {}, fenced(stamp, it->second.epoch)};
  }
  if (it == entries_.end() || !it->second.txn_first) {
    // Written once: a marker resent after its first copy was written finds the transaction ended.
    return {Verdict::kRefused, {},
            invalid_txn_state(stamp, std::string("No transaction of the producer is open on the partition to ") +
                                         (stamp.txn == TxnRole::kCommit ? "commit" : "abort"))};
  }
  return {};
}

size_t ProducerState::stage(const ProducerStamp& stamp, uint32_t last_delta, AppendRange range, Timestamp at) {
  std::lock_guard lock(mu_);
  if (!stamp.idempotent()) return staged_.size();
  Undo undo{stamp.id, std::nullopt, false};
  if (auto it = entries_.find(stamp.id); it != entries_.end()) undo.before = it->second;
  undo.aborted_added = apply_locked(stamp, last_delta, range, at);
  staged_.push_back(std::move(undo));
  return staged_.size();
}

void ProducerState::settle(size_t n, Timestamp now) {
  std::lock_guard lock(mu_);
  // Undone newest first, so each restores what the one before it left.
  for (size_t i = staged_.size(); i > n; --i) {
    Undo& undo = staged_[i - 1];
    if (undo.aborted_added) aborted_.pop_back();
    auto it = entries_.find(undo.id);
    if (!undo.before) {
      if (it != entries_.end()) erase_locked(it);
      continue;
    }
    reopen_locked(undo.id, it != entries_.end() ? it->second.txn_first : std::nullopt, undo.before->txn_first);
    if (it == entries_.end()) {
      // Nothing erases a staged producer's entry before its settle(); should that change, the entry
      // comes back as it was, most recently used.
      it = entries_.emplace(undo.id, *undo.before).first;
      it->second.lru = lru_.insert(lru_.end(), undo.id);
      if (limits_ != nullptr) ++limits_->count;
      continue;
    }
    const std::list<int64_t>::iterator place = it->second.lru;
    it->second = *undo.before;
    it->second.lru = place;
  }
  staged_.clear();
  bound_locked(now);
  publish_locked();
}

void ProducerState::replay(const ProducerStamp& stamp, uint32_t last_delta, AppendRange range, Timestamp at) {
  if (!stamp.idempotent() || stamp.txn == TxnRole::kOtherControl) return;
  std::lock_guard lock(mu_);
  apply_locked(stamp, last_delta, range, at);
  publish_locked();
}

void ProducerState::reopen_locked(int64_t id, const std::optional<Offset>& was, const std::optional<Offset>& now) {
  if (was == now) return;
  if (was) open_.erase({was->value, id});
  if (now) open_.emplace(now->value, id);
}

void ProducerState::publish_locked() {
  first_open_.store(open_.empty() ? kNoneOpen : open_.begin()->first, std::memory_order_release);
}

bool ProducerState::end_txn_locked(const ProducerStamp& stamp, Offset marker) {
  auto it = entries_.find(stamp.id);
  // Replayed from a log whose producer state was dropped (expired before a snapshot): nothing to end.
  if (it == entries_.end()) return false;
  Entry& e = it->second;
  if (stamp.epoch > e.epoch) {
    e.epoch = stamp.epoch;
    e.head = 0;
    e.count = 0;
  }
  bool aborted = false;
  if (e.txn_first) {
    if (stamp.txn == TxnRole::kAbort) {
      aborted_.push_back({stamp.id, *e.txn_first, marker});
      aborted = true;
    }
    reopen_locked(stamp.id, e.txn_first, std::nullopt);
    e.txn_first.reset();
  }
  return aborted;
}

bool ProducerState::apply_locked(const ProducerStamp& stamp, uint32_t last_delta, AppendRange range, Timestamp at) {
  if (stamp.marker()) {
    const bool aborted = end_txn_locked(stamp, range.first);
    if (auto it = entries_.find(stamp.id); it != entries_.end()) touch_locked(it->second, at);
    return aborted;
  }
  auto [it, created] = entries_.try_emplace(stamp.id);
  Entry& e = it->second;
  if (created) {
    e.epoch = stamp.epoch;
    e.lru = lru_.insert(lru_.end(), stamp.id);
    if (limits_ != nullptr) ++limits_->count;
  } else if (stamp.epoch != e.epoch) {
    e.epoch = stamp.epoch;
    e.head = 0;
    e.count = 0;
  }
  e.push({stamp.first_sequence, last_sequence(stamp.first_sequence, last_delta), range});
  if (stamp.txn == TxnRole::kData && !e.txn_first) {
    e.txn_first = range.first;
    reopen_locked(stamp.id, std::nullopt, e.txn_first);
  }
  touch_locked(e, at);
  return false;
}

void ProducerState::touch_locked(Entry& e, Timestamp at) {
  e.last_used = std::max(e.last_used, at);
  // Moved to the back in place: the node, and the iterator the entry keeps, stay as they are.
  lru_.splice(lru_.end(), lru_, e.lru);
}

void ProducerState::erase_locked(std::unordered_map<int64_t, Entry>::iterator it) {
  reopen_locked(it->first, it->second.txn_first, std::nullopt);
  lru_.erase(it->second.lru);
  entries_.erase(it);
  if (limits_ != nullptr) --limits_->count;
}

void ProducerState::bound_locked(Timestamp now) {
  if (limits_ == nullptr) return;
  ProducerLimits& limits = *limits_;
  const int64_t idle_before = now.micros - limits.idle_expiry.count();
  // A producer with a transaction open stays, however idle: its transaction holds the last stable
  // offset until the coordinator ends it.
  for (auto lit = lru_.begin(); lit != lru_.end();) {
    auto it = entries_.find(*lit++);
    if (it->second.last_used.micros >= idle_before) break;
    if (it->second.txn_first) continue;
    erase_locked(it);
    limits.expirations.fetch_add(1, std::memory_order_relaxed);
  }
  // Over the broker-wide bound, this partition gives up its least recently used producers, never the
  // one it used last.
  for (auto lit = lru_.begin(); limits.count > limits.max_producers && entries_.size() > 1 &&
                                 lit != lru_.end() && std::next(lit) != lru_.end();) {
    auto it = entries_.find(*lit++);
    if (it->second.txn_first) continue;
    erase_locked(it);
    limits.evictions.fetch_add(1, std::memory_order_relaxed);
  }
}

size_t ProducerState::expire(Timestamp now) {
  std::lock_guard lock(mu_);
  if (!staged_.empty()) return 0;  // a group is being written: its next settle() bounds the state
  const size_t before = entries_.size();
  bound_locked(now);
  return before - entries_.size();
}

size_t ProducerState::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

void ProducerState::append_entry_locked(std::string& out, int64_t id, const Entry& e) const {
  append64(out, static_cast<uint64_t>(id));
  append16(out, static_cast<uint16_t>(e.epoch));
  append64(out, static_cast<uint64_t>(e.last_used.micros));
  append64(out, e.txn_first ? e.txn_first->value : kNoTxn);
  out.push_back(static_cast<char>(e.count));
  for (uint8_t i = 0; i < e.count; ++i) {
    const Batch& b = e.batches[(e.head + i) % kBatchesKept];
    append32(out, static_cast<uint32_t>(b.first_sequence));
    append32(out, static_cast<uint32_t>(b.last_sequence));
    append64(out, b.range.first.value);
    append64(out, b.range.last.value);
  }
}

std::string ProducerState::snapshot(Offset end) const {
  std::lock_guard lock(mu_);
  std::string out;
  out.reserve(1 + 8 + 4 + entries_.size() * (kEntryFixedBytes + kBatchesKept * kBatchBytes) + 4);
  out.push_back(static_cast<char>(kSnapshotVersion));
  append64(out, end.value);
  append32(out, static_cast<uint32_t>(entries_.size()));
  // Least recently used first, so that a load rebuilds the same order.
  for (int64_t id : lru_) append_entry_locked(out, id, entries_.at(id));
  append_aborted(out, aborted_);
  append32(out, crc32c(out));
  return out;
}

std::string ProducerState::snapshot_of(const std::vector<int64_t>& ids) const {
  std::lock_guard lock(mu_);
  std::string body;
  uint32_t n = 0;
  for (int64_t id : lru_) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) continue;
    append_entry_locked(body, id, entries_.at(id));
    ++n;
  }
  std::vector<AbortedTxn> theirs;
  for (const AbortedTxn& a : aborted_) {
    if (std::find(ids.begin(), ids.end(), a.producer_id) != ids.end()) theirs.push_back(a);
  }
  std::string out;
  out.push_back(static_cast<char>(kSnapshotVersion));
  append64(out, 0);
  append32(out, n);
  out += body;
  append_aborted(out, theirs);
  append32(out, crc32c(out));
  return out;
}

bool ProducerState::parse(std::string_view bytes, Offset& end, std::vector<std::pair<int64_t, Entry>>& entries,
                          std::vector<AbortedTxn>& aborted) {
  constexpr size_t kFixed = 1 + 8 + 4;  // version, end, entry count
  if (bytes.size() < kFixed + 4) return false;
  const std::string_view body = bytes.substr(0, bytes.size() - 4);
  if (crc32c(body) != coding::get_fixed32(bytes.data() + body.size())) return false;
  const auto version = static_cast<uint8_t>(body[0]);
  if (version != 1 && version != kSnapshotVersion) return false;
  const size_t fixed = version == 1 ? kV1EntryFixedBytes : kEntryFixedBytes;
  end = Offset(coding::get_fixed64(body.data() + 1));
  const uint32_t n = coding::get_fixed32(body.data() + 9);
  std::string_view rest = body.substr(kFixed);
  for (uint32_t i = 0; i < n; ++i) {
    if (rest.size() < fixed) return false;
    const auto id = static_cast<int64_t>(coding::get_fixed64(rest.data()));
    Entry e;
    e.epoch = static_cast<int16_t>(get16(rest.data() + 8));
    e.last_used = Timestamp(static_cast<int64_t>(coding::get_fixed64(rest.data() + 10)));
    if (version != 1) {
      if (const uint64_t first = coding::get_fixed64(rest.data() + 18); first != kNoTxn) e.txn_first = Offset(first);
    }
    const uint8_t count = static_cast<uint8_t>(rest[fixed - 1]);
    rest.remove_prefix(fixed);
    // Version 2 keeps a producer whose epoch a marker moved on before it wrote again: no batches.
    if (id < 0 || (version == 1 && count == 0) || count > kBatchesKept || rest.size() < count * kBatchBytes) {
      return false;
    }
    for (uint8_t b = 0; b < count; ++b) {
      e.push({static_cast<int32_t>(coding::get_fixed32(rest.data())),
              static_cast<int32_t>(coding::get_fixed32(rest.data() + 4)),
              {Offset(coding::get_fixed64(rest.data() + 8)), Offset(coding::get_fixed64(rest.data() + 16))}});
      rest.remove_prefix(kBatchBytes);
    }
    entries.emplace_back(id, e);
  }
  if (version == 1) return rest.empty();
  if (rest.size() < 4) return false;
  const uint32_t m = coding::get_fixed32(rest.data());
  rest.remove_prefix(4);
  if (rest.size() != size_t{m} * kAbortedBytes) return false;
  for (uint32_t i = 0; i < m; ++i, rest.remove_prefix(kAbortedBytes)) {
    aborted.push_back({static_cast<int64_t>(coding::get_fixed64(rest.data())), Offset(coding::get_fixed64(rest.data() + 8)),
                       Offset(coding::get_fixed64(rest.data() + 16))});
  }
  return true;
}

void ProducerState::insert_locked(std::vector<std::pair<int64_t, Entry>>& entries) {
  for (auto& [id, e] : entries) {
    if (auto old = entries_.find(id); old != entries_.end()) {
      reopen_locked(id, old->second.txn_first, std::nullopt);
      lru_.erase(old->second.lru);
      entries_.erase(old);
    } else if (limits_ != nullptr) {
      ++limits_->count;
    }
    e.lru = lru_.insert(lru_.end(), id);
    reopen_locked(id, std::nullopt, e.txn_first);
    entries_.emplace(id, std::move(e));
  }
}

std::optional<Offset> ProducerState::load(std::string_view bytes) {
  Offset end;
  std::vector<std::pair<int64_t, Entry>> loaded;
  std::vector<AbortedTxn> aborted;
  if (!parse(bytes, end, loaded, aborted)) return std::nullopt;
  std::lock_guard lock(mu_);
  if (limits_ != nullptr) limits_->count -= entries_.size();
  entries_.clear();
  lru_.clear();
  staged_.clear();
  open_.clear();
  insert_locked(loaded);
  aborted_ = std::move(aborted);
  publish_locked();
  return end;
}

bool ProducerState::merge(std::string_view bytes) {
  Offset end;
  std::vector<std::pair<int64_t, Entry>> loaded;
  std::vector<AbortedTxn> aborted;
  if (!parse(bytes, end, loaded, aborted)) return false;
  std::lock_guard lock(mu_);
  // What this state holds of the merged producers is replaced, their aborted transactions with it.
  for (const auto& [id, e] : loaded) {
    std::erase_if(aborted_, [id = id](const AbortedTxn& a) { return a.producer_id == id; });
  }
  insert_locked(loaded);
  aborted_.insert(aborted_.end(), aborted.begin(), aborted.end());
  std::sort(aborted_.begin(), aborted_.end(), [](const AbortedTxn& a, const AbortedTxn& b) { return a.marker < b.marker; });
  publish_locked();
  return true;
}

std::optional<Offset> ProducerState::first_open_of(std::string_view bytes) {
  Offset end;
  std::vector<std::pair<int64_t, Entry>> entries;
  std::vector<AbortedTxn> aborted;
  if (bytes.empty() || !parse(bytes, end, entries, aborted)) return std::nullopt;
  std::optional<Offset> first;
  for (const auto& [id, e] : entries) {
    if (e.txn_first && (!first || *e.txn_first < *first)) first = e.txn_first;
  }
  return first;
}

std::optional<Offset> ProducerState::first_open() const {
  const uint64_t first = first_open_.load(std::memory_order_acquire);
  if (first == kNoneOpen) return std::nullopt;
  return Offset(first);
}

size_t ProducerState::open_transactions() const {
  std::lock_guard lock(mu_);
  return open_.size();
}

std::vector<ProducerIdentity> ProducerState::open_producers() const {
  std::lock_guard lock(mu_);
  std::vector<ProducerIdentity> out;
  out.reserve(open_.size());
  for (const auto& [first, id] : open_) out.push_back({id, entries_.at(id).epoch});
  return out;
}

std::vector<OpenTxn> ProducerState::open_txns() const {
  std::lock_guard lock(mu_);
  std::vector<OpenTxn> out;
  out.reserve(open_.size());
  for (const auto& [first, id] : open_) out.push_back({{id, entries_.at(id).epoch}, Offset(first)});
  return out;
}

std::vector<AbortedTxn> ProducerState::aborted_between(Offset from, Offset to) const {
  std::lock_guard lock(mu_);
  std::vector<AbortedTxn> out;
  // Ordered by marker: those ending at or before `from` are skipped at once.
  auto it = std::upper_bound(aborted_.begin(), aborted_.end(), from,
                             [](Offset o, const AbortedTxn& a) { return o < a.marker; });
  for (; it != aborted_.end(); ++it) {
    if (it->first < to) out.push_back(*it);
  }
  return out;
}

void ProducerState::forget_aborted_before(Offset start) {
  std::lock_guard lock(mu_);
  std::erase_if(aborted_, [start](const AbortedTxn& a) { return a.marker < start; });
}

}  // namespace streamd
