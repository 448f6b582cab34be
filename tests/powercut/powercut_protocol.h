// The line protocol between PowerCutFs (the test's handle, powercut_fs.h) and powercut_server (the
// process serving the mount). One command per line on the server's stdin; the answer on its stdout:
//
//   cut discard|torn SEED          → the CutReport as lines (report_lines), then "end"
//   restore                        → "ok" or "error TEXT"
//   fault write|fsync|read ERRNO COUNT PATH-SUBSTRING   → "ok"
//   clear                          → "ok"
//   stats                          → "stats FSYNCS FAULTS_INJECTED"
//
// At start the server says "ready" once mounted, or "error TEXT" and exits; at EOF on its stdin it
// unmounts and exits. Paths are the rest of their line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tests/powercut/powercut_model.h"

namespace streamd::powercut {

std::string fault_command(const Fault& fault);
std::optional<Fault> parse_fault_command(const std::string& line);

std::vector<std::string> report_lines(const CutReport& report);
// Adds one line of report_lines() to `report`; false for a line that is not one.
bool parse_report_line(const std::string& line, CutReport& report);

}  // namespace streamd::powercut
