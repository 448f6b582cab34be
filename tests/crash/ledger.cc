#include "tests/crash/ledger.h"

namespace streamd::crash {

const char* life_name(Life life) {
  switch (life) {
    case Life::kCreating: return "being created";
    case Life::kLive: return "live";
    case Life::kDeleting: return "being deleted";
    case Life::kGone: return "deleted";
  }
  return "?";
}

std::vector<Target> Ledger::live() const {
  std::lock_guard lock(mu_);
  std::vector<Target> out;
  for (const auto& [name, inc] : incarnations_) {
    if (inc->life == Life::kLive) out.push_back({name, inc->number, inc->partitions});
  }
  return out;
}

Incarnation* Ledger::find_locked(const Target& target) {
  auto it = incarnations_.find(target.name);
  if (it == incarnations_.end() || it->second->number != target.incarnation) return nullptr;
  return it->second.get();
}

Batch Ledger::begin_batch(const Target& target, uint32_t count) {
  std::lock_guard lock(mu_);
  Batch b;
  b.id = next_batch_++;
  b.stream = target.name;
  b.incarnation = target.incarnation;
  b.count = count;
  batches_.emplace(b.id, b);
  return b;
}

void Ledger::stamped(uint64_t batch, const Stamp& stamp) {
  std::lock_guard lock(mu_);
  if (auto it = batches_.find(batch); it != batches_.end()) it->second.stamp = stamp;
}

void Ledger::resend_begun(const Batch& batch) {
  std::lock_guard lock(mu_);
  Batch b = batch;
  b.outcome = Outcome::kInFlight;
  batches_.insert_or_assign(b.id, b);
}

void Ledger::add_durable_locked(Incarnation& inc, int32_t partition, uint64_t offset, uint64_t batch,
                                uint32_t index, const char* how) {
  if (partition < 0 || partition >= inc.partitions) {
    failures_.push_back("stream " + inc.name + ": a record " + how + " on partition " + std::to_string(partition) +
                        ", which it does not have");
    return;
  }
  auto [it, inserted] = inc.parts[static_cast<size_t>(partition)].durable.try_emplace(offset, batch, index);
  if (!inserted && it->second != std::make_pair(batch, index)) {
    failures_.push_back("stream " + inc.name + " partition " + std::to_string(partition) + " offset " +
                        std::to_string(offset) + ": " + how + " as batch " + std::to_string(batch) + " record " +
                        std::to_string(index) + ", but known to hold batch " + std::to_string(it->second.first) +
                        " record " + std::to_string(it->second.second));
  }
}

void Ledger::acknowledged(uint64_t batch, int32_t partition, uint64_t first, uint64_t last) {
  std::lock_guard lock(mu_);
  auto it = batches_.find(batch);
  if (it == batches_.end()) return;
  Batch& b = it->second;
  b.outcome = Outcome::kAcknowledged;
  b.partition = partition;
  b.first = first;
  if (last + 1 - first != b.count) {
    failures_.push_back("batch " + std::to_string(batch) + " of " + std::to_string(b.count) +
                        " records acknowledged at offsets " + std::to_string(first) + ".." + std::to_string(last));
  }
  Incarnation* inc = find_locked({b.stream, b.incarnation, 0});
  if (inc == nullptr || inc->life == Life::kGone) return;
  for (uint32_t i = 0; i < b.count; ++i) add_durable_locked(*inc, partition, first + i, batch, i, "acknowledged");
}

void Ledger::refused(uint64_t batch, const std::string& error) {
  std::lock_guard lock(mu_);
  auto it = batches_.find(batch);
  if (it == batches_.end()) return;
  it->second.outcome = Outcome::kRefused;
  it->second.error = error;
}

void Ledger::unanswered(uint64_t batch) {
  std::lock_guard lock(mu_);
  auto it = batches_.find(batch);
  if (it != batches_.end() && it->second.outcome == Outcome::kInFlight) it->second.outcome = Outcome::kUnanswered;
}

void Ledger::read_by_consumer(const Target& target, int32_t partition,
                              const std::vector<std::pair<uint64_t, std::string>>& records) {
  std::lock_guard lock(mu_);
  Incarnation* inc = find_locked(target);
  if (inc == nullptr || inc->life == Life::kGone) return;
  for (const auto& [offset, payload] : records) {
    auto id = parse_payload(payload);
    if (!id) {
      failures_.push_back("stream " + target.name + " partition " + std::to_string(partition) + " offset " +
                          std::to_string(offset) + ": a reader got a record the harness never sent");
      continue;
    }
    if (id->stream != target.name || id->incarnation != target.incarnation) {
      failures_.push_back("stream " + target.name + "#" + std::to_string(target.incarnation) + " partition " +
                          std::to_string(partition) + ": a reader got a record of " + id->stream + "#" +
                          std::to_string(id->incarnation));
      continue;
    }
    add_durable_locked(*inc, partition, offset, id->batch, id->index, "read by a consumer");
  }
}

size_t Ledger::commit_sent(const Target& target, const std::string& group, int32_t partition, uint64_t next) {
  std::lock_guard lock(mu_);
  Incarnation* inc = find_locked(target);
  if (inc == nullptr) return 0;
  auto& truth = inc->groups[{group, partition}];
  truth.sent.push_back(next);
  return truth.sent.size() - 1;
}

void Ledger::commit_acknowledged(const Target& target, const std::string& group, int32_t partition, size_t index) {
  std::lock_guard lock(mu_);
  Incarnation* inc = find_locked(target);
  if (inc == nullptr) return;
  auto& truth = inc->groups[{group, partition}];
  if (index < truth.sent.size()) truth.last_acked = std::max(truth.last_acked, static_cast<int>(index));
}

void Ledger::trim_sent(const Target& target, int32_t partition, uint64_t before) {
  std::lock_guard lock(mu_);
  Incarnation* inc = find_locked(target);
  if (inc == nullptr || partition < 0 || partition >= inc->partitions) return;
  inc->parts[static_cast<size_t>(partition)].trims.push_back(before);
}

void Ledger::trim_acknowledged(const Target& target, int32_t partition, uint64_t first) {
  std::lock_guard lock(mu_);
  Incarnation* inc = find_locked(target);
  if (inc == nullptr || partition < 0 || partition >= inc->partitions) return;
  auto& part = inc->parts[static_cast<size_t>(partition)];
  part.first_floor = std::max(part.first_floor, first);
}

uint64_t Ledger::create_sent(const std::string& name, int32_t partitions, int64_t segment_bytes) {
  std::lock_guard lock(mu_);
  auto inc = std::make_unique<Incarnation>();
  inc->name = name;
  inc->number = ++next_incarnation_[name];
  inc->partitions = partitions;
  inc->segment_bytes = segment_bytes;
  inc->parts.resize(static_cast<size_t>(partitions));
  const uint64_t number = inc->number;
  incarnations_[name] = std::move(inc);
  return number;
}

void Ledger::create_acknowledged(const std::string& name, uint64_t incarnation, int64_t created_at_us) {
  std::lock_guard lock(mu_);
  auto it = incarnations_.find(name);
  if (it == incarnations_.end() || it->second->number != incarnation) return;
  it->second->life = Life::kLive;
  it->second->decided = true;
  if (created_at_us != 0) it->second->created_at_us = created_at_us;
}

void Ledger::create_refused(const std::string& name, uint64_t incarnation) {
  std::lock_guard lock(mu_);
  auto it = incarnations_.find(name);
  if (it != incarnations_.end() && it->second->number == incarnation) it->second->life = Life::kGone;
}

void Ledger::delete_refused(const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = incarnations_.find(name);
  if (it != incarnations_.end() && it->second->life == Life::kDeleting) it->second->life = Life::kLive;
}

void Ledger::delete_sent(const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = incarnations_.find(name);
  if (it != incarnations_.end() && it->second->life == Life::kLive) it->second->life = Life::kDeleting;
}

void Ledger::delete_acknowledged(const std::string& name) {
  std::lock_guard lock(mu_);
  deletes_acknowledged_.insert(name);
  auto it = incarnations_.find(name);
  if (it == incarnations_.end()) return;
  it->second->life = Life::kGone;
  it->second->decided = true;
}

std::vector<std::string> Ledger::free_names(const std::vector<std::string>& pool) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& name : pool) {
    auto it = incarnations_.find(name);
    if (it == incarnations_.end() || it->second->life == Life::kGone) out.push_back(name);
  }
  return out;
}

void Ledger::fail(std::string what) {
  std::lock_guard lock(mu_);
  failures_.push_back(std::move(what));
}

std::vector<std::string> Ledger::failures() const {
  std::lock_guard lock(mu_);
  return failures_;
}

}  // namespace streamd::crash
