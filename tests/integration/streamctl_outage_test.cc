// streamctl when the broker is not there: one-shot commands report a refused connection at once,
// long-running ones say once per outage that they are reconnecting, and a signal ends produce and
// consume --follow in bounded time after the broker was killed under them (kill -9).
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <regex>
#include <thread>

#include "tests/integration/streamctl_runner.h"
#include "tests/support/daemon_fixture.h"

namespace streamd::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string lines_of(int from, int to) {
  std::string text;
  for (int i = from; i < to; ++i) text += "line " + std::to_string(i) + "\n";
  return text;
}

// The records the --json acknowledgement lines cover.
int64_t acknowledged_records(const std::vector<std::string>& lines) {
  int64_t records = 0;
  for (const std::string& line : lines) records += json_int(line, "last") - json_int(line, "first") + 1;
  return records;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_CASE("one-shot commands report a refused connection at once", "[streamctl]") {
  const uint16_t port = free_port();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"list"}, {"describe", "s"}, {"bounds", "s"}, {"produce", "s", "--value", "v"},
        {"consume", "s"}, {"health", "--json"}}) {
    INFO(args.front());
    const auto started = Clock::now();
    // With input waiting that none of them reads: they end without it.
    CtlResult result = run_streamctl(port, args, std::string(1 << 20, 'x'));
    CHECK(Clock::now() - started < 1s);
    CHECK(result.code == 69);
    CHECK(result.err.find("UNAVAILABLE") != std::string::npos);
  }
}

TEST_CASE("a producer reading stdin says once that it is reconnecting, then delivers", "[streamctl]") {
  const uint16_t port = free_port();
  DaemonProcess daemon({"--listen", "127.0.0.1:" + std::to_string(port)});
  StreamctlProcess producer(port, {"--json", "produce", "late", "--batch", "1"}, /*open_stdin=*/true);
  REQUIRE(producer.write_input(lines_of(0, 3)));
  // Several reconnect attempts fail while nothing listens.
  std::this_thread::sleep_for(1500ms);
  REQUIRE(daemon.start());
  CHECK(producer.wait_for_lines(3, 20s).size() == 3);
  producer.close_input();
  CtlResult ended = producer.wait();
  CHECK(ended.code == 0);
  CHECK(acknowledged_records(ended.lines()) == 3);
  CHECK(count_of(ended.err, "reconnecting") == 1);
  CHECK(count_of(ended.err, "reconnected to") == 1);
  CHECK(daemon.stop() == 0);
}

TEST_CASE("SIGTERM ends produce within its grace after the broker was killed, counting what is lost",
          "[streamctl]") {
  DaemonProcess daemon;
  REQUIRE(daemon.start());
  REQUIRE(run_streamctl(daemon.port(), {"create", "p"}).code == 0);
  StreamctlProcess producer(daemon.port(), {"--json", "produce", "p", "--batch", "5"}, /*open_stdin=*/true);
  REQUIRE(producer.write_input(lines_of(0, 100)));
  const std::vector<std::string> before = producer.wait_for_lines(20, 20s);
  REQUIRE(acknowledged_records(before) == 100);
  daemon.kill9();
  // Read by streamctl but never acknowledged: nothing answers them now.
  REQUIRE(producer.write_input(lines_of(100, 150)));
  std::this_thread::sleep_for(500ms);

  const auto signalled = Clock::now();
  producer.signal(SIGTERM);
  CtlResult ended = producer.wait(20s);
  // Two seconds of grace, then the unanswered batches are given up on.
  CHECK(Clock::now() - signalled < 3500ms);
  CHECK(ended.code == 69);
  std::smatch counts;
  REQUIRE(std::regex_search(ended.err, counts, std::regex(R"((\d+) of (\d+) records were not acknowledged)")));
  const int64_t unacknowledged = std::stoll(counts[1]);
  const int64_t sent = std::stoll(counts[2]);
  CHECK(sent == 150);
  CHECK(unacknowledged > 0);
  // Every record read is either in a printed acknowledgement or counted as not acknowledged.
  CHECK(acknowledged_records(ended.lines()) + unacknowledged == sent);
  CHECK(ended.err.find("\"unacknowledged\":\"" + std::to_string(unacknowledged) + "\"") != std::string::npos);

  // What was printed is there after a restart, at the printed offsets.
  REQUIRE(daemon.start());
  CtlResult read = run_streamctl(daemon.port(), {"consume", "p", "--json"});
  REQUIRE(read.code == 0);
  const std::vector<std::string> entries = read.lines();
  for (const std::string& line : ended.lines()) {
    for (int64_t offset = json_int(line, "first"); offset <= json_int(line, "last"); ++offset) {
      REQUIRE(offset < static_cast<int64_t>(entries.size()));
      CHECK(json_int(entries[offset], "offset") == offset);
      CHECK(json_string(entries[offset], "payload") == "line " + std::to_string(offset));
    }
  }
  CHECK(daemon.stop() == 0);
}

TEST_CASE("a second signal ends produce at once", "[streamctl]") {
  DaemonProcess daemon;
  REQUIRE(daemon.start());
  StreamctlProcess producer(daemon.port(), {"produce", "q"}, /*open_stdin=*/true);
  REQUIRE(producer.write_input(lines_of(0, 1)));
  REQUIRE(producer.wait_for_lines(1, 20s).size() == 1);
  daemon.kill9();
  REQUIRE(producer.write_input(lines_of(1, 10)));
  std::this_thread::sleep_for(300ms);
  const auto first = Clock::now();
  producer.signal(SIGTERM);
  std::this_thread::sleep_for(100ms);
  producer.signal(SIGTERM);
  CtlResult ended = producer.wait(20s);
  // Well before the first signal's 2 s grace ends, and by the second signal's own exit code (the
  // grace would end in UNAVAILABLE, 69).
  CHECK(Clock::now() - first < 1500ms);
  CHECK(ended.code == 128 + SIGTERM);
}

TEST_CASE("consume --follow stops on SIGTERM after its broker was killed", "[streamctl]") {
  DaemonProcess daemon;
  REQUIRE(daemon.start());
  REQUIRE(run_streamctl(daemon.port(), {"produce", "f", "--value", "1", "2", "3"}).code == 0);
  StreamctlProcess follower(daemon.port(), {"consume", "f", "--follow", "--group", "g"});
  REQUIRE(follower.wait_for_lines(3, 20s).size() == 3);
  // The group committed what was printed before the broker went away.
  std::this_thread::sleep_for(300ms);
  daemon.kill9();
  std::this_thread::sleep_for(500ms);
  const auto signalled = Clock::now();
  follower.signal(SIGTERM);
  CtlResult ended = follower.wait(20s);
  CHECK(Clock::now() - signalled < 3500ms);
  CHECK(ended.code == 0);
  CHECK(ended.lines().size() == 3);
  REQUIRE(daemon.start());
  CtlResult committed = run_streamctl(daemon.port(), {"committed", "f", "--group", "g", "--json"});
  CHECK(json_int(committed.out, "offset") == 3);
  CHECK(daemon.stop() == 0);
}

}  // namespace
}  // namespace streamd::testing
