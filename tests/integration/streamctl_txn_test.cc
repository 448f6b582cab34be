// Reading transactions natively, through the client and streamctl against the real daemon
// (docs/TRANSACTIONS.md §Reading), over the data directory of tests/support/txn_sample.h: bounds show the
// last stable offset, consume reads committed records by default and everything with read_uncommitted,
// and never prints a marker.
#include <catch2/catch.hpp>

#include "tests/integration/streamctl_runner.h"
#include "tests/support/daemon_fixture.h"
#include "tests/support/txn_sample.h"

namespace streamd::testing {
namespace {

TEST_CASE("streamctl: bounds and consume by isolation over committed, aborted and open transactions",
          "[streamctl]") {
  DaemonProcess daemon;
  write_txn_sample(daemon.data_dir());
  REQUIRE(daemon.start());
  auto ctl = [&](const std::vector<std::string>& args) { return run_streamctl(daemon.port(), args); };

  CHECK(ctl({"bounds", "tx", "--json"}).out == R"([{"partition":0,"first":0,"next":8,"last_stable":6}])"
                                               "\n");
  const CtlResult committed = ctl({"consume", "tx"});
  CHECK(committed.code == 0);
  CHECK(committed.lines() == std::vector<std::string>{"a", "c1", "b"});
  const CtlResult everything = ctl({"consume", "tx", "--isolation", "read_uncommitted"});
  CHECK(everything.code == 0);
  CHECK(everything.lines() == std::vector<std::string>{"a", "c1", "x1", "b", "open", "after"});
  // From the open transaction on, a committed reader has nothing yet.
  const CtlResult held = ctl({"consume", "tx", "--from", "6"});
  CHECK(held.code == 0);
  CHECK(held.out.empty());
  CHECK(ctl({"consume", "tx", "--isolation", "read_everything"}).code != 0);
  CHECK(daemon.stop() == 0);
}

}  // namespace
}  // namespace streamd::testing
