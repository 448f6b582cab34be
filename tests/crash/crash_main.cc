// crash_test: the power-cut harness's command line (scripts/crash-test runs it).
//
//   crash_test [--cycles N] [--seed S] [--mode discard|torn|mixed] [--min-ms A] [--max-ms B]
//              [--producers P] [--window W] [--consumers C] [--keep-going] [-- STREAMD_ARGS...]
//
// Exit 0 when every check of every cycle held, 1 when one failed, 2 for bad arguments, 77 (skipped)
// where a FUSE filesystem cannot be mounted.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "proto/producer_window.h"
#include "tests/crash/crash_harness.h"
#include "tests/powercut/powercut_fs.h"

namespace {

constexpr int kSkipped = 77;

int usage(const std::string& why) {
  std::cerr << "crash_test: " << why
            << "\nusage: crash_test [--cycles N] [--seed S] [--mode discard|torn|mixed] [--min-ms A] [--max-ms B]"
               " [--producers P] [--window W] [--consumers C] [--keep-going] [-- STREAMD_ARGS...]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using streamd::powercut::CutMode;
  streamd::crash::HarnessOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) options.daemon_args.emplace_back(argv[i]);
      break;
    }
    if (arg == "--keep-going") {
      options.keep_going = true;
      continue;
    }
    if (i + 1 >= argc) return usage(arg + " needs a value");
    const std::string value = argv[++i];
    char* end = nullptr;
    const unsigned long long n = std::strtoull(value.c_str(), &end, 10);
    const bool numeric = end != value.c_str() && *end == '\0';
    if (arg == "--mode") {
      if (value == "discard") {
        options.mode = CutMode::kDiscard;
      } else if (value == "torn") {
        options.mode = CutMode::kTorn;
      } else if (value != "mixed") {
        return usage("--mode is discard, torn or mixed");
      }
    } else if (!numeric) {
      return usage(arg + " takes a number, not " + value);
    } else if (arg == "--cycles") {
      options.cycles = n;
    } else if (arg == "--seed") {
      options.seed = n;
    } else if (arg == "--min-ms") {
      options.min_run = std::chrono::milliseconds(n);
    } else if (arg == "--max-ms") {
      options.max_run = std::chrono::milliseconds(n);
    } else if (arg == "--producers") {
      options.workload.producers = static_cast<int>(n);
    } else if (arg == "--window") {
      // The producers are idempotent: no more in flight than the broker recognises a resend among.
      if (n < 1 || n > streamd::kProducerWindow) {
        return usage("--window is 1 to " + std::to_string(streamd::kProducerWindow) + ", not " + value);
      }
      options.workload.window = static_cast<int>(n);
    } else if (arg == "--consumers") {
      options.workload.consumers = static_cast<int>(n);
    } else {
      return usage("unknown option " + arg);
    }
  }
  if (options.max_run < options.min_run) return usage("--max-ms is below --min-ms");
  if (std::string why = streamd::powercut::PowerCutFs::unavailable_reason(); !why.empty()) {
    std::cout << "crash_test: skipped: " << why << "\n";
    return kSkipped;
  }
  std::cout << "crash_test: " << options.cycles << " cycles, seed " << options.seed << "\n";
  const auto totals = streamd::crash::run_harness(options, std::cout);
  streamd::crash::print_totals(totals, std::cout);
  return totals.failures == 0 ? 0 : 1;
}
