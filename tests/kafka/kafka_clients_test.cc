// The real Kafka clients (kcat, confluent-kafka-python, kafka-python, kafkajs) against the real
// streamd: each case starts the daemon with a Kafka listener on an ephemeral loopback port and runs a
// scenario script from tests/kafka/clients or tests/kafka/node, which asserts and exits non-zero with
// what differed. scripts/setup installs every client.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "tests/kafka/program_runner.h"
#include "tests/support/daemon_fixture.h"
#include "tests/support/pg_cluster.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_certificates.h"

namespace streamd::kafka {
namespace {

using streamd::testing::DaemonProcess;
using testing::ProgramResult;
using testing::run_program;

const std::string kScripts = STREAMD_SOURCE_DIR "/tests/kafka";
// Debian's python3, where python3-confluent-kafka and python3-kafka install.
const std::string kPython = "/usr/bin/python3";

struct ClientsKafkaDaemon {
  explicit ClientsKafkaDaemon(std::vector<std::string> extra = {}) : daemon(args(std::move(extra))) {
    REQUIRE(daemon.start());
    REQUIRE(daemon.kafka_port() != 0);
  }
  ~ClientsKafkaDaemon() {
    if (daemon.running()) CHECK(daemon.stop() == 0);
  }
  static std::vector<std::string> args(std::vector<std::string> extra) {
    std::vector<std::string> a = {"--kafka.listen", "127.0.0.1:0", "--auto-create-streams", "true"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  DaemonProcess daemon;
};

void require_ok(const ProgramResult& r) {
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.code == 0);
}

ProgramResult python(const std::string& script, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kPython, kScripts + "/clients/" + script};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, {"STREAMCTL=" STREAMCTL_BINARY, "PYTHONDONTWRITEBYTECODE=1"}, std::chrono::seconds(90));
}

ProgramResult scenario(const std::string& script, const std::string& name, const ClientsKafkaDaemon& d,
                       std::vector<std::string> more = {}) {
  std::vector<std::string> args = {name, std::to_string(d.daemon.kafka_port()), std::to_string(d.daemon.port())};
  args.insert(args.end(), more.begin(), more.end());
  return python(script, args);
}

ProgramResult kafkajs(const std::string& name, const ClientsKafkaDaemon& d, const std::string& topic = "") {
  std::vector<std::string> argv = {"node", kScripts + "/node/kafkajs_scenarios.js", name,
                                   std::to_string(d.daemon.kafka_port())};
  if (!topic.empty()) argv.push_back(topic);
  return run_program(argv, {}, std::chrono::seconds(90));
}

TEST_CASE("the Kafka clients are installed (scripts/setup)") {
  CHECK(testing::on_path("kcat"));
  CHECK(testing::on_path("node"));
  CHECK(run_program({kPython, "-c", "import confluent_kafka, kafka"}).code == 0);
  CHECK(run_program({"node", "-e", "require('" + kScripts + "/node/node_modules/kafkajs')"}).code == 0);
}

TEST_CASE("kcat: metadata, keys, headers, a tombstone, and consuming from every start") {
  ClientsKafkaDaemon d;
  require_ok(scenario("kcat_scenarios.py", "basic", d));
}

TEST_CASE("kcat: gzip, snappy, lz4 and zstd batches round-trip") {
  ClientsKafkaDaemon d;
  require_ok(scenario("kcat_scenarios.py", "compression", d));
}

TEST_CASE("kcat: -X transactional.id commits at the end of the input, each run the id's next epoch") {
  ClientsKafkaDaemon d;
  require_ok(scenario("kcat_scenarios.py", "transactional", d));
}

TEST_CASE("kcat: a balanced consumer group of two members") {
  ClientsKafkaDaemon d;
  require_ok(scenario("kcat_scenarios.py", "group", d));
}

TEST_CASE("confluent-kafka: every delivery report survives kill -9 and a restart") {
  ClientsKafkaDaemon d;
  streamd::testing::TempDir tmp;
  const std::string reports = tmp.path() + "/reports.json";
  require_ok(scenario("confluent_scenarios.py", "produce", d, {reports}));
  d.daemon.kill9();
  REQUIRE(d.daemon.start());
  require_ok(scenario("confluent_scenarios.py", "verify", d, {reports}));
}

TEST_CASE("confluent-kafka: assign, commit, committed, watermarks and offsets_for_times") {
  ClientsKafkaDaemon d;
  require_ok(scenario("confluent_scenarios.py", "offsets", d));
}

TEST_CASE("confluent-kafka: large batches pass the consumer's CRC check") {
  ClientsKafkaDaemon d;
  require_ok(scenario("confluent_scenarios.py", "crcs", d));
}

TEST_CASE("confluent-kafka: a two-member group rebalances on join and on close") {
  ClientsKafkaDaemon d;
  require_ok(scenario("confluent_scenarios.py", "group", d));
}

TEST_CASE("confluent-kafka: AdminClient creates and deletes topics") {
  ClientsKafkaDaemon d;
  require_ok(scenario("confluent_scenarios.py", "admin", d));
}

TEST_CASE("confluent-kafka: a restarted static member gets its partitions back without a rebalance") {
  ClientsKafkaDaemon d;
  require_ok(scenario("confluent_scenarios.py", "static", d));
}

TEST_CASE("confluent-kafka: list_groups with states and members, create_partitions refused") {
  ClientsKafkaDaemon d;
  require_ok(scenario("confluent_scenarios.py", "groups", d));
}

TEST_CASE("confluent-kafka: alter_configs on a live topic, validate_only, refusals naming the config") {
  ClientsKafkaDaemon d;
  require_ok(scenario("confluent_scenarios.py", "configs", d));
}

TEST_CASE("confluent-kafka transactions: consume-transform-produce over 2 topics, an abort never read committed") {
  ClientsKafkaDaemon d;
  require_ok(scenario("txn_scenarios.py", "eos", d));
}

TEST_CASE("confluent-kafka transactions: a second instance fences the first and aborts what it left open") {
  ClientsKafkaDaemon d;
  require_ok(scenario("txn_scenarios.py", "fence", d));
}

TEST_CASE("confluent-kafka transactions: the broker aborts a transaction past its timeout") {
  ClientsKafkaDaemon d;
  require_ok(scenario("txn_scenarios.py", "timeout", d));
}

TEST_CASE("kafka-python: a committed and an aborted transaction's messages, and never a marker") {
  ClientsKafkaDaemon d;
  require_ok(scenario("txn_scenarios.py", "markers", d));
}

TEST_CASE("kafkajs transactions: committed and aborted transactions, sendOffsets, a read_committed consumer") {
  ClientsKafkaDaemon d;
  require_ok(kafkajs("txn", d));
}

TEST_CASE("Kafka transactions on the postgres engine: confluent-kafka's EOS loop and fencing, kafka-python, kafkajs") {
  const std::vector<std::string> on_postgres = {"--storage.engine", "postgres", "--storage.postgres.dsn",
                                                streamd::testing::create_database(streamd::testing::shared_cluster_dsn())};
  ClientsKafkaDaemon d(on_postgres);
  require_ok(scenario("txn_scenarios.py", "eos", d));
  require_ok(scenario("txn_scenarios.py", "fence", d));
  require_ok(scenario("txn_scenarios.py", "markers", d));
  require_ok(kafkajs("txn", d));
}

TEST_CASE("kafkajs: alterConfigs on a live topic, validateOnly, a refused config") {
  ClientsKafkaDaemon d;
  require_ok(kafkajs("configs", d));
}

TEST_CASE("kafka-python: commit metadata on an empty topic, group admin, partitions and ACLs refused") {
  ClientsKafkaDaemon d;
  require_ok(scenario("kafka_python_scenarios.py", "groups", d));
}

TEST_CASE("kafkajs: admin groups, offsets with metadata, createPartitions refused") {
  ClientsKafkaDaemon d;
  require_ok(kafkajs("groups", d));
}

TEST_CASE("kafka-python: producer, consumers with and without a group, resuming after a commit") {
  ClientsKafkaDaemon d;
  require_ok(scenario("kafka_python_scenarios.py", "basic", d));
}

TEST_CASE("kafka-python: KafkaAdminClient create_topics, describe_configs, alter_configs, delete_topics") {
  ClientsKafkaDaemon d;
  require_ok(scenario("kafka_python_scenarios.py", "admin", d));
}

TEST_CASE("kafkajs: admin, producer with headers, consumer.run, fetchOffsets") {
  ClientsKafkaDaemon d;
  require_ok(kafkajs("basic", d));
}

TEST_CASE("kafkajs: two consumers sharing a group") {
  ClientsKafkaDaemon d;
  require_ok(kafkajs("group", d));
}

TEST_CASE("confluent-kafka: producer timestamps, null against empty, offsets_for_times past the end") {
  ClientsKafkaDaemon d;
  require_ok(scenario("fidelity_scenarios.py", "confluent", d));
}

TEST_CASE("kafka-python: producer timestamps, null against empty, offsets_for_times past the end") {
  ClientsKafkaDaemon d;
  require_ok(scenario("fidelity_scenarios.py", "kafka_python", d));
}

TEST_CASE("kcat: producer timestamps, null against empty, -Q past the end") {
  ClientsKafkaDaemon d;
  require_ok(scenario("fidelity_scenarios.py", "kcat", d));
}

TEST_CASE("kafkajs: producer timestamps, null against empty, lookups by create time") {
  ClientsKafkaDaemon d;
  // confluent-kafka writes the null header value kafkajs cannot send; kafkajs then reads it back.
  require_ok(scenario("fidelity_scenarios.py", "confluent", d));
  require_ok(kafkajs("fidelity", d, "fid-ck"));
}

TEST_CASE("confluent-kafka: fetch.max.bytes=1000000 over two partitions of 900 KiB records drains both") {
  ClientsKafkaDaemon d;
  require_ok(scenario("fidelity_scenarios.py", "bigfetch", d));
}

TEST_CASE("interop: what kafkajs writes, kafka-python, kcat and streamctl read byte for byte") {
  ClientsKafkaDaemon d;
  require_ok(scenario("interop_scenarios.py", "kafka-writes", d));
}

TEST_CASE("interop: what streamctl writes, every Kafka client reads") {
  ClientsKafkaDaemon d;
  require_ok(scenario("interop_scenarios.py", "streamctl-writes", d));
}

TEST_CASE("interop: a Kafka group's offsets are streamctl's, and each resumes the other") {
  ClientsKafkaDaemon d;
  require_ok(scenario("interop_scenarios.py", "groups", d));
}

TEST_CASE("interop: docs/KAFKA.md's partitioners place keys where streamctl does") {
  ClientsKafkaDaemon d({"--kafka.enforce-placement", "true"});
  require_ok(scenario("interop_scenarios.py", "placement", d));
}

// The Kafka TLS listener beside the plaintext one, SASL with every mechanism, and an access file of
// principals whose tokens (and SCRAM passwords) are "t-" and their names (security_scenarios.py).
struct SecuredKafka {
  SecuredKafka() {
    INFO(certs.error());
    REQUIRE(certs.ok());
    std::string text;
    for (const char* name : {"root", "ingest", "reader"}) {
      ProgramResult r = run_program(
          {"sh", "-c", std::string("echo t-") + name + " | " STREAMCTL_BINARY " auth token " + name + " --scram --stdin"});
      REQUIRE(r.code == 0);
      text += r.out;
    }
    text += "grant root all *\ngrant ingest write orders.*\ngrant reader read orders.*\n"
            "grant \"CN=alice,O=streamd tests\" read,write tls.*\n";
    access = dir.file("access");
    std::ofstream(access) << text;
    REQUIRE(::chmod(access.c_str(), 0600) == 0);
    daemon.emplace(ClientsKafkaDaemon::args({"--kafka.tls-listen", "127.0.0.1:0", "--kafka.sasl-mechanisms",
                                      "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "--tls.cert-file", certs.server().cert,
                                      "--tls.key-file", certs.server().key, "--tls.client-ca-file", certs.ca(),
                                      "--tls.client-auth", "optional", "--auth.token-file", access}));
    REQUIRE(daemon->start());
    REQUIRE(daemon->kafka_tls_port() != 0);
  }
  ~SecuredKafka() {
    if (daemon && daemon->running()) CHECK(daemon->stop() == 0);
  }
  ProgramResult scenario(const std::string& name) {
    return python("security_scenarios.py",
                  {name, std::to_string(daemon->kafka_tls_port()), std::to_string(daemon->port()),
                   std::to_string(daemon->kafka_port()), std::filesystem::path(certs.ca()).parent_path().string()});
  }

  streamd::testing::TestCertificates certs;
  streamd::testing::TempDir dir;
  std::string access;
  std::optional<DaemonProcess> daemon;
};

TEST_CASE("kcat over security.protocol=ssl with a client certificate, and TLS to the plaintext port fails") {
  SecuredKafka k;
  require_ok(k.scenario("kcat_ssl"));
  CHECK(k.daemon->log().find("a TLS handshake on the plaintext listener") != std::string::npos);
}

TEST_CASE("kcat over sasl_ssl: PLAIN and SCRAM logins, rights held and refused, wrong passwords") {
  SecuredKafka k;
  require_ok(k.scenario("kcat_sasl"));
  const std::string log = k.daemon->log();
  CHECK(log.find("SASL PLAIN login of user \"reader\" failed") != std::string::npos);
  CHECK(log.find("t-reader") == std::string::npos);
  CHECK(log.find("wrong") == std::string::npos);
}

TEST_CASE("confluent-kafka over SCRAM-SHA-256: produce, a group, TOPIC_ and GROUP_AUTHORIZATION_FAILED") {
  SecuredKafka k;
  require_ok(k.scenario("confluent"));
}

TEST_CASE("kafka-python over SASL_SSL with SCRAM-SHA-512") {
  SecuredKafka k;
  require_ok(k.scenario("kafka_python"));
  // The wrong password's login, which kafka-python can only report as an unreachable broker.
  CHECK(k.daemon->log().find("SASL SCRAM-SHA-512 login of user \"reader\" failed: invalid credentials") !=
        std::string::npos);
}

TEST_CASE("kafkajs over TLS with SCRAM: produce, a group, a refusal, a wrong password") {
  SecuredKafka k;
  ProgramResult created = run_program({"sh", "-c", STREAMCTL_BINARY " --broker 127.0.0.1:" +
                                                       std::to_string(k.daemon->port()) +
                                                       " --token t-root create orders.js"});
  REQUIRE(created.code == 0);
  REQUIRE(run_program({"sh", "-c", STREAMCTL_BINARY " --broker 127.0.0.1:" + std::to_string(k.daemon->port()) +
                                       " --token t-root create payroll"})
              .code == 0);
  require_ok(run_program({"node", kScripts + "/node/kafkajs_security.js", std::to_string(k.daemon->kafka_tls_port()),
                          k.certs.ca()},
                         {}, std::chrono::seconds(90)));
}

}  // namespace
}  // namespace streamd::kafka
