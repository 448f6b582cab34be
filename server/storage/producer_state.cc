#include "server/storage/producer_state.h"

#include <algorithm>
#include <limits>

#include "server/storage/coding.h"
#include "server/storage/crc32c.h"

namespace streamd {
namespace {

constexpr uint8_t kSnapshotVersion = 1;
constexpr size_t kEntryFixedBytes = 8 + 2 + 8 + 1;  // id, epoch, last_used, batch count
constexpr size_t kBatchBytes = 4 + 4 + 8 + 8;       // first and last sequence, first and last offset

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

}  // namespace

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
  auto it = entries_.find(stamp.id);
  if (it == entries_.end()) {
    if (stamp.first_sequence < 0) out = {Verdict::kRefused, {}, out_of_order(stamp, 0)};
    return out;
  }
  const Entry& e = it->second;
  if (stamp.epoch < e.epoch) {
    out.verdict = Verdict::kRefused;
    out.refusal = Status(Code::kProducerFenced,
                         "A newer epoch of this producer id has written to the partition: epoch " +
                             std::to_string(e.epoch) + ", the batch's " + std::to_string(stamp.epoch),
                         {{"producer_id", std::to_string(stamp.id)},
                          {"epoch", std::to_string(stamp.epoch)},
                          {"current_epoch", std::to_string(e.epoch)}});
    return out;
  }
  if (stamp.epoch > e.epoch) {
    if (stamp.first_sequence != 0) out = {Verdict::kRefused, {}, out_of_order(stamp, 0)};
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
  const int32_t expected = next_sequence(e.newest().last_sequence);
  if (stamp.first_sequence != expected) out = {Verdict::kRefused, {}, out_of_order(stamp, expected)};
  return out;
}

size_t ProducerState::stage(const ProducerStamp& stamp, uint32_t last_delta, AppendRange range, Timestamp at) {
  std::lock_guard lock(mu_);
  if (!stamp.idempotent()) return staged_.size();
  Undo undo{stamp.id, std::nullopt};
  if (auto it = entries_.find(stamp.id); it != entries_.end()) undo.before = it->second;
  staged_.push_back(std::move(undo));
  apply_locked(stamp, last_delta, range, at);
  return staged_.size();
}

void ProducerState::settle(size_t n, Timestamp now) {
  std::lock_guard lock(mu_);
  // Undone newest first, so each restores what the one before it left.
  for (size_t i = staged_.size(); i > n; --i) {
    Undo& undo = staged_[i - 1];
    auto it = entries_.find(undo.id);
    if (!undo.before) {
      if (it != entries_.end()) erase_locked(it);
      continue;
    }
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
}

void ProducerState::replay(const ProducerStamp& stamp, uint32_t last_delta, AppendRange range, Timestamp at) {
  if (!stamp.idempotent()) return;
  std::lock_guard lock(mu_);
  apply_locked(stamp, last_delta, range, at);
}

void ProducerState::apply_locked(const ProducerStamp& stamp, uint32_t last_delta, AppendRange range, Timestamp at) {
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
  touch_locked(e, stamp.id, at);
}

void ProducerState::touch_locked(Entry& e, int64_t id, Timestamp at) {
  e.last_used = std::max(e.last_used, at);
  lru_.erase(e.lru);
  e.lru = lru_.insert(lru_.end(), id);
}

void ProducerState::erase_locked(std::unordered_map<int64_t, Entry>::iterator it) {
  lru_.erase(it->second.lru);
  entries_.erase(it);
  if (limits_ != nullptr) --limits_->count;
}

void ProducerState::bound_locked(Timestamp now) {
  if (limits_ == nullptr) return;
  ProducerLimits& limits = *limits_;
  const int64_t idle_before = now.micros - limits.idle_expiry.count();
  while (!lru_.empty()) {
    auto it = entries_.find(lru_.front());
    if (it->second.last_used.micros >= idle_before) break;
    erase_locked(it);
    limits.expirations.fetch_add(1, std::memory_order_relaxed);
  }
  // Over the broker-wide bound, this partition gives up its least recently used producers, never the
  // one it used last.
  while (limits.count > limits.max_producers && entries_.size() > 1) {
    erase_locked(entries_.find(lru_.front()));
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
  std::string out;
  out.push_back(static_cast<char>(kSnapshotVersion));
  append64(out, 0);
  append32(out, n);
  out += body;
  append32(out, crc32c(out));
  return out;
}

bool ProducerState::parse(std::string_view bytes, Offset& end, std::vector<std::pair<int64_t, Entry>>& entries) {
  constexpr size_t kFixed = 1 + 8 + 4;  // version, end, entry count
  if (bytes.size() < kFixed + 4) return false;
  const std::string_view body = bytes.substr(0, bytes.size() - 4);
  if (crc32c(body) != coding::get_fixed32(bytes.data() + body.size())) return false;
  if (static_cast<uint8_t>(body[0]) != kSnapshotVersion) return false;
  end = Offset(coding::get_fixed64(body.data() + 1));
  const uint32_t n = coding::get_fixed32(body.data() + 9);
  std::string_view rest = body.substr(kFixed);
  for (uint32_t i = 0; i < n; ++i) {
    if (rest.size() < kEntryFixedBytes) return false;
    const auto id = static_cast<int64_t>(coding::get_fixed64(rest.data()));
    Entry e;
    e.epoch = static_cast<int16_t>(get16(rest.data() + 8));
    e.last_used = Timestamp(static_cast<int64_t>(coding::get_fixed64(rest.data() + 10)));
    const uint8_t count = static_cast<uint8_t>(rest[18]);
    rest.remove_prefix(kEntryFixedBytes);
    if (id < 0 || count == 0 || count > kBatchesKept || rest.size() < count * kBatchBytes) return false;
    for (uint8_t b = 0; b < count; ++b) {
      e.push({static_cast<int32_t>(coding::get_fixed32(rest.data())),
              static_cast<int32_t>(coding::get_fixed32(rest.data() + 4)),
              {Offset(coding::get_fixed64(rest.data() + 8)), Offset(coding::get_fixed64(rest.data() + 16))}});
      rest.remove_prefix(kBatchBytes);
    }
    entries.emplace_back(id, e);
  }
  return rest.empty();
}

void ProducerState::insert_locked(std::vector<std::pair<int64_t, Entry>>& entries) {
  for (auto& [id, e] : entries) {
    if (auto old = entries_.find(id); old != entries_.end()) {
      lru_.erase(old->second.lru);
      entries_.erase(old);
    } else if (limits_ != nullptr) {
      ++limits_->count;
    }
    e.lru = lru_.insert(lru_.end(), id);
    entries_.emplace(id, std::move(e));
  }
}

std::optional<Offset> ProducerState::load(std::string_view bytes) {
  Offset end;
  std::vector<std::pair<int64_t, Entry>> loaded;
  if (!parse(bytes, end, loaded)) return std::nullopt;
  std::lock_guard lock(mu_);
  if (limits_ != nullptr) limits_->count -= entries_.size();
  entries_.clear();
  lru_.clear();
  staged_.clear();
  insert_locked(loaded);
  return end;
}

bool ProducerState::merge(std::string_view bytes) {
  Offset end;
  std::vector<std::pair<int64_t, Entry>> loaded;
  if (!parse(bytes, end, loaded)) return false;
  std::lock_guard lock(mu_);
  insert_locked(loaded);
  return true;
}

}  // namespace streamd
