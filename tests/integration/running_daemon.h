// A DaemonProcess started for one test case and stopped (SIGTERM, exit code 0 checked) at its end.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/support/daemon_fixture.h"

namespace streamd::testing {

struct RunningDaemon {
  explicit RunningDaemon(std::vector<std::string> args = {}) : daemon(std::move(args)) {
    REQUIRE(daemon.start());
  }
  ~RunningDaemon() {
    if (daemon.running()) CHECK(daemon.stop() == 0);
  }
  DaemonProcess daemon;
};

}  // namespace streamd::testing
