// The real Kafka clients (kcat, confluent-kafka-python, kafka-python, kafkajs) against the real
// streamd: each case starts the daemon with a Kafka listener on an ephemeral loopback port and runs a
// scenario script from tests/kafka/clients or tests/kafka/node, which asserts and exits non-zero with
// what differed. scripts/setup installs every client.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/kafka/program_runner.h"
#include "tests/support/daemon_fixture.h"
#include "tests/support/temp_dir.h"

namespace streamd::kafka {
namespace {

using streamd::testing::DaemonProcess;
using testing::ProgramResult;
using testing::run_program;

const std::string kScripts = STREAMD_SOURCE_DIR "/tests/kafka";
// Debian's python3, where python3-confluent-kafka and python3-kafka install.
const std::string kPython = "/usr/bin/python3";

struct KafkaDaemon {
  explicit KafkaDaemon(std::vector<std::string> extra = {}) : daemon(args(std::move(extra))) {
    REQUIRE(daemon.start());
    REQUIRE(daemon.kafka_port() != 0);
  }
  ~KafkaDaemon() {
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

ProgramResult scenario(const std::string& script, const std::string& name, const KafkaDaemon& d,
                       std::vector<std::string> more = {}) {
  std::vector<std::string> args = {name, std::to_string(d.daemon.kafka_port()), std::to_string(d.daemon.port())};
  args.insert(args.end(), more.begin(), more.end());
  return python(script, args);
}

ProgramResult kafkajs(const std::string& name, const KafkaDaemon& d) {
  return run_program({"node", kScripts + "/node/kafkajs_scenarios.js", name, std::to_string(d.daemon.kafka_port())},
                     {}, std::chrono::seconds(90));
}

TEST_CASE("the Kafka clients are installed (scripts/setup)") {
  CHECK(testing::on_path("kcat"));
  CHECK(testing::on_path("node"));
  CHECK(run_program({kPython, "-c", "import confluent_kafka, kafka"}).code == 0);
  CHECK(run_program({"node", "-e", "require('" + kScripts + "/node/node_modules/kafkajs')"}).code == 0);
}

TEST_CASE("kcat: metadata, keys, headers, a tombstone, and consuming from every start") {
  KafkaDaemon d;
  require_ok(scenario("kcat_scenarios.py", "basic", d));
}

TEST_CASE("kcat: gzip, snappy, lz4 and zstd batches round-trip") {
  KafkaDaemon d;
  require_ok(scenario("kcat_scenarios.py", "compression", d));
}

TEST_CASE("kcat: a balanced consumer group of two members") {
  KafkaDaemon d;
  require_ok(scenario("kcat_scenarios.py", "group", d));
}

TEST_CASE("confluent-kafka: every delivery report survives kill -9 and a restart") {
  KafkaDaemon d;
  streamd::testing::TempDir tmp;
  const std::string reports = tmp.path() + "/reports.json";
  require_ok(scenario("confluent_scenarios.py", "produce", d, {reports}));
  d.daemon.kill9();
  REQUIRE(d.daemon.start());
  require_ok(scenario("confluent_scenarios.py", "verify", d, {reports}));
}

TEST_CASE("confluent-kafka: assign, commit, committed, watermarks and offsets_for_times") {
  KafkaDaemon d;
  require_ok(scenario("confluent_scenarios.py", "offsets", d));
}

TEST_CASE("confluent-kafka: a two-member group rebalances on join and on close") {
  KafkaDaemon d;
  require_ok(scenario("confluent_scenarios.py", "group", d));
}

TEST_CASE("confluent-kafka: AdminClient creates and deletes topics") {
  KafkaDaemon d;
  require_ok(scenario("confluent_scenarios.py", "admin", d));
}

TEST_CASE("kafka-python: producer, consumers with and without a group, resuming after a commit") {
  KafkaDaemon d;
  require_ok(scenario("kafka_python_scenarios.py", "basic", d));
}

TEST_CASE("kafka-python: KafkaAdminClient create_topics, describe_configs, delete_topics") {
  KafkaDaemon d;
  require_ok(scenario("kafka_python_scenarios.py", "admin", d));
}

TEST_CASE("kafkajs: admin, producer with headers, consumer.run, fetchOffsets") {
  KafkaDaemon d;
  require_ok(kafkajs("basic", d));
}

TEST_CASE("kafkajs: two consumers sharing a group") {
  KafkaDaemon d;
  require_ok(kafkajs("group", d));
}

TEST_CASE("interop: what kafkajs writes, kafka-python, kcat and streamctl read byte for byte") {
  KafkaDaemon d;
  require_ok(scenario("interop_scenarios.py", "kafka-writes", d));
}

TEST_CASE("interop: what streamctl writes, every Kafka client reads") {
  KafkaDaemon d;
  require_ok(scenario("interop_scenarios.py", "streamctl-writes", d));
}

TEST_CASE("interop: a Kafka group's offsets are streamctl's, and each resumes the other") {
  KafkaDaemon d;
  require_ok(scenario("interop_scenarios.py", "groups", d));
}

TEST_CASE("interop: docs/KAFKA.md's partitioners place keys where streamctl does") {
  KafkaDaemon d({"--kafka.enforce-placement", "true"});
  require_ok(scenario("interop_scenarios.py", "placement", d));
}

}  // namespace
}  // namespace streamd::kafka
