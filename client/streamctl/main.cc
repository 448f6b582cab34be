// streamctl: the bundled command-line client (docs/SEMANTICS.md §8). SIGINT and SIGTERM ask a following
// command to stop cleanly (consume --follow commits what it printed, produce stops reading stdin).
#include <csignal>
#include <iostream>

#include "client/streamctl/app.h"

namespace {

std::atomic<bool> interrupted{false};

extern "C" void on_signal(int) {
  interrupted.store(true);
}

}  // namespace

int main(int argc, char** argv) {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  std::ios::sync_with_stdio(false);
  return streamd::streamctl::run_streamctl(argc, argv, std::cin, std::cout, std::cerr, interrupted);
}
