// streamctl when the broker is not there: one-shot commands report a refused connection at once,
// long-running ones say once per outage that they are reconnecting.
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
    CtlResult result = run_streamctl(port, args);
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

}  // namespace
}  // namespace streamd::testing
