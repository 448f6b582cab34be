// streamctl bench produce against the real daemon: a paced closed loop (--rate) appends every record
// and none before its turn, and --rate without --sync is refused before anything is sent.
#include <catch2/catch.hpp>
#include <string>

#include "tests/integration/streamctl_runner.h"
#include "tests/support/daemon_fixture.h"

namespace streamd::testing {
namespace {

TEST_CASE("bench produce --sync --rate appends every record, none before its turn", "[streamctl]") {
  DaemonProcess daemon;
  REQUIRE(daemon.start());
  // 2 producers at 100 appends/s in all: each takes a turn every 20 ms, the second 10 ms after the
  // first; each producer's first append goes at once and its 29 others at their turns, so the last
  // cannot go before 29 × 20 + 10 = 590 ms.
  CtlResult paced = run_streamctl(daemon.port(), {"bench", "produce", "--stream", "paced", "--records", "60",
                                                  "--batch", "1", "--producers", "2", "--sync", "--rate", "100",
                                                  "--json"});
  INFO(paced.err);
  REQUIRE(paced.code == 0);
  const auto at = paced.out.find("\"seconds\":");
  REQUIRE(at != std::string::npos);
  CHECK(std::stod(paced.out.substr(at + 10)) >= 0.59);
  CtlResult bounds = run_streamctl(daemon.port(), {"bounds", "paced", "--json"});
  CHECK(json_int(bounds.out, "next") == 60);
  CHECK(daemon.stop() == 0);
}

TEST_CASE("bench produce --rate without --sync is STREAM_MISCONFIGURED naming rate", "[streamctl]") {
  DaemonProcess daemon;
  REQUIRE(daemon.start());
  CtlResult refused = run_streamctl(daemon.port(), {"bench", "produce", "--stream", "unpaced", "--rate", "100"});
  CHECK(refused.code == 78);
  CHECK(refused.err.find("field=rate") != std::string::npos);
  // Nothing was sent: the stream was not even created.
  CHECK(run_streamctl(daemon.port(), {"bounds", "unpaced"}).code != 0);
  CHECK(daemon.stop() == 0);
}

}  // namespace
}  // namespace streamd::testing
