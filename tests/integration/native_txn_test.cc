// Native transactions through the client library and streamctl against the real daemon
// (docs/TRANSACTIONS.md §"Native transactions", docs/CLIENT.md §Transactions): records to two streams
// and a group's offsets committed together or not at all, fencing by a second instance, the operator's
// list, describe and abort, `streamctl produce --transactional-id`, the /metrics series, and a
// transaction left open by a kill -9.
#include <catch2/catch.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/admin.h"
#include "client/partitioner.h"
#include "client/transactional_producer.h"
#include "client/txn_admin.h"
#include "tests/integration/streamctl_runner.h"
#include "tests/integration/txn_reads.h"
#include "tests/integration/wire_client.h"
#include "tests/support/daemon_fixture.h"
#include "tests/support/prometheus_text.h"

namespace streamd::testing {
namespace {

using namespace std::chrono_literals;

struct TxnBroker {
  DaemonProcess daemon;
  std::unique_ptr<client::Connection> connection;

  explicit TxnBroker(std::vector<std::string> args = {}) : daemon(std::move(args)) {
    daemon.keep_ports();
    REQUIRE(daemon.start());
    connect();
  }
  void connect() {
    client::ConnectionOptions options;
    options.broker = {"127.0.0.1", daemon.port()};
    options.reconnect_backoff = {10ms, 100ms};
    connection = std::make_unique<client::Connection>(options);
  }
  void create(const std::string& name, int32_t partitions) {
    client::Policy policy;
    policy.partitions = partitions;
    REQUIRE(client::Admin(*connection).create_stream(name, policy).ok());
  }
};

client::Record txn_record(const std::string& key, const std::string& payload) { return client::Record{key, payload, {}}; }

TEST_CASE("a native transaction over two streams and a group's offsets: nothing before the commit, all after",
          "[client][transactions]") {
  TxnBroker b;
  b.create("in", 2);
  b.create("out", 3);
  auto txn = client::TransactionalProducer::open(*b.connection, "worker-1");
  REQUIRE(txn.ok());
  for (int i = 0; i < 30; ++i) (*txn)->send(i % 2 == 0 ? "in" : "out", txn_record("k" + std::to_string(i), "v" + std::to_string(i)));
  REQUIRE((*txn)->send_offsets("in", "g", {{0, 5}, {1, 7}}).ok());
  // Written, but not committed: a read_committed reader sees none of it, the group no offset.
  wait_for_txn_records(b.daemon.port(), "out", 3, 15);
  client::Admin admin(*b.connection);
  for (int32_t p = 0; p < 3; ++p) CHECK(txn_payloads(b.daemon.port(), "out", p).empty());
  CHECK(admin.committed("in", "g", 0).error().name() == "UNKNOWN_GROUP");
  REQUIRE((*txn)->commit().ok());
  size_t committed_in = 0;
  size_t uncommitted_out = 0;
  for (int32_t p = 0; p < 2; ++p) committed_in += txn_payloads(b.daemon.port(), "in", p).size();
  for (int32_t p = 0; p < 3; ++p) uncommitted_out += txn_payloads(b.daemon.port(), "out", p).size();
  CHECK(committed_in == 15);
  CHECK(uncommitted_out == 15);
  CHECK(admin.committed("in", "g", 0).value() == 5);
  CHECK(admin.committed("in", "g", 1).value() == 7);

  // The next transaction aborts: its records stay unread at read_committed, its offsets uncommitted.
  for (int i = 0; i < 10; ++i) (*txn)->send("out", txn_record("k" + std::to_string(i), "x" + std::to_string(i)));
  REQUIRE((*txn)->send_offsets("in", "g", {{0, 9}}).ok());
  REQUIRE((*txn)->abort().ok());
  size_t committed_out = 0;
  size_t everything_out = 0;
  for (int32_t p = 0; p < 3; ++p) {
    for (const std::string& v : txn_payloads(b.daemon.port(), "out", p)) {
      CHECK(v.front() == 'v');
      ++committed_out;
    }
    everything_out += txn_payloads(b.daemon.port(), "out", p, v1::READ_UNCOMMITTED).size();
    auto bounds = admin.bounds("out", p);
    REQUIRE(bounds.ok());
    CHECK(bounds->last_stable == bounds->next);
  }
  CHECK(committed_out == 15);
  CHECK(everything_out == 25);
  CHECK(admin.committed("in", "g", 0).value() == 5);

  // A third transaction commits again on the same identity.
  (*txn)->send("out", txn_record("k", "v-last"));
  REQUIRE((*txn)->commit().ok());
  size_t after = 0;
  for (int32_t p = 0; p < 3; ++p) after += txn_payloads(b.daemon.port(), "out", p).size();
  CHECK(after == 16);

  auto described = client::TxnAdmin(*b.connection).describe("worker-1");
  REQUIRE(described.ok());
  CHECK(described->state == "CompleteCommit");
  CHECK(described->producer == (*txn)->identity());

  auto metrics = parse_prometheus_text(b.daemon.http_get("/metrics").body);
  REQUIRE(metrics.exposition.has_value());
  CHECK(metrics.exposition->value("streamd_transactions_total", {{"outcome", "commit"}}) == 2);
  CHECK(metrics.exposition->value("streamd_transactions_total", {{"outcome", "abort"}}) == 1);
  CHECK(metrics.exposition->value("streamd_transactions_open") == 0);
  CHECK(metrics.exposition->value("streamd_stream_unstable_records", {{"stream", "out"}}) == 0);
}

TEST_CASE("a second instance of a transactional id fences the first and aborts what it left open",
          "[client][transactions]") {
  TxnBroker b;
  b.create("s", 1);
  auto first = client::TransactionalProducer::open(*b.connection, "fenced");
  REQUIRE(first.ok());
  (*first)->send("s", txn_record("", "zombie"));
  wait_for_txn_records(b.daemon.port(), "s", 1, 1);
  CHECK(client::Admin(*b.connection).bounds("s", 0).value().last_stable == 0);

  auto second = client::TransactionalProducer::open(*b.connection, "fenced");
  REQUIRE(second.ok());
  CHECK((*second)->identity().epoch > (*first)->identity().epoch);
  const client::Status refused = (*first)->commit();
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().name() == "PRODUCER_FENCED");
  (*second)->send("s", txn_record("", "current"));
  REQUIRE((*second)->commit().ok());
  CHECK(txn_payloads(b.daemon.port(), "s", 0) == std::vector<std::string>{"current"});
  CHECK(txn_payloads(b.daemon.port(), "s", 0, v1::READ_UNCOMMITTED) == std::vector<std::string>{"zombie", "current"});
}

TEST_CASE("streamctl txn: list and describe an open transaction, abort it, and the producer is fenced",
          "[streamctl][transactions]") {
  TxnBroker b;
  b.create("s", 2);
  auto txn = client::TransactionalProducer::open(*b.connection, "hung");
  REQUIRE(txn.ok());
  (*txn)->send("s", txn_record("a", "one"));
  REQUIRE((*txn)->send_offsets("s", "g", {{0, 1}}).ok());
  wait_for_txn_records(b.daemon.port(), "s", 2, 1);
  auto ctl = [&](const std::vector<std::string>& args) { return run_streamctl(b.daemon.port(), args); };

  const CtlResult listed = ctl({"txn", "list", "--open"});
  CHECK(listed.code == 0);
  REQUIRE(listed.lines().size() == 2);
  CHECK(listed.lines()[1].rfind("hung ", 0) == 0);
  CHECK(listed.lines()[1].find("Ongoing") != std::string::npos);
  const CtlResult described = ctl({"txn", "describe", "hung", "--json"});
  CHECK(described.code == 0);
  CHECK(described.out.find(R"("state":"Ongoing")") != std::string::npos);
  CHECK(described.out.find(R"("offsets":[{"group":"g","stream":"s","partition":0,"next":1}])") != std::string::npos);
  auto metrics = parse_prometheus_text(b.daemon.http_get("/metrics").body);
  REQUIRE(metrics.exposition.has_value());
  CHECK(metrics.exposition->value("streamd_transactions_open") == 1);
  CHECK(metrics.exposition->value("streamd_stream_unstable_records", {{"stream", "s"}}) == 1);

  const CtlResult aborted = ctl({"txn", "abort", "hung", "--json"});
  CHECK(aborted.code == 0);
  CHECK(aborted.out.find(R"("state":"CompleteAbort")") != std::string::npos);
  CHECK(aborted.out.find(R"("epoch":)" + std::to_string((*txn)->identity().epoch + 1)) != std::string::npos);
  const client::Status refused = (*txn)->commit();
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().name() == "PRODUCER_FENCED");
  for (int32_t p = 0; p < 2; ++p) {
    auto bounds = client::Admin(*b.connection).bounds("s", p);
    CHECK(bounds.value().last_stable == bounds.value().next);
  }
  CHECK(client::Admin(*b.connection).committed("s", "g", 0).error().name() == "UNKNOWN_GROUP");
  CHECK(ctl({"txn", "abort", "hung"}).code == 65);     // INVALID_TXN_STATE: nothing open
  CHECK(ctl({"txn", "describe", "nobody"}).code == 66);  // TRANSACTIONAL_ID_NOT_FOUND
  metrics = parse_prometheus_text(b.daemon.http_get("/metrics").body);
  REQUIRE(metrics.exposition.has_value());
  CHECK(metrics.exposition->value("streamd_transactions_total", {{"outcome", "operator"}}) == 1);
}

TEST_CASE("streamctl produce --transactional-id commits every --batch lines, and a kill -9 leaves the open one aborted",
          "[streamctl][transactions]") {
  TxnBroker b;
  b.create("s", 1);
  auto ctl = [&](const std::vector<std::string>& args, const std::string& input = "") {
    return run_streamctl(b.daemon.port(), args, input);
  };
  const CtlResult produced =
      ctl({"produce", "s", "--transactional-id", "loader", "--batch", "3"}, "a\nb\nc\nd\ne\n");
  CHECK(produced.code == 0);
  CHECK(produced.err.empty());
  CHECK(txn_payloads(b.daemon.port(), "s", 0) == std::vector<std::string>{"a", "b", "c", "d", "e"});
  CHECK(ctl({"txn", "describe", "loader", "--json"}).out.find(R"("state":"CompleteCommit")") != std::string::npos);
  CHECK(ctl({"produce", "s", "--transactional-id", "loader", "--no-idempotence", "--value", "x"}).code == 78);

  // A transaction open when the broker dies stays unread after the restart, until the id comes back,
  // which aborts it; what was committed before stays.
  auto txn = client::TransactionalProducer::open(*b.connection, "loader");
  REQUIRE(txn.ok());
  (*txn)->send("s", txn_record("", "lost"));
  wait_for_txn_records(b.daemon.port(), "s", 1, 6);
  b.daemon.kill9();
  txn->reset();
  b.connection.reset();
  REQUIRE(b.daemon.start());
  b.connect();
  CHECK(txn_payloads(b.daemon.port(), "s", 0) == std::vector<std::string>{"a", "b", "c", "d", "e"});
  const client::Bounds reopened = client::Admin(*b.connection).bounds("s", 0).value();
  CHECK(reopened.last_stable < reopened.next);
  CHECK(ctl({"produce", "s", "--transactional-id", "loader", "--value", "f"}).code == 0);
  CHECK(txn_payloads(b.daemon.port(), "s", 0) == std::vector<std::string>{"a", "b", "c", "d", "e", "f"});
  CHECK(txn_payloads(b.daemon.port(), "s", 0, v1::READ_UNCOMMITTED) ==
        std::vector<std::string>{"a", "b", "c", "d", "e", "lost", "f"});
}

}  // namespace
}  // namespace streamd::testing

namespace streamd::testing {
namespace {

// A producer pipelines its first batches to a partition before the partition has joined the
// transaction: they must still be written in the order sent (server/broker/txn/partition_joins.h).
TEST_CASE("pipelined batches to partitions joining a transaction keep their order, transaction after transaction",
          "[client][transactions]") {
  TxnBroker b;
  b.create("p", 3);
  client::TransactionOptions options;
  options.producer.linger = std::chrono::milliseconds(0);
  options.producer.batch_records = 5;
  auto txn = client::TransactionalProducer::open(*b.connection, "pipelined", options);
  REQUIRE(txn.ok());
  std::vector<std::string> sent[3];
  for (int t = 0; t < 5; ++t) {
    for (int i = 0; i < 600; ++i) {
      const std::string key = "k" + std::to_string(i % 3);
      const std::string value = std::to_string(t) + ":" + std::to_string(i);
      (*txn)->send("p", txn_record(key, value));
      sent[placement::partition_of(key, 3)].push_back(value);
    }
    const client::Status committed = (*txn)->commit();
    INFO((committed.ok() ? std::string() : committed.error().message()));
    REQUIRE(committed.ok());
  }
  for (int32_t p = 0; p < 3; ++p) CHECK(txn_payloads(b.daemon.port(), "p", p) == sent[p]);
}

}  // namespace
}  // namespace streamd::testing

namespace streamd::testing {
namespace {

// A partition holding a transaction no transactional id knows (here: the coordinator's state is lost)
// would hold its read_committed readers back for good; the broker aborts it at start.
TEST_CASE("at start the broker aborts a partition's transaction that no transactional id holds",
          "[client][transactions]") {
  TxnBroker b;
  b.create("s", 2);
  auto txn = client::TransactionalProducer::open(*b.connection, "lost");
  REQUIRE(txn.ok());
  (*txn)->send("s", txn_record("a", "orphan"));
  wait_for_txn_records(b.daemon.port(), "s", 2, 1);
  b.daemon.kill9();
  txn->reset();
  b.connection.reset();
  REQUIRE(std::filesystem::remove(b.daemon.data_dir() + "/TRANSACTIONS"));
  REQUIRE(b.daemon.start());
  b.connect();
  for (int32_t p = 0; p < 2; ++p) {
    const client::Bounds bounds = client::Admin(*b.connection).bounds("s", p).value();
    CHECK(bounds.last_stable == bounds.next);
    CHECK(txn_payloads(b.daemon.port(), "s", p).empty());
  }
  CHECK(b.daemon.log().find("that no transactional id holds; aborted it") != std::string::npos);
  // A clean restart finds nothing more to abort.
  CHECK(b.daemon.stop() == 0);
  const size_t logged = b.daemon.log().size();
  REQUIRE(b.daemon.start());
  CHECK(b.daemon.log().find("no transactional id holds", logged) == std::string::npos);
}

// A join is answered before it is durable (docs/TRANSACTIONS.md §"What waits for a sync"): a crash
// may take it while the partition keeps the batch. The restart takes the partition back into the id's
// transaction rather than aborting it, and the transaction ends as any other.
TEST_CASE("at start a partition whose join the crash took is the producer's open transaction again",
          "[client][transactions]") {
  TxnBroker b;
  b.create("s", 1);
  auto txn = client::TransactionalProducer::open(*b.connection, "lost-join");
  REQUIRE(txn.ok());
  const std::string log_file = b.daemon.data_dir() + "/TRANSACTIONS";
  const std::string before_join = log_file + ".before-join";
  std::filesystem::copy_file(log_file, before_join);
  (*txn)->send("s", txn_record("a", "kept"));
  wait_for_txn_records(b.daemon.port(), "s", 1, 1);
  b.daemon.kill9();
  txn->reset();
  b.connection.reset();
  std::filesystem::copy_file(before_join, log_file, std::filesystem::copy_options::overwrite_existing);
  REQUIRE(b.daemon.start());
  b.connect();
  CHECK(b.daemon.log().find("whose join the restart lost") != std::string::npos);
  CHECK(b.daemon.log().find("no transactional id holds") == std::string::npos);
  client::Bounds bounds = client::Admin(*b.connection).bounds("s", 0).value();
  CHECK(bounds.last_stable < bounds.next);
  // A new instance of the id aborts what the old one left open, the adopted partition included.
  auto again = client::TransactionalProducer::open(*b.connection, "lost-join");
  REQUIRE(again.ok());
  bounds = client::Admin(*b.connection).bounds("s", 0).value();
  CHECK(bounds.last_stable == bounds.next);
  CHECK(txn_payloads(b.daemon.port(), "s", 0).empty());
}

}  // namespace
}  // namespace streamd::testing

namespace streamd::testing {
namespace {

v1::Request txn_append(const std::string& stream, const std::string& id, int64_t producer, int32_t epoch,
                       int32_t sequence, std::optional<int32_t> partition) {
  v1::Request r = append_request(stream, {{"", "x", {}}});
  r.mutable_append()->set_transactional_id(id);
  if (producer >= 0) {
    r.mutable_append()->mutable_producer()->set_producer_id(producer);
    r.mutable_append()->mutable_producer()->set_epoch(epoch);
    r.mutable_append()->mutable_producer()->set_sequence(sequence);
  }
  if (partition) r.mutable_append()->set_partition(*partition);
  return r;
}

TEST_CASE("bad transactional requests get a specific error and change nothing", "[transactions]") {
  TxnBroker b;
  b.create("s", 2);
  WireClient c(b.daemon.port());
  v1::Request init;
  init.mutable_init_producer()->set_transactional_id("bad");
  init.mutable_init_producer()->set_transaction_timeout_ms(24 * 3600 * 1000);
  CHECK(error_name(c.call(init)) == "INVALID_TRANSACTION_TIMEOUT");
  init.mutable_init_producer()->set_transaction_timeout_ms(0);  // the default, 60 s
  init.set_id(0);
  v1::Response given = c.call(init);
  REQUIRE(given.has_init_producer());
  const int64_t pid = given.init_producer().producer_id();
  const int32_t epoch = given.init_producer().epoch();

  CHECK(error_name(c.call(txn_append("s", "bad", -1, 0, 0, 0))) == "PROTOCOL_ERROR");        // no producer
  CHECK(error_name(c.call(txn_append("s", "bad", pid, epoch, 0, std::nullopt))) == "PROTOCOL_ERROR");  // no partition
  CHECK(error_name(c.call(txn_append("s", "bad", pid + 1, epoch, 0, 0))) == "INVALID_PRODUCER_ID_MAPPING");
  CHECK(error_name(c.call(txn_append("s", "bad", pid, epoch + 1, 0, 0))) == "PRODUCER_FENCED");
  CHECK(error_name(c.call(txn_append("s", "bad", pid, epoch, 0, 7))) == "UNKNOWN_PARTITION");
  CHECK(error_name(c.call(txn_append("nope", "bad", pid, epoch, 0, 0))) == "STREAM_NOT_FOUND");
  CHECK(error_name(c.call(txn_append("s", "nobody", pid, epoch, 0, 0))) == "INVALID_PRODUCER_ID_MAPPING");

  v1::Request offsets;
  auto* o = offsets.mutable_txn_commit_offsets();
  o->mutable_producer()->set_transactional_id("bad");
  o->mutable_producer()->set_producer_id(pid);
  o->mutable_producer()->set_epoch(epoch);
  o->set_stream("nope");
  o->set_group("g");
  o->add_offsets()->set_next(1);
  CHECK(error_name(c.call(offsets)) == "STREAM_NOT_FOUND");
  o->set_stream("s");
  o->set_group("");
  offsets.set_id(0);
  CHECK(error_name(c.call(offsets)) == "STREAM_MISCONFIGURED");

  v1::Request end;
  end.mutable_end_txn()->mutable_producer()->set_producer_id(pid);
  CHECK(error_name(c.call(end)) == "PROTOCOL_ERROR");  // no transactional id
  end.mutable_end_txn()->mutable_producer()->set_transactional_id("bad");
  end.mutable_end_txn()->mutable_producer()->set_epoch(epoch);
  end.mutable_end_txn()->set_commit(true);
  end.set_id(0);
  CHECK(error_name(c.call(end)) == "INVALID_TXN_STATE");  // nothing open

  // None of it began a transaction or wrote a record.
  auto described = client::TxnAdmin(*b.connection).describe("bad");
  REQUIRE(described.ok());
  CHECK(described->state == "Empty");
  for (int32_t p = 0; p < 2; ++p) CHECK(client::Admin(*b.connection).bounds("s", p).value().next == 0);
}

}  // namespace
}  // namespace streamd::testing
