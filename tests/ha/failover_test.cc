// Failover under load on the real high-availability stack (docs/SCALING.md §"High availability"):
// etcd and three PostgreSQL 15 nodes under Patroni with
// synchronous_mode_strict (tests/support/ha_cluster.h), three brokers over a multi-host DSN with
// target_session_attrs=read-write, native producers on every broker and Kafka producers
// (confluent-kafka) on two, consumers reading through one broker and committing through another.
//
// Faults, one after another, in this rotation: the primary's postmaster killed -9 with a broker
// killed -9 meanwhile; a Patroni switchover; the synchronous standby's postmaster killed -9; the
// primary SIGSTOPped (a hung, not dead, database) until Patroni promotes another node; the primary's
// postmaster killed -9. After each: the cluster healthy again, every producer acknowledged again
// within kResumeBound, then the whole log checked (failover_check.h) and the fault's figures printed —
// the unavailability window (the longest time no producer had an append acknowledged) and when each
// producer resumed. At the end: every request was answered (none left hanging), the consumers read
// what the log holds, their commits are kept.
//
// STREAMD_HA_FAULTS sets how many faults (default 2); STREAMD_HA_REPORT names a file that gets one
// JSON line per fault (scripts/failover-test writes docs' figures from it); STREAMD_HA_FAULT_KINDS the
// kinds to rotate through, by their numbers above from 0 ("0,1,2,4"; CI's slice runs "0,3"). Every
// producer is idempotent, so a batch kept twice is a failure.
#include <signal.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "server/broker/pg/pg_connection.h"
#include "tests/ha/failover_check.h"
#include "tests/ha/failover_load.h"
#include "tests/integration/broker_group.h"
#include "tests/integration/wire_client.h"
#include "tests/support/ha_cluster.h"
#include "tests/support/pg_cluster.h"
#include "tests/support/text_file.h"

namespace streamd::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kPartitions = 4;
constexpr int kNativeProducers = 6;
constexpr int kFirstKafkaId = 100;
// From a fault until every producer has an append acknowledged again: a hung primary costs Patroni's
// ttl (10 s) before another node is promoted, then the new synchronous standby.
constexpr auto kResumeBound = seconds(90);
// A client waits this long for an answer: above storage.postgres.reply_timeout (5 s) and a few
// connect timeouts (2 s each) of the multi-host DSN, so every wait past it is a request left hanging.
constexpr auto kAnswerTimeout = seconds(30);

const char* const kFaultNames[] = {"primary killed -9, a broker killed -9 meanwhile", "switchover",
                                   "synchronous standby killed -9", "primary SIGSTOPped", "primary killed -9"};

int64_t ms(Clock::duration d) { return std::chrono::duration_cast<milliseconds>(d).count(); }

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// The fault kinds to rotate through: STREAMD_HA_FAULT_KINDS ("0,1,2,4"), every kind by default.
std::vector<int> fault_kinds() {
  std::vector<int> out;
  const char* v = std::getenv("STREAMD_HA_FAULT_KINDS");
  std::istringstream in(v ? v : "");
  for (std::string item; std::getline(in, item, ',');) {
    const int kind = std::atoi(item.c_str());
    if (kind >= 0 && kind < 5) out.push_back(kind);
  }
  if (out.empty()) out = {0, 1, 2, 3, 4};
  return out;
}

struct Broker {
  uint16_t port = 0;
  uint16_t kafka_port = 0;
  std::unique_ptr<DaemonProcess> process;
};

// What one fault cost.
struct FaultFigures {
  int64_t window_ms = 0;   // the longest time within the fault that no append was acknowledged
  int64_t resumed_ms = 0;  // from the fault until the last producer had one acknowledged again
  size_t refused = 0;      // attempts answered with an error
  size_t unknown = 0;      // attempts whose outcome is unknown
};

// The longest time in [from, to] with no acknowledgement, among `acks` (answer instants).
int64_t longest_gap(std::vector<Clock::time_point> acks, Clock::time_point from, Clock::time_point to) {
  std::sort(acks.begin(), acks.end());
  Clock::time_point last = from;
  int64_t worst = 0;
  for (const auto& t : acks) {
    if (t <= from) continue;
    if (t > to) break;
    worst = std::max(worst, ms(t - last));
    last = t;
  }
  return std::max(worst, ms(to - last));
}

int64_t percentile(std::vector<int64_t> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

class FailoverRun {
 public:
  FailoverRun() {
    INFO(cluster_.describe());
    REQUIRE(cluster_.wait_healthy(seconds(240)));
    dsn_ = create_database(cluster_.dsn());
    // libpq tries a multi-host DSN's next host when one cannot be reached, not when one refuses the
    // session: a standby that has not replayed the CREATE DATABASE yet would fail the brokers' start.
    const size_t at = dsn_.find("dbname=") + 7;
    const std::string db = dsn_.substr(at, dsn_.find(' ', at) - at);
    for (int n = 0; n < cluster_.nodes(); ++n) {
      const auto deadline = Clock::now() + seconds(30);
      bool there = false;
      while (!there && Clock::now() < deadline) {
        there = PgConnection::connect(cluster_.node_dsn(n, db)).ok();
        if (!there) std::this_thread::sleep_for(milliseconds(100));
      }
      INFO("database " << db << " on node " << n);
      REQUIRE(there);
    }
    for (int i = 0; i < 3; ++i) {
      Broker b;
      b.port = free_port();
      b.kafka_port = free_port();
      b.process = std::make_unique<DaemonProcess>(std::vector<std::string>{
          "--storage.engine", "postgres", "--storage.postgres.dsn", dsn_, "--storage.postgres.poll-interval", "100ms",
          // Resends of unanswered idempotent commits end in time for an answer within the Kafka
          // producers' request.timeout.ms (20 s) and kAnswerTimeout.
          "--storage.postgres.reply-timeout", "5s", "--storage.postgres.resend-unknown-for", "12s",
          "--listen", "127.0.0.1:" + std::to_string(b.port), "--kafka.listen", "127.0.0.1:" + std::to_string(b.kafka_port)});
      const bool started = b.process->start(seconds(30));
      INFO("broker " << i << " log:\n" << b.process->log());
      REQUIRE(started);
      brokers_.push_back(std::move(b));
    }
  }

  HaCluster& cluster() { return cluster_; }
  Broker& broker(size_t i) { return brokers_[i]; }
  std::vector<uint16_t> ports() const {
    std::vector<uint16_t> out;
    for (const Broker& b : brokers_) out.push_back(b.port);
    return out;
  }

 private:
  HaCluster cluster_;
  std::string dsn_;
  std::vector<Broker> brokers_;
};

std::vector<Attempt> all_attempts(const NativeProducers& native, const std::vector<std::unique_ptr<KafkaProducerProcess>>& kafka) {
  std::vector<Attempt> out = native.attempts();
  for (const auto& k : kafka) {
    auto more = k->attempts();
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

std::set<int> producer_ids(const std::vector<std::unique_ptr<KafkaProducerProcess>>& kafka) {
  std::set<int> out;
  for (int p = 0; p < kNativeProducers; ++p) out.insert(p);
  for (const auto& k : kafka) out.insert(k->id());
  return out;
}

// The producers with no append acknowledged since `since`, each with its last attempts' answers: why
// a producer did not resume.
std::string stalled_producers(const std::vector<Attempt>& attempts, const std::set<int>& everyone,
                              Clock::time_point since) {
  std::map<int, std::vector<const Attempt*>> since_then;
  std::set<int> resumed;
  for (const Attempt& a : attempts) {
    if (a.sent < since) continue;
    since_then[a.producer].push_back(&a);
    if (a.acked) resumed.insert(a.producer);
  }
  std::string out;
  for (int p : everyone) {
    if (resumed.count(p)) continue;
    out += "producer " + std::to_string(p) + " not acknowledged again;";
    const auto& tried = since_then[p];
    for (size_t i = tried.size() > 5 ? tried.size() - 5 : 0; i < tried.size(); ++i) {
      out += " b" + std::to_string(tried[i]->seq) + ": " + (tried[i]->error.empty() ? "no answer" : tried[i]->error);
    }
    out += "\n";
  }
  return out;
}

// Injects fault `kind`; returns once it is in place (the SIGSTOPped primary is resumed once another
// node was promoted).
void inject(FailoverRun& run, int kind, int number) {
  HaCluster& cluster = run.cluster();
  const int primary = cluster.primary();
  INFO(cluster.describe());
  REQUIRE(primary >= 0);
  switch (kind) {
    case 0: {
      REQUIRE(cluster.signal_postmaster(primary, SIGKILL));
      std::this_thread::sleep_for(milliseconds(500));
      Broker& b = run.broker(static_cast<size_t>(number) % 3);
      b.process->kill9();
      // Started again once there is a primary to load from: a broker refuses to start without its
      // database, and the others carry its clients meanwhile.
      REQUIRE(cluster.wait_healthy(seconds(120)));
      const bool started = b.process->start(seconds(30));
      INFO("broker log:\n" << b.process->log());
      REQUIRE(started);
      break;
    }
    case 1: {
      const int standby = cluster.sync_standby();
      REQUIRE(standby >= 0);
      REQUIRE(cluster.switchover(primary, standby));
      break;
    }
    case 2: {
      const int standby = cluster.sync_standby();
      REQUIRE(standby >= 0);
      REQUIRE(cluster.signal_postmaster(standby, SIGKILL));
      break;
    }
    case 3: {
      REQUIRE(cluster.signal_server(primary, SIGSTOP));
      const auto deadline = Clock::now() + seconds(90);
      int now_primary = primary;
      while ((now_primary == primary || now_primary < 0) && Clock::now() < deadline) {
        std::this_thread::sleep_for(milliseconds(250));
        now_primary = cluster.primary();
      }
      REQUIRE(cluster.signal_server(primary, SIGCONT));
      INFO(cluster.log_tail(primary));
      REQUIRE(now_primary != primary);
      REQUIRE(now_primary >= 0);
      break;
    }
    default:
      REQUIRE(cluster.signal_postmaster(primary, SIGKILL));
      break;
  }
}

}  // namespace

TEST_CASE("failover under load on Patroni: every acknowledged batch kept, every producer resumes",
          "[ha][failover]") {
  if (const std::string why = HaCluster::missing(); !why.empty()) {
    std::cerr << "SKIPPED: " << why << "\n";
    std::exit(77);
  }
  const int faults = env_int("STREAMD_HA_FAULTS", 2);
  const std::vector<int> kinds = fault_kinds();
  const char* report_path = std::getenv("STREAMD_HA_REPORT");
  FailoverRun run;
  const std::string stream = "orders";
  {
    WireClient admin(run.broker(0).port);
    REQUIRE(admin.call(create_request(stream, kPartitions)).has_create_stream());
    for (size_t i = 1; i < 3; ++i) REQUIRE(wait_for_stream(run.broker(i).port, stream, kPartitions, seconds(5)) >= 0);
  }
  NativeProducers native(stream, kPartitions, run.ports(), kNativeProducers, milliseconds(10), kAnswerTimeout);
  std::vector<std::unique_ptr<KafkaProducerProcess>> kafka;
  for (int i = 0; i < 2; ++i) {
    kafka.push_back(std::make_unique<KafkaProducerProcess>(
        STREAMD_SOURCE_DIR "/tests/ha/kafka_producer.py", run.broker(static_cast<size_t>(i) + 1).kafka_port, stream,
        kFirstKafkaId + i, 20, run.cluster().dir() + "/kafka" + std::to_string(i) + ".out"));
  }
  Consumer first(stream, kPartitions, run.broker(1).port, run.broker(2).port, "g1");
  Consumer second(stream, kPartitions, run.broker(2).port, run.broker(0).port, "g2");
  first.start();
  second.start();
  native.start();
  for (auto& k : kafka) k->start();
  const std::set<int> everyone = producer_ids(kafka);

  // Until `since`'s every producer has an append sent after it acknowledged; the instant it did.
  auto all_acked_after = [&](Clock::time_point since, Clock::duration bound) -> std::optional<Clock::time_point> {
    const auto deadline = Clock::now() + bound;
    while (Clock::now() < deadline) {
      std::map<int, Clock::time_point> first_ack;
      for (const Attempt& a : all_attempts(native, kafka)) {
        if (!a.acked || a.sent < since) continue;
        auto [it, fresh] = first_ack.try_emplace(a.producer, a.answered);
        if (!fresh) it->second = std::min(it->second, a.answered);
      }
      if (first_ack.size() == everyone.size()) {
        Clock::time_point last = since;
        for (const auto& [p, t] : first_ack) last = std::max(last, t);
        return last;
      }
      std::this_thread::sleep_for(milliseconds(100));
    }
    return std::nullopt;
  };
  REQUIRE(all_acked_after(Clock::now(), seconds(60)));

  std::map<int, std::vector<int64_t>> windows;  // by fault kind
  std::vector<int64_t> all_windows;
  std::ofstream report;
  if (report_path) report.open(report_path, std::ios::app);
  for (int f = 0; f < faults; ++f) {
    const int kind = kinds[static_cast<size_t>(f) % kinds.size()];
    INFO("fault " << f << ": " << kFaultNames[kind]);
    std::this_thread::sleep_for(seconds(2));  // steady load before the fault
    const auto t0 = Clock::now();
    inject(run, kind, f);
    const bool healthy_again = run.cluster().wait_healthy(seconds(120));
    INFO(run.cluster().describe());
    std::string patroni_logs;
    for (int n = 0; n < run.cluster().nodes() && !healthy_again; ++n) {
      patroni_logs += "node " + std::to_string(n) + "'s Patroni:\n" + run.cluster().log_tail(n) + "\n";
    }
    INFO(patroni_logs);
    REQUIRE(healthy_again);
    const auto healthy = Clock::now();
    const auto resumed = all_acked_after(healthy, kResumeBound);
    std::string stalled;
    if (!resumed) {
      stalled = stalled_producers(all_attempts(native, kafka), everyone, healthy);
      for (size_t i = 0; i < 3; ++i) {
        stalled += "broker " + std::to_string(i) + "'s log, last lines:\n" +
                   last_bytes(run.broker(i).process->log(), 6000) + "\n";
      }
      for (const auto& k : kafka) {
        stalled += "Kafka producer " + std::to_string(k->id()) + "'s log, last lines:\n" + k->log_tail(6000) + "\n";
      }
    }
    INFO(stalled);
    REQUIRE(resumed);
    std::this_thread::sleep_for(milliseconds(500));
    const auto t_end = Clock::now();

    const std::vector<Attempt> attempts = all_attempts(native, kafka);
    FaultFigures fig;
    std::vector<Clock::time_point> acks;
    for (const Attempt& a : attempts) {
      if (a.answered < t0 || a.answered > t_end) continue;
      if (a.acked) acks.push_back(a.answered);
      if (!a.acked && !a.error.empty()) ++fig.refused;
      if (a.unknown) ++fig.unknown;
      INFO("attempt p" << a.producer << ".b" << a.seq << " got " << a.error);
      CHECK(!a.hung);
      if (!a.acked && !a.error.empty() && a.producer < kFirstKafkaId) {
        CHECK((a.error == "STREAM_BACKEND_FAILED" || a.error == "UNAVAILABLE"));
      }
    }
    fig.window_ms = longest_gap(acks, t0, t_end);
    fig.resumed_ms = ms(*resumed - t0);
    CHECK(*resumed - t0 <= kResumeBound);
    windows[kind].push_back(fig.window_ms);
    all_windows.push_back(fig.window_ms);

    const PartitionLogs logs = read_all(run.broker(static_cast<size_t>(f) % 3).port, stream, kPartitions);
    const LogCheck check = check_failover_log(logs, attempts, /*final=*/false);
    std::printf("fault %d (%s): unavailable %lld ms, every producer acknowledged again %lld ms after it; "
                "%zu refused, %zu unknown; log: %llu records, %zu batches, %zu duplicates, %zu problems\n",
                f, kFaultNames[kind], static_cast<long long>(fig.window_ms), static_cast<long long>(fig.resumed_ms),
                fig.refused, fig.unknown, static_cast<unsigned long long>(check.records), check.batches,
                check.duplicates, check.problems.size());
    std::fflush(stdout);
    if (report.is_open()) {
      report << "{\"fault\":" << f << ",\"kind\":\"" << kFaultNames[kind] << "\",\"window_ms\":" << fig.window_ms
             << ",\"resumed_ms\":" << fig.resumed_ms << ",\"refused\":" << fig.refused
             << ",\"unknown\":" << fig.unknown << ",\"duplicates\":" << check.duplicates << "}\n";
      report.flush();
    }
    for (size_t i = 0; i < check.problems.size() && i < 10; ++i) UNSCOPED_INFO(check.problems[i]);
    REQUIRE(check.problems.empty());
  }

  native.stop();
  for (auto& k : kafka) {
    CHECK(k->stop());
    INFO("Kafka producer " << k->id() << ": produce requests the broker left unanswered");
    CHECK(k->requests_timed_out() == 0);
  }
  const std::vector<Attempt> attempts = all_attempts(native, kafka);
  const PartitionLogs logs = read_all(run.broker(0).port, stream, kPartitions);
  const LogCheck check = check_failover_log(logs, attempts, /*final=*/true);
  for (size_t i = 0; i < check.problems.size() && i < 10; ++i) UNSCOPED_INFO(check.problems[i]);
  CHECK(check.problems.empty());
  CHECK(check.acknowledged > 0);
  std::printf("after %d faults: %llu records, %zu batches (%zu acknowledged), %zu kept twice or more; "
              "unavailable p50 %lld ms, max %lld ms\n",
              faults, static_cast<unsigned long long>(check.records), check.batches, check.acknowledged,
              check.duplicates, static_cast<long long>(percentile(all_windows, 0.5)),
              static_cast<long long>(percentile(all_windows, 1.0)));
  for (const auto& [kind, v] : windows) {
    std::printf("  %s: %zu faults, unavailable p50 %lld ms, max %lld ms\n", kFaultNames[kind], v.size(),
                static_cast<long long>(percentile(v, 0.5)), static_cast<long long>(percentile(v, 1.0)));
  }

  std::map<int32_t, uint64_t> ends;
  for (const auto& [p, log] : logs) ends[p] = log.size();
  for (Consumer* c : {&first, &second}) {
    c->finish(ends, seconds(30));
    INFO(c->failures().size() << " consumer failures, first: " << (c->failures().empty() ? "" : c->failures()[0]));
    CHECK(c->failures().empty());
    for (const auto& [p, log] : logs) {
      const auto it = c->logs().find(p);
      const size_t n = it == c->logs().end() ? 0 : it->second.size();
      INFO("consumer, partition " << p);
      REQUIRE(n == log.size());
      for (size_t i = 0; i < n; ++i) REQUIRE(it->second[i].payload == log[i].payload);
    }
  }
  // The consumers' last acknowledged commits are kept (read back through a third broker).
  WireClient client(run.broker(0).port);
  for (const auto& [group, consumer] : {std::pair<std::string, Consumer*>{"g1", &first}, {"g2", &second}}) {
    for (const auto& [partition, acked] : consumer->committed()) {
      v1::Request r;
      r.mutable_committed()->set_stream(stream);
      r.mutable_committed()->set_group(group);
      r.mutable_committed()->set_partition(partition);
      // Committed through another broker: this one learns of it within its refresh latency.
      v1::Response answer;
      const auto deadline = Clock::now() + seconds(3);
      do {
        answer = client.call(r);
        if (answer.has_committed() && answer.committed().next() >= acked) break;
        std::this_thread::sleep_for(milliseconds(20));
      } while (Clock::now() < deadline);
      INFO("group " << group << " partition " << partition);
      REQUIRE(answer.has_committed());
      CHECK(answer.committed().next() >= acked);
      CHECK(answer.committed().next() <= ends[partition]);
    }
  }
}

}  // namespace streamd::testing
