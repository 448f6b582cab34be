// Idempotent and transactional Kafka producers (docs/KAFKA.md §Idempotent producers, §Transactions)
// through faults, with the real clients: confluent-kafka (librdkafka, enable.idempotence or a
// transactional.id) and kafkajs (idempotent: true) write while this test kills the broker with SIGKILL
// and starts it again, twice, and stops it with SIGSTOP for longer than the clients' request timeout,
// once. The scenario scripts then read everything back: every acknowledged message exactly once, in
// order per key; every transaction whole or absent, every one answered committed whole.
#include <signal.h>

#include <catch2/catch.hpp>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "tests/kafka/program_runner.h"
#include "tests/support/daemon_fixture.h"

namespace streamd::kafka {
namespace {

using namespace std::chrono_literals;
using streamd::testing::DaemonProcess;
using testing::ProgramResult;
using testing::run_program;

const std::string kScenarioDir = STREAMD_SOURCE_DIR "/tests/kafka";

// Runs `client` while the broker is killed and restarted twice and stopped past the clients' request
// timeout (3 s) once, then waits for the client's verdict.
void through_faults(DaemonProcess& daemon, const std::vector<std::string>& client) {
  auto result = std::async(std::launch::async, [&] {
    return run_program(client, {"STREAMCTL=" STREAMCTL_BINARY, "PYTHONDONTWRITEBYTECODE=1"}, std::chrono::seconds(240));
  });
  bool restarted = true;
  for (int i = 0; i < 2 && restarted; ++i) {
    std::this_thread::sleep_for(1500ms);
    daemon.kill9();
    std::this_thread::sleep_for(300ms);
    restarted = daemon.start(30s);
  }
  REQUIRE(restarted);
  std::this_thread::sleep_for(1000ms);
  daemon.signal(SIGSTOP);
  std::this_thread::sleep_for(4500ms);
  daemon.signal(SIGCONT);
  const ProgramResult r = result.get();
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.code == 0);
}

TEST_CASE("confluent-kafka with enable.idempotence: every message once, through kill -9 and SIGSTOP",
          "[kafka][idempotence]") {
  DaemonProcess daemon({"--kafka.listen", "127.0.0.1:0", "--auto-create-streams", "true"});
  daemon.keep_ports();
  REQUIRE(daemon.start());
  through_faults(daemon, {"/usr/bin/python3", kScenarioDir + "/clients/idempotence_scenarios.py", "produce",
                          std::to_string(daemon.kafka_port()), std::to_string(daemon.port()), "100000"});
}

TEST_CASE("kafkajs with idempotent: true: every message once, through kill -9 and SIGSTOP", "[kafka][idempotence]") {
  DaemonProcess daemon({"--kafka.listen", "127.0.0.1:0", "--auto-create-streams", "true"});
  daemon.keep_ports();
  REQUIRE(daemon.start());
  through_faults(daemon, {"node", kScenarioDir + "/node/kafkajs_idempotence.js", std::to_string(daemon.kafka_port()),
                          "20000"});
}

TEST_CASE("confluent-kafka transactions: each whole or absent, every answered commit kept, through kill -9 and SIGSTOP",
          "[kafka][transactions]") {
  DaemonProcess daemon({"--kafka.listen", "127.0.0.1:0"});
  daemon.keep_ports();
  REQUIRE(daemon.start());
  through_faults(daemon, {"/usr/bin/python3", kScenarioDir + "/clients/txn_scenarios.py", "crash",
                          std::to_string(daemon.kafka_port()), std::to_string(daemon.port())});
}

}  // namespace
}  // namespace streamd::kafka
