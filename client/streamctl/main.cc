// streamctl: the bundled command-line client (docs/SEMANTICS.md §8, docs/CLIENT.md). The first
// SIGINT or SIGTERM asks the command to stop cleanly: consume --follow commits what it printed,
// produce stops reading stdin and gives its unanswered batches a short grace. A second one exits at
// once.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <iostream>

#include "client/streamctl/app.h"
#include "client/streamctl/interruptible_input.h"

namespace {

std::atomic<bool> interrupted{false};

extern "C" void on_signal(int signo) {
  if (interrupted.exchange(true)) _exit(128 + signo);
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
  // stdin through a reader that ends on the first signal even while no input arrives.
  streamd::streamctl::InterruptibleInput stdin_buffer(STDIN_FILENO, interrupted);
  std::istream in(&stdin_buffer);
  return streamd::streamctl::run_streamctl(argc, argv, in, std::cout, std::cerr, interrupted);
}
