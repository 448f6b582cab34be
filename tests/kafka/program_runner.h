// Runs a client program (kcat, a Python or Node script) as a child process for the Kafka client
// tests: stdout and stderr captured, every run bounded (killed by its pid past the timeout).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace streamd::kafka::testing {

struct ProgramResult {
  int code = -1;  // exit code; 128 + signal when killed
  std::string out;
  std::string err;
};

// argv[0] is looked up on PATH. `env` entries ("NAME=value") are added to the environment.
ProgramResult run_program(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
                          std::chrono::milliseconds timeout = std::chrono::seconds(60));

// Whether `program` is on PATH (for a clear failure naming what scripts/setup should have installed).
bool on_path(const std::string& program);

}  // namespace streamd::kafka::testing
