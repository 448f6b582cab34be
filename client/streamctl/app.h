// streamctl's command line (docs/SEMANTICS.md §8): global flags before or after the command (--broker, env
// STREAMD_BROKER; --token, env STREAMD_TOKEN; --json; --timeout), one subcommand per operation, and
// the error contract — "streamctl: NAME: message (k=v, …)" on stderr (with --json also
// {"error":{…}}) and docs/SEMANTICS.md §4's exit code. Usage errors exit 64 (EX_USAGE).
//
// run_streamctl() is the whole program minus signal handling, so that tests can drive it with their
// own streams. Not thread-safe: one run at a time per process (it reads the environment).
#pragma once

#include <atomic>
#include <istream>
#include <ostream>

namespace streamd::streamctl {

inline constexpr int kUsageExitCode = 64;

int run_streamctl(int argc, const char* const* argv, std::istream& in, std::ostream& out, std::ostream& err,
                  const std::atomic<bool>& interrupted);

}  // namespace streamd::streamctl
