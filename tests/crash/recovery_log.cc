#include "tests/crash/recovery_log.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <sstream>

namespace streamd::crash {
namespace {

// The text between `before` and the next `after` in `line`, or "" when either is missing.
std::string between(const std::string& line, const std::string& before, const std::string& after) {
  const size_t start = line.find(before);
  if (start == std::string::npos) return "";
  const size_t from = start + before.size();
  const size_t end = line.find(after, from);
  return end == std::string::npos ? "" : line.substr(from, end - from);
}

std::string relative(const std::string& path, const std::string& mount) {
  return path.compare(0, mount.size() + 1, mount + "/") == 0 ? path.substr(mount.size() + 1) : path;
}

// The second word of a log line (the first is the time).
std::string level_of(const std::string& line) {
  std::istringstream in(line);
  std::string time, level;
  in >> time >> level;
  return level;
}

// ".creating.NAME" or ".deleted.NAME.SUFFIX" at the end of a path: NAME.
std::string stream_of(const std::string& path, const std::string& prefix) {
  const size_t at = path.rfind("/" + prefix);
  if (at == std::string::npos) return "";
  std::string rest = path.substr(at + 1 + prefix.size());
  if (prefix == ".deleted.") rest = rest.substr(0, rest.rfind('.'));
  return rest;
}

// "partition DIR: segment BASE: ...": BASE as a segment's file stem (twenty digits).
std::string segment_stem(const std::string& line) {
  const size_t at = line.find(": segment ");
  const uint64_t base = at == std::string::npos ? 0 : std::strtoull(line.c_str() + at + 10, nullptr, 10);
  char stem[32];
  std::snprintf(stem, sizeof stem, "%020" PRIu64, base);
  return stem;
}

// "partition DIR: segment BASE is CORRUPT at byte POS (REASON); truncated N bytes there, ...": after a
// torn cut, unsynced pages reach the disk in any order, so a batch that never reached the disk whole
// may be followed by later ones that did. That is the cut's doing when some byte the recovery cut off,
// [POS, POS + N), is not what the segment's last fsync left there.
bool damage_explained(const std::string& line, const powercut::CutReport& cut, const std::string& mount) {
  const std::string dir = between(line, " partition ", ": segment ");
  const size_t at = line.find(" is CORRUPT at byte ");
  const size_t cut_at = line.find("; truncated ");
  if (dir.empty() || at == std::string::npos || cut_at == std::string::npos) return false;
  const uint64_t pos = std::strtoull(line.c_str() + at + 20, nullptr, 10);
  const uint64_t dropped = std::strtoull(line.c_str() + cut_at + 12, nullptr, 10);
  const auto it = cut.partly_written.find(relative(dir, mount) + "/" + segment_stem(line) + ".log");
  return it != cut.partly_written.end() && it->second < pos + dropped;
}

// The stem of the partition's last segment as it is now: the active one, whose indexes are stored
// through a mapping and synced only when it is sealed (docs/FORMAT.md), so that a cut may lose what
// the kernel had not yet written back of them, which the filesystem never saw.
std::string last_segment_stem(const std::string& partition_dir) {
  std::string last;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(partition_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() == 24 && name.compare(20, 4, ".log") == 0) last = std::max(last, name.substr(0, 20));
  }
  return last;
}

}  // namespace

RecoveryLines recovery_lines(const std::string& log, size_t from) {
  RecoveryLines out;
  std::istringstream in(from < log.size() ? log.substr(from) : std::string());
  std::string line;
  while (std::getline(in, line)) {
    out.lines.push_back(line);
    if (line.find("torn tail at byte") != std::string::npos) {
      if (line.find(" partition ") != std::string::npos) ++out.torn_segment_tails;
      if (line.find(" group offsets log ") != std::string::npos) ++out.torn_group_tails;
    }
    if (line.find(" is CORRUPT at byte ") != std::string::npos) ++out.reordered_tails;
    if (line.find("rebuilt stale index entries") != std::string::npos) ++out.index_rebuilds;
    if (line.find("left by an interrupted create") != std::string::npos) ++out.interrupted_creates;
    if (line.find("left by an interrupted delete") != std::string::npos) ++out.interrupted_deletes;
    const std::string counts = between(line, " ready: ", " opened");
    if (!counts.empty()) {
      long long streams = -1, partitions = -1;
      const size_t comma = counts.rfind(", ");
      if (comma != std::string::npos &&
          std::sscanf(counts.c_str() + comma + 2, "%lld streams / %lld partitions", &streams, &partitions) == 2) {
        out.ready_streams = streams;
        out.ready_partitions = partitions;
      }
      out.ready = true;
      break;
    }
  }
  return out;
}

std::vector<std::string> check_recovery(const RecoveryLines& lines, const powercut::CutReport& cut,
                                        powercut::CutMode mode, const InFlight& in_flight, const std::string& mount) {
  std::vector<std::string> wrong;
  auto unexpected = [&](const std::string& why, const std::string& line) {
    wrong.push_back("recovery log: " + why + ": " + line);
  };
  for (const auto& line : lines.lines) {
    const std::string level = level_of(line);
    if (line.find(" is CORRUPT at byte ") != std::string::npos) {
      if (!damage_explained(line, cut, mount)) {
        unexpected("damage where the cut left every byte as its last fsync wrote it", line);
      }
    } else if (level == "error" || level == "critical") {
      unexpected("a power cut damages nothing synced", line);
    }
    if (line.find("torn tail at byte") != std::string::npos) {
      std::string file;
      const std::string dir = between(line, " partition ", ": segment ");
      if (!dir.empty()) {
        file = relative(dir, mount) + "/" + segment_stem(line) + ".log";
      } else {
        file = relative(between(line, " group offsets log ", ": torn"), mount);
      }
      if (mode == powercut::CutMode::kDiscard) {
        unexpected("a torn tail after a cut that kept no unsynced write", line);
      } else if (cut.partly_written.count(file) == 0) {
        unexpected("a torn tail in " + file + ", which the cut left as its last fsync wrote it", line);
      }
    }
    if (line.find("written after its clean close") != std::string::npos) {
      const std::string file =
          relative(between(line, " partition ", ": segment "), mount) + "/" + segment_stem(line) + ".log";
      if (cut.partly_written.count(file) == 0) {
        unexpected("bytes past a clean close's end in " + file + ", which the cut left as its last fsync wrote it",
                   line);
      }
    }
    if (line.find("rebuilt stale index entries") != std::string::npos) {
      const std::string stem = segment_stem(line);
      const std::string partition = between(line, " partition ", ": segment ");
      const std::string dir = relative(partition, mount);
      bool touched = false;
      for (const char* ext : {".log", ".index", ".timeindex"}) touched = touched || cut.unsynced.count(dir + "/" + stem + ext) > 0;
      if (!touched && stem != last_segment_stem(partition)) {
        unexpected("a closed segment's index rebuilt although none of its files held unsynced writes", line);
      }
    }
    for (const char* kind : {"create", "delete"}) {
      if (line.find(std::string("left by an interrupted ") + kind) == std::string::npos) continue;
      const bool create = std::string(kind) == "create";
      const std::string path = between(line, "stream store: removing ", " left by");
      const std::string name = stream_of(path, create ? ".creating." : ".deleted.");
      if ((create ? in_flight.creates : in_flight.deletes).count(name) == 0) {
        unexpected(std::string("an interrupted ") + kind + " of " + name + ", which was not in flight", line);
      }
    }
  }
  if (!lines.ready) wrong.push_back("recovery log: no ready line");
  return wrong;
}

}  // namespace streamd::crash
