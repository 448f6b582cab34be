#include "tests/powercut/powercut_protocol.h"

#include <cstdio>
#include <cstring>

namespace streamd::powercut {
namespace {

const char* op_name(FaultOp op) {
  switch (op) {
    case FaultOp::kWrite: return "write";
    case FaultOp::kFsync: return "fsync";
    case FaultOp::kRead: return "read";
  }
  return "?";
}

}  // namespace

std::string fault_command(const Fault& fault) {
  return std::string("fault ") + op_name(fault.op) + " " + std::to_string(fault.err) + " " +
         std::to_string(fault.count) + " " + fault.path_contains;
}

std::optional<Fault> parse_fault_command(const std::string& line) {
  char op[16] = {};
  int err = 0, count = 0, used = 0;
  if (std::sscanf(line.c_str(), "fault %15s %d %d %n", op, &err, &count, &used) != 3) return std::nullopt;
  Fault f;
  if (std::strcmp(op, "write") == 0) {
    f.op = FaultOp::kWrite;
  } else if (std::strcmp(op, "fsync") == 0) {
    f.op = FaultOp::kFsync;
  } else if (std::strcmp(op, "read") == 0) {
    f.op = FaultOp::kRead;
  } else {
    return std::nullopt;
  }
  f.err = err;
  f.count = count;
  f.path_contains = used > 0 && static_cast<size_t>(used) <= line.size() ? line.substr(static_cast<size_t>(used)) : "";
  return f;
}

std::vector<std::string> report_lines(const CutReport& r) {
  std::vector<std::string> out;
  out.push_back("counts " + std::to_string(r.files_unsynced) + " " + std::to_string(r.pages_unsynced) + " " +
                std::to_string(r.pages_kept) + " " + std::to_string(r.pages_torn) + " " +
                std::to_string(r.dir_changes_unsynced) + " " + std::to_string(r.dir_changes_kept));
  for (const auto& p : r.unsynced) out.push_back("unsynced " + p);
  for (const auto& [path, first] : r.partly_written) out.push_back("partly " + std::to_string(first) + " " + path);
  return out;
}

bool parse_report_line(const std::string& line, CutReport& r) {
  unsigned long long v[6];
  if (std::sscanf(line.c_str(), "counts %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) ==
      6) {
    r.files_unsynced = v[0];
    r.pages_unsynced = v[1];
    r.pages_kept = v[2];
    r.pages_torn = v[3];
    r.dir_changes_unsynced = v[4];
    r.dir_changes_kept = v[5];
    return true;
  }
  if (line.rfind("unsynced ", 0) == 0) {
    r.unsynced.insert(line.substr(9));
    return true;
  }
  unsigned long long first = 0;
  int used = 0;
  if (std::sscanf(line.c_str(), "partly %llu %n", &first, &used) == 1 && used > 0) {
    r.partly_written[line.substr(static_cast<size_t>(used))] = first;
    return true;
  }
  return false;
}

}  // namespace streamd::powercut
