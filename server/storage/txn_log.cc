#include "server/storage/txn_log.h"

#include <algorithm>
#include <climits>

#include <spdlog/spdlog.h>

#include "server/storage/coding.h"
#include "server/storage/crc32c.h"

namespace streamd {
namespace {

namespace fmt = txn_log_format;

void put_string(std::string& out, std::string_view s) {
  coding::append_varint(out, s.size());
  out += s;
}

std::string body_of(uint8_t type, std::string_view id) {
  std::string body(1, static_cast<char>(type));
  put_string(body, id);
  return body;
}

std::string header_body(const TxnHeader& h) {
  std::string body = body_of(fmt::kHeaderType, h.id);
  coding::append_varint(body, static_cast<uint64_t>(h.producer_id));
  coding::append_varint(body, static_cast<uint16_t>(h.epoch));
  coding::append_varint(body, static_cast<uint32_t>(h.timeout_ms));
  body.push_back(static_cast<char>(h.status));
  coding::append_zigzag(body, h.started_at.micros);
  return body;
}

std::string partitions_body(std::string_view id, const std::vector<TxnPartition>& partitions) {
  std::string body = body_of(fmt::kPartitionsType, id);
  coding::append_varint(body, partitions.size());
  for (const TxnPartition& p : partitions) {
    put_string(body, p.stream);
    coding::append_varint(body, static_cast<uint32_t>(p.partition));
  }
  return body;
}

std::string group_body(std::string_view id, std::string_view group) {
  std::string body = body_of(fmt::kGroupType, id);
  put_string(body, group);
  return body;
}

std::string offset_body(std::string_view id, const TxnOffset& o) {
  std::string body = body_of(fmt::kOffsetType, id);
  put_string(body, o.group);
  put_string(body, o.at.stream);
  coding::append_varint(body, static_cast<uint32_t>(o.at.partition));
  coding::append_varint(body, o.next.value);
  put_string(body, o.metadata);
  return body;
}

bool get_partition(std::string_view& in, TxnPartition& out) {
  std::string_view stream;
  uint64_t partition = 0;
  if (!coding::get_length_prefixed(in, stream) || stream.empty() || !coding::get_varint(in, partition) ||
      partition > INT32_MAX) {
    return false;
  }
  out = {std::string(stream), static_cast<int32_t>(partition)};
  return true;
}

bool get_status(char c, TxnStatus& out) {
  const auto v = static_cast<uint8_t>(c);
  if (v < static_cast<uint8_t>(TxnStatus::kEmpty) || v > static_cast<uint8_t>(TxnStatus::kCompleteAbort))
    return false;
  out = static_cast<TxnStatus>(v);
  return true;
}

}  // namespace

const char* txn_status_name(TxnStatus s) {
  switch (s) {
    case TxnStatus::kEmpty:
      return "Empty";
    case TxnStatus::kOngoing:
      return "Ongoing";
    case TxnStatus::kPrepareCommit:
      return "PrepareCommit";
    case TxnStatus::kPrepareAbort:
      return "PrepareAbort";
    case TxnStatus::kCompleteCommit:
      return "CompleteCommit";
    case TxnStatus::kCompleteAbort:
      return "CompleteAbort";
  }
  return "unknown";
}

Result<std::unique_ptr<TxnLog>> TxnLog::open(FileSystem& fs, std::string data_dir, Executor& executor,
                                             RecordLogOptions options) {
  std::unique_ptr<TxnLog> txns(new TxnLog());
  auto log = RecordLog::open(fs, std::move(data_dir), fmt::kFormat, executor, options, *txns);
  if (!log.ok()) return log.status();
  txns->log_ = std::move(log).value();
  return txns;
}

std::unique_ptr<TxnLog> TxnLog::in_memory() {
  return std::unique_ptr<TxnLog>(new TxnLog());
}

Result<std::unique_ptr<TxnLog>> TxnLog::over(std::unique_ptr<TxnStore> store) {
  std::unique_ptr<TxnLog> txns(new TxnLog());
  txns->store_ = std::move(store);
  STREAMD_RETURN_IF_ERROR(txns->refresh());
  return txns;
}

std::optional<TxnEntry> TxnLog::entry_of(const TxnStore::Row& row) {
  std::map<std::string, TxnEntry> entries;
  std::string_view rest = row.records;
  while (!rest.empty()) {
    if (rest.size() < RecordLog::kRecordHeaderSize) return std::nullopt;
    const uint32_t size = coding::get_fixed32(rest.data());
    const uint32_t crc = coding::get_fixed32(rest.data() + 4);
    rest.remove_prefix(RecordLog::kRecordHeaderSize);
    if (rest.size() < size) return std::nullopt;
    const std::string_view body = rest.substr(0, size);
    if (crc32c(body) != crc || !apply_record(entries, body)) return std::nullopt;
    rest.remove_prefix(size);
  }
  auto it = entries.find(row.id);
  if (entries.size() != 1 || it == entries.end()) return std::nullopt;
  return std::move(it->second);
}

void TxnLog::put_locked(const std::string& id, std::optional<TxnEntry> entry) {
  const uint64_t before = live_size_locked(id);
  if (entry) {
    entries_[id] = std::move(*entry);
  } else {
    entries_.erase(id);
  }
  live_bytes_.store(live_bytes_.load(std::memory_order_relaxed) - before + live_size_locked(id),
                    std::memory_order_relaxed);
}

Status TxnLog::refresh() {
  if (!store_) return Status();
  auto rows = store_->load();
  if (!rows.ok()) return rows.status();
  std::unique_lock lock(mu_);
  for (const TxnStore::Row& row : *rows) {
    auto known = versions_.find(row.id);
    if (known != versions_.end() && known->second >= row.version) continue;
    std::optional<TxnEntry> entry = entry_of(row);
    if (!entry) {
      return Status(Code::kStreamBackendFailed, "a transactional id's row does not parse",
                    {{"transactional_id", row.id}});
    }
    put_locked(row.id, std::move(entry));
    versions_[row.id] = row.version;
  }
  return Status();
}

void TxnLog::write_row(std::string body, std::optional<TxnStore::End> end, Done done) {
  const std::optional<std::string> parsed = id_of(body);
  if (!parsed) return done(Status(Code::kStreamBackendFailed, "a transactions record without an id"));
  const std::string& id = *parsed;
  {
    // One write per id at a time, each from the state the one before left: callers may change an id
    // in parallel (a group's offsets are staged together), and a row's version admits one of them.
    std::lock_guard lock(row_writes_mu_);
    std::deque<RowWrite>& queue = row_writes_[id];
    queue.push_back({std::move(body), std::move(end), std::move(done)});
    if (queue.size() > 1) return;
  }
  write_next_row(id);
}

void TxnLog::write_next_row(const std::string& id) {
  std::string body;
  std::optional<TxnStore::End> end;
  {
    std::lock_guard lock(row_writes_mu_);
    const RowWrite& w = row_writes_.at(id).front();
    body = w.body;
    end = w.end;
  }
  // The id's next state, written whole: the row holds its live records, as a rewrite of the file would.
  std::map<std::string, TxnEntry> next;
  uint64_t version = 0;
  {
    std::shared_lock lock(mu_);
    if (auto it = entries_.find(id); it != entries_.end()) next.emplace(*it);
    if (auto v = versions_.find(id); v != versions_.end()) version = v->second;
  }
  if (!apply_record(next, body)) {
    return row_written(id, Status(Code::kStreamBackendFailed, "a transactions record does not apply",
                                  {{"transactional_id", id}}));
  }
  std::optional<TxnEntry> entry;
  std::string records;
  if (auto it = next.find(id); it != next.end()) {
    entry = it->second;
    append_live(records, *entry);
  }
  store_->write(id, version, std::move(records), std::move(end),
                [this, id, entry = std::move(entry)](TxnStore::Written w) mutable {
    if (!w.status.ok()) return row_written(id, std::move(w.status));
    {
      std::unique_lock lock(mu_);
      // On a conflict another broker changed the id first: its state is taken, and the request that
      // meant to change it is answered retriable.
      std::optional<TxnEntry> kept = w.conflict ? (w.row ? entry_of(*w.row) : std::nullopt) : std::move(entry);
      const bool held = kept.has_value();
      put_locked(id, std::move(kept));
      if (w.row && held) {
        versions_[id] = w.row->version;
      } else {
        versions_.erase(id);
      }
    }
    if (w.conflict) {
      return row_written(id, Status(Code::kConcurrentTransactions,
                                    "another broker changed the transactional id's state first; retry",
                                    {{"transactional_id", id}}));
    }
    row_written(id, Status());
  });
}

void TxnLog::row_written(const std::string& id, Status s) {
  Done done;
  bool more = false;
  {
    std::lock_guard lock(row_writes_mu_);
    auto it = row_writes_.find(id);
    done = std::move(it->second.front().done);
    it->second.pop_front();
    more = !it->second.empty();
    if (!more) row_writes_.erase(it);
  }
  done(std::move(s));
  if (more) write_next_row(id);
}

TxnLog::~TxnLog() {
  close();
}

void TxnLog::close() {
  if (log_) log_->close();
}

bool TxnLog::apply(std::string_view body) {
  // Only the record's id changes: its live records are counted again, before and after.
  const std::optional<std::string> id = id_of(body);
  if (!id) return false;
  const uint64_t before = live_size_locked(*id);
  const bool applied = apply_record(entries_, body);
  live_bytes_.store(live_bytes_.load(std::memory_order_relaxed) - before + live_size_locked(*id),
                    std::memory_order_relaxed);
  return applied;
}

std::optional<std::string> TxnLog::id_of(std::string_view body) {
  std::string_view rest = body.substr(std::min<size_t>(1, body.size()));
  std::string_view id;
  if (!coding::get_length_prefixed(rest, id)) return std::nullopt;
  return std::string(id);
}

uint64_t TxnLog::live_size_locked(const std::string& id) const {
  auto it = entries_.find(id);
  if (it == entries_.end()) return 0;
  std::string out;
  append_live(out, it->second);
  return out.size();
}

bool TxnLog::apply_record(std::map<std::string, TxnEntry>& entries, std::string_view body) {
  if (body.empty()) return false;
  const auto type = static_cast<uint8_t>(body[0]);
  body.remove_prefix(1);
  std::string_view id;
  if (!coding::get_length_prefixed(body, id) || id.empty()) return false;
  if (type == fmt::kHeaderType) {
    TxnHeader h;
    uint64_t producer = 0;
    uint64_t epoch = 0;
    uint64_t timeout = 0;
    if (!coding::get_varint(body, producer) || producer > INT64_MAX || !coding::get_varint(body, epoch) ||
        epoch > INT16_MAX || !coding::get_varint(body, timeout) || timeout > INT32_MAX || body.empty() ||
        !get_status(body[0], h.status)) {
      return false;
    }
    body.remove_prefix(1);
    const char* p = body.data();
    if (!coding::read_zigzag64(p, body.data() + body.size(), h.started_at.micros)) return false;
    body.remove_prefix(static_cast<size_t>(p - body.data()));
    h.id = std::string(id);
    h.producer_id = static_cast<int64_t>(producer);
    h.epoch = static_cast<int16_t>(epoch);
    h.timeout_ms = static_cast<int32_t>(timeout);
    TxnEntry& e = entries[h.id];
    e.header = std::move(h);
    if (!txn_active(e.header.status)) {
      e.partitions.clear();
      e.groups.clear();
      e.offsets.clear();
    }
    return body.empty();
  }
  if (type == fmt::kForgetType) {
    entries.erase(std::string(id));
    return body.empty();
  }
  // The rest changes a transaction of an id whose header came first.
  auto it = entries.find(std::string(id));
  if (it == entries.end()) return false;
  TxnEntry& e = it->second;
  if (type == fmt::kPartitionsType) {
    uint64_t n = 0;
    if (!coding::get_varint(body, n)) return false;
    for (uint64_t i = 0; i < n; ++i) {
      TxnPartition p;
      if (!get_partition(body, p)) return false;
      e.partitions.insert(std::move(p));
    }
    return body.empty();
  }
  if (type == fmt::kGroupType) {
    std::string_view group;
    if (!coding::get_length_prefixed(body, group) || group.empty()) return false;
    e.groups.emplace(group);
    return body.empty();
  }
  if (type == fmt::kOffsetType) {
    std::string_view group;
    TxnOffset o;
    uint64_t next = 0;
    std::string_view metadata;
    if (!coding::get_length_prefixed(body, group) || group.empty() || !get_partition(body, o.at) ||
        !coding::get_varint(body, next) || !coding::get_length_prefixed(body, metadata)) {
      return false;
    }
    o.group = std::string(group);
    o.next = Offset(next);
    o.metadata = std::string(metadata);
    std::erase_if(e.offsets, [&](const TxnOffset& old) { return old.group == o.group && old.at == o.at; });
    e.offsets.push_back(std::move(o));
    return body.empty();
  }
  return false;
}

bool TxnLog::replay(std::string_view body) {
  std::unique_lock lock(mu_);
  return apply(body);
}

void TxnLog::write(std::string body, Done done) {
  if (store_) return write_row(std::move(body), std::nullopt, std::move(done));
  if (!log_) {
    {
      std::unique_lock lock(mu_);
      apply(body);
    }
    return done(Status());
  }
  if (Status s = ahead_failure(); !s.ok()) return done(std::move(s));
  std::string applied = body;
  log_->append(std::move(body), [this, applied = std::move(applied), done = std::move(done)](Status s) {
    if (s.ok()) {
      std::unique_lock lock(mu_);
      apply(applied);
    }
    // A change written ahead of this one and lost makes this one's success mean nothing: the
    // decision it may carry would leave out partitions that the file does not hold. Answers run in
    // append order, so that failure is known by now.
    if (s.ok()) s = ahead_failure();
    done(std::move(s));
  });
}

Status TxnLog::write_ahead(std::string body, std::function<void(Status)> durable) {
  if (Status s = ahead_failure(); !s.ok()) return s;
  {
    std::unique_lock lock(mu_);
    apply(body);
  }
  log_->append(std::move(body), [this, durable = std::move(durable)](Status s) {
    if (!s.ok() && !ahead_failed_.exchange(true)) {
      spdlog::error("transactions log: a change shown before it was written failed: {}; later changes are "
                    "refused until the broker restarts",
                    s.to_string());
    }
    if (durable) durable(std::move(s));
  });
  return Status();
}

Status TxnLog::ahead_failure() const {
  if (!ahead_failed_.load()) return Status();
  return Status(Code::kStreamBackendFailed,
                "The transactions log could not write a change it had shown; restart the broker to read it again");
}

void TxnLog::join(std::optional<TxnHeader> begin, const std::string& id, std::vector<TxnPartition> partitions,
                  Done done, JoinAnswer answer) {
  if (!log_) {
    // In memory or in a store: one change after the other, each shown once written.
    auto then = [this, id, partitions = std::move(partitions), done = std::move(done)](Status s) mutable {
      if (!s.ok() || partitions.empty()) return done(std::move(s));
      add_partitions(id, std::move(partitions), std::move(done));
    };
    if (begin) return set(std::move(*begin), std::move(then));
    return then(Status());
  }
  {
    std::lock_guard lock(ends_mu_);
    if (auto waiting = ends_ahead_.find(id); waiting != ends_ahead_.end()) {
      waiting->second.push_back([this, begin = std::move(begin), id, partitions = std::move(partitions),
                                 done = std::move(done), answer]() mutable {
        join(std::move(begin), id, std::move(partitions), std::move(done), answer);
      });
      return;
    }
  }
  std::vector<std::string> bodies;
  if (begin) bodies.push_back(header_body(*begin));
  if (!partitions.empty()) bodies.push_back(partitions_body(id, partitions));
  Status s;
  for (size_t i = 0; i < bodies.size() && s.ok(); ++i) {
    if (i + 1 == bodies.size() && answer == JoinAnswer::kWhenDurable) {
      // The log's records are durable in order: the last one's sync covers the join whole.
      s = write_ahead(std::move(bodies[i]), done);
      if (s.ok()) return;
    } else {
      s = write_ahead(std::move(bodies[i]));
    }
  }
  done(std::move(s));
}

void TxnLog::end(TxnHeader ended, Done done) {
  if (!log_) return set(std::move(ended), std::move(done));
  const std::string id = ended.id;
  {
    std::lock_guard lock(ends_mu_);
    ends_ahead_.try_emplace(id);
  }
  // Runs the joins that waited for the end. A failed end failed the log too: they then meet that
  // failure.
  auto release_joins = [this, id](const Status&) {
    std::vector<std::function<void()>> joins;
    {
      std::lock_guard lock(ends_mu_);
      auto it = ends_ahead_.find(id);
      if (it == ends_ahead_.end()) return;
      joins = std::move(it->second);
      ends_ahead_.erase(it);
    }
    for (auto& join : joins) join();
  };
  Status s = write_ahead(header_body(ended), release_joins);
  if (!s.ok()) release_joins(s);
  done(std::move(s));
}

void TxnLog::set(TxnHeader header, Done done) {
  write(header_body(header), std::move(done));
}

void TxnLog::set(TxnHeader header, TxnStore::End end, Done done) {
  write_row(header_body(header), std::move(end), std::move(done));
}

void TxnLog::add_partitions(const std::string& id, std::vector<TxnPartition> partitions, Done done) {
  write(partitions_body(id, partitions), std::move(done));
}

void TxnLog::add_group(const std::string& id, std::string group, Done done) {
  write(group_body(id, group), std::move(done));
}

void TxnLog::stage_offset(const std::string& id, TxnOffset offset, Done done) {
  write(offset_body(id, offset), std::move(done));
}

void TxnLog::forget(const std::string& id, Done done) {
  write(body_of(fmt::kForgetType, id), std::move(done));
}

void TxnLog::append_live(std::string& out, const TxnEntry& e) {
  const std::string& id = e.header.id;
  RecordLog::frame(out, header_body(e.header));
  if (!txn_active(e.header.status)) return;
  if (!e.partitions.empty()) {
    RecordLog::frame(out, partitions_body(id, {e.partitions.begin(), e.partitions.end()}));
  }
  for (const std::string& g : e.groups) RecordLog::frame(out, group_body(id, g));
  for (const TxnOffset& o : e.offsets) RecordLog::frame(out, offset_body(id, o));
}

void TxnLog::live_records(std::string& out) const {
  std::shared_lock lock(mu_);
  for (const auto& [id, e] : entries_) append_live(out, e);
}

uint64_t TxnLog::live_bytes() const {
  return live_bytes_.load(std::memory_order_relaxed);
}

void TxnLog::scan(const std::function<void(const TxnEntry&)>& visit) const {
  std::shared_lock lock(mu_);
  for (const auto& [id, e] : entries_) visit(e);
}

size_t TxnLog::size() const {
  std::shared_lock lock(mu_);
  return entries_.size();
}

std::optional<TxnEntry> TxnLog::find(const std::string& id) const {
  std::shared_lock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

std::vector<TxnEntry> TxnLog::list() const {
  std::shared_lock lock(mu_);
  std::vector<TxnEntry> out;
  out.reserve(entries_.size());
  for (const auto& [id, e] : entries_) out.push_back(e);
  return out;
}

}  // namespace streamd
