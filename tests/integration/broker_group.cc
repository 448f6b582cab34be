#include "tests/integration/broker_group.h"

#include <catch2/catch.hpp>
#include <set>
#include <sstream>
#include <utility>

#include "tests/integration/batch_payload.h"

namespace streamd::testing {
namespace {

using Clock = std::chrono::steady_clock;

// The first few problems, for the report.
void report(const std::vector<std::string>& problems, const char* what) {
  std::string shown;
  for (size_t i = 0; i < problems.size() && i < 10; ++i) shown += problems[i] + "\n";
  INFO(what << ": " << problems.size() << " problems\n" << shown);
  CHECK(problems.empty());
}

}  // namespace

BrokerGroup::BrokerGroup(const std::string& dsn, size_t count, const std::vector<std::string>& extra) {
  for (size_t i = 0; i < count; ++i) {
    const uint16_t port = free_port();
    std::vector<std::string> args = {"--storage.engine", "postgres", "--storage.postgres.dsn", dsn,
                                     "--listen",         "127.0.0.1:" + std::to_string(port)};
    args.insert(args.end(), extra.begin(), extra.end());
    brokers_.push_back(std::make_unique<DaemonProcess>(args));
    REQUIRE(brokers_.back()->start());
    REQUIRE(brokers_.back()->port() == port);
    ports_.push_back(port);
  }
}

v1::Response ReconnectingClient::call(const v1::Request& request, std::chrono::milliseconds timeout) {
  if (!client_ || !client_->connected()) client_ = std::make_unique<WireClient>(port_);
  if (!client_->connected()) {
    client_.reset();
    return {};
  }
  v1::Response response = client_->call(request, timeout);
  if (response.body_case() == v1::Response::BODY_NOT_SET && !response.has_error()) client_.reset();
  return response;
}

Producers::Producers(std::string stream, std::vector<uint16_t> ports, int producers)
    : stream_(std::move(stream)), ports_(std::move(ports)), producers_(producers) {}

Producers::~Producers() {
  stop();
  join();
}

void Producers::start(int batches, std::chrono::milliseconds pause) {
  for (int p = 0; p < producers_; ++p) threads_.emplace_back([this, p, batches, pause] { run(p, batches, pause); });
}

void Producers::stop() { stopping_ = true; }

void Producers::join() {
  for (auto& t : threads_) t.join();
  threads_.clear();
}

std::vector<SentBatch> Producers::sent() const {
  std::lock_guard lock(mu_);
  return sent_;
}

void Producers::run(int producer, int batches, std::chrono::milliseconds pause) {
  ReconnectingClient client(ports_[static_cast<size_t>(producer) % ports_.size()]);
  for (int seq = 0; seq < batches && !stopping_; ++seq) {
    SentBatch b;
    b.producer = producer;
    b.seq = seq;
    b.records = 1 + (producer + seq) % 4;
    b.key = "k" + std::to_string(producer) + "." + std::to_string(seq % 3);
    std::vector<TestRecord> records;
    for (int i = 0; i < b.records; ++i) records.push_back({b.key, payload_of(producer, seq, i, b.records), {}});
    b.sent = Clock::now();
    const v1::Response r = client.call(append_request(stream_, records));
    if (r.has_append()) {
      b.acked = r.append().last() - r.append().first() + 1 == static_cast<uint64_t>(b.records);
      if (!b.acked) b.error = "ACK_OF_WRONG_SIZE";
      b.partition = r.append().partition();
      b.first = r.append().first();
    } else if (r.has_error()) {
      b.error = r.error().name();
    }
    {
      std::lock_guard lock(mu_);
      sent_.push_back(b);
    }
    if (!r.has_append() && !r.has_error()) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // restarting
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
  }
}

PartitionLogs read_all(uint16_t port, const std::string& stream, int32_t partitions) {
  WireClient c(port);
  REQUIRE(c.connected());
  v1::Request describe;
  describe.mutable_describe_stream()->set_name(stream);
  const v1::Response d = c.call(describe);
  REQUIRE(d.has_describe_stream());
  std::map<int32_t, uint64_t> ends;
  for (const auto& p : d.describe_stream().partitions()) ends[p.partition()] = p.next();
  REQUIRE(ends.size() == static_cast<size_t>(partitions));
  PartitionLogs logs;
  for (const auto& [partition, end] : ends) {
    auto& log = logs[partition];
    uint64_t from = 0;
    // Past `end` until a read finds nothing more: producers may still be appending, and a read that
    // stops at its record limit may stop inside a batch, so only the log's end at that instant — a
    // read that returns nothing — is a batch boundary. (`end` alone would not do: on the postgres
    // engine it is what the answering broker knows, which may lag other brokers' appends.)
    for (;;) {
      const v1::Response r = c.call(read_request(stream, {{partition, from}}, 1000));
      REQUIRE(r.has_read());
      REQUIRE(r.read().partitions_size() == 1);
      const auto& pr = r.read().partitions(0);
      INFO("partition " << partition << " from " << from << ": " << pr.error().name());
      REQUIRE(!pr.has_error());
      if (pr.entries().empty() && from >= end) break;
      REQUIRE(pr.next_from() > from);
      for (const auto& e : pr.entries()) log.push_back({e.offset(), e.record().key(), e.record().payload()});
      from = pr.next_from();
    }
  }
  return logs;
}

void check_log(const PartitionLogs& logs, const std::vector<SentBatch>& sent) {
  std::vector<std::string> problems;
  // (producer, seq) -> where its records are
  struct Seen {
    int32_t partition = -1;
    uint64_t first = 0;
    int count = 0;
    int next_index = 0;
    std::string key;
  };
  std::map<std::pair<int, int>, Seen> seen;
  std::map<std::string, int> last_seq_of_key;
  uint64_t records = 0;
  for (const auto& [partition, log] : logs) {
    for (size_t i = 0; i < log.size(); ++i) {
      const LoggedEntry& e = log[i];
      ++records;
      if (e.offset != i) {
        problems.push_back("partition " + std::to_string(partition) + ": offset " + std::to_string(e.offset) +
                           " at position " + std::to_string(i));
      }
      BatchPayload p;
      if (!parse_payload(e.payload, p)) {
        problems.push_back("unparsable payload " + e.payload);
        continue;
      }
      auto [it, fresh] = seen.try_emplace({p.producer, p.seq});
      Seen& s = it->second;
      if (fresh) {
        s = {partition, e.offset, p.count, 0, e.key};
        // Per key, batches in the order the producer sent them (each key lives on one partition).
        auto [k, first_of_key] = last_seq_of_key.try_emplace(e.key, p.seq);
        if (!first_of_key) {
          if (p.seq <= k->second) problems.push_back("key " + e.key + ": batch " + std::to_string(p.seq) +
                                                     " after batch " + std::to_string(k->second));
          k->second = p.seq;
        }
      }
      if (p.index != s.next_index || s.partition != partition || e.offset != s.first + static_cast<uint64_t>(p.index) ||
          p.count != s.count || e.key != s.key) {
        problems.push_back("record " + e.payload + " out of place at " + std::to_string(partition) + "/" +
                           std::to_string(e.offset));
      }
      ++s.next_index;
    }
  }
  for (const auto& [id, s] : seen) {
    if (s.next_index != s.count) {
      problems.push_back("batch p" + std::to_string(id.first) + ".b" + std::to_string(id.second) + " holds " +
                         std::to_string(s.next_index) + " of " + std::to_string(s.count) + " records");
    }
  }
  size_t acked = 0;
  for (const SentBatch& b : sent) {
    auto it = seen.find({b.producer, b.seq});
    if (!b.acked) {
      // A definite refusal keeps nothing; an unanswered batch may be kept (whole, checked above).
      if (!b.error.empty() && b.error != "STREAM_BACKEND_FAILED" && it != seen.end()) {
        problems.push_back("refused batch p" + std::to_string(b.producer) + ".b" + std::to_string(b.seq) +
                           " (" + b.error + ") is in the log");
      }
      continue;
    }
    ++acked;
    if (it == seen.end()) {
      problems.push_back("acknowledged batch p" + std::to_string(b.producer) + ".b" + std::to_string(b.seq) +
                         " is missing");
    } else if (it->second.partition != b.partition || it->second.first != b.first) {
      problems.push_back("acknowledged batch p" + std::to_string(b.producer) + ".b" + std::to_string(b.seq) +
                         " is not where its answer said");
    }
  }
  INFO(acked << " of " << sent.size() << " batches acknowledged, " << records << " records in the log");
  CHECK(acked > 0);
  report(problems, "the log");
}

Consumer::Consumer(std::string stream, int32_t partitions, uint16_t read_port, uint16_t commit_port,
                   std::string group)
    : stream_(std::move(stream)),
      partitions_(partitions),
      read_port_(read_port),
      commit_port_(commit_port),
      group_(std::move(group)) {}

Consumer::~Consumer() {
  give_up_ = true;
  if (thread_.joinable()) thread_.join();
}

void Consumer::start() {
  thread_ = std::thread([this] { run(); });
}

void Consumer::finish(const std::map<int32_t, uint64_t>& ends, std::chrono::milliseconds timeout) {
  {
    std::lock_guard lock(mu_);
    ends_ = ends;
    have_ends_ = true;
  }
  const auto deadline = Clock::now() + timeout;
  while (thread_.joinable() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::lock_guard lock(mu_);
    if (!have_ends_) break;  // the thread reached them
  }
  give_up_ = true;
  if (thread_.joinable()) thread_.join();
}

void Consumer::run() {
  ReconnectingClient reader(read_port_);
  ReconnectingClient committer(commit_port_);
  std::map<int32_t, uint64_t> next;
  for (int32_t p = 0; p < partitions_; ++p) next[p] = 0;
  while (!give_up_) {
    {
      std::lock_guard lock(mu_);
      if (have_ends_) {
        bool done = true;
        for (const auto& [p, end] : ends_) done = done && next[p] >= end;
        if (done) {
          have_ends_ = false;
          return;
        }
      }
    }
    std::vector<std::pair<int32_t, uint64_t>> cursors(next.begin(), next.end());
    const v1::Response r = reader.call(read_request(stream_, cursors, 500, 200));
    if (!r.has_read()) {
      if (r.has_error()) failures_.push_back("read: " + r.error().name());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    bool backend_down = false;
    for (const auto& pr : r.read().partitions()) {
      if (pr.has_error()) {
        // The database away (an outage, a failover) is said so and retried; anything else is wrong.
        const std::string& name = pr.error().name();
        if (name == "STREAM_BACKEND_FAILED" || name == "UNAVAILABLE") {
          backend_down = true;
        } else {
          failures_.push_back("read partition " + std::to_string(pr.partition()) + ": " + name);
        }
        continue;
      }
      if (pr.entries_size() == 0) continue;
      auto& log = logs_[pr.partition()];
      for (const auto& e : pr.entries()) log.push_back({e.offset(), e.record().key(), e.record().payload()});
      next[pr.partition()] = pr.next_from();
      v1::Request commit;
      commit.mutable_commit()->set_stream(stream_);
      commit.mutable_commit()->set_group(group_);
      commit.mutable_commit()->set_partition(pr.partition());
      commit.mutable_commit()->set_next(pr.next_from());
      const v1::Response c = committer.call(commit);
      if (c.has_commit()) {
        committed_[pr.partition()] = pr.next_from();
      } else if (c.has_error() && c.error().name() != "STREAM_BACKEND_FAILED") {
        failures_.push_back("commit: " + c.error().name());
      }
    }
    if (backend_down) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int64_t wait_for_stream(uint16_t port, const std::string& name, int partitions, std::chrono::milliseconds timeout) {
  v1::Request describe;
  describe.mutable_describe_stream()->set_name(name);
  WireClient c(port);
  const auto start = Clock::now();
  const auto elapsed_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  };
  while (Clock::now() - start < timeout) {
    const v1::Response r = c.call(describe);
    if (partitions > 0 && r.has_describe_stream() && r.describe_stream().partitions_size() == partitions) {
      return elapsed_ms();
    }
    if (partitions == 0 && error_name(r) == "STREAM_NOT_FOUND") return elapsed_ms();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return -1;
}

}  // namespace streamd::testing
