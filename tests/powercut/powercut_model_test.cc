// The failure model of tests/powercut/powercut_model.cc and powercut_cut.cc, without FUSE: what survives a
// cut, what a torn cut may leave, and how faults behave.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <set>

#include "tests/powercut/powercut_model.h"

namespace streamd::powercut {
namespace {

struct Fs {
  PowerCutModel m;

  uint64_t mkdir(uint64_t parent, const std::string& name) {
    NodeAttr a;
    REQUIRE(m.mkdir(parent, name, 0700, a) == 0);
    return a.ino;
  }
  uint64_t create(uint64_t parent, const std::string& name) {
    NodeAttr a;
    REQUIRE(m.create(parent, name, 0600, true, a) == 0);
    return a.ino;
  }
  // The ino a path names now, 0 when none.
  uint64_t at(const std::vector<std::string>& path) {
    uint64_t ino = kRootIno;
    for (const auto& name : path) {
      NodeAttr a;
      if (m.lookup(ino, name, a) != 0) return 0;
      ino = a.ino;
    }
    return ino;
  }
  std::string content(uint64_t ino) {
    NodeAttr a;
    REQUIRE(m.getattr(ino, a) == 0);
    std::string out;
    REQUIRE(m.read(ino, 0, a.size, out) == 0);
    return out;
  }
  void write(uint64_t ino, uint64_t offset, const std::string& data) { REQUIRE(m.write(ino, offset, data) == 0); }
  void fsync(uint64_t ino) { REQUIRE(m.fsync(ino) == 0); }
  CutReport cut(CutMode mode = CutMode::kDiscard, uint64_t seed = 1) {
    CutReport r = m.cut(mode, seed);
    m.restore();
    return r;
  }
};

TEST_CASE("a discard cut keeps what was fsynced and loses every later write", "[powercut]") {
  Fs fs;
  uint64_t f = fs.create(kRootIno, "f");
  fs.fsync(kRootIno);
  fs.write(f, 0, "synced");
  fs.fsync(f);
  fs.write(f, 6, "-lost");
  fs.write(f, 0, "S");
  CHECK(fs.content(f) == "Synced-lost");
  CutReport r = fs.cut();
  CHECK(r.files_unsynced == 1);
  CHECK(r.unsynced == std::set<std::string>{"f"});
  CHECK(r.partly_written.empty());
  f = fs.at({"f"});
  REQUIRE(f != 0);
  CHECK(fs.content(f) == "synced");
}

TEST_CASE("a file's name is durable only once its directory is fsynced", "[powercut]") {
  Fs fs;
  uint64_t d = fs.mkdir(kRootIno, "d");
  fs.fsync(kRootIno);
  uint64_t f = fs.create(d, "f");
  fs.write(f, 0, "data");
  fs.fsync(f);  // the content is durable, the name is not
  fs.cut();
  CHECK(fs.at({"d"}) != 0);
  CHECK(fs.at({"d", "f"}) == 0);

  d = fs.at({"d"});
  f = fs.create(d, "f");
  fs.write(f, 0, "data");
  fs.fsync(f);
  fs.fsync(d);
  fs.cut();
  REQUIRE(fs.at({"d", "f"}) != 0);
  CHECK(fs.content(fs.at({"d", "f"})) == "data");
}

TEST_CASE("a directory made but not synced in its parent vanishes with everything in it", "[powercut]") {
  Fs fs;
  uint64_t d = fs.mkdir(kRootIno, "d");
  uint64_t f = fs.create(d, "f");
  fs.write(f, 0, "x");
  fs.fsync(f);
  fs.fsync(d);
  fs.cut();
  CHECK(fs.at({"d"}) == 0);
}

TEST_CASE("renames and unlinks not synced are undone by a cut, synced ones stay", "[powercut]") {
  Fs fs;
  uint64_t old_file = fs.create(kRootIno, "target");
  fs.write(old_file, 0, "old");
  fs.fsync(old_file);
  uint64_t tmp = fs.create(kRootIno, "target.tmp");
  fs.write(tmp, 0, "new");
  fs.fsync(tmp);
  fs.fsync(kRootIno);
  REQUIRE(fs.m.rename(kRootIno, "target.tmp", kRootIno, "target", 0) == 0);
  REQUIRE(fs.m.unlink(kRootIno, "target") == 0);
  fs.cut();
  REQUIRE(fs.at({"target"}) != 0);
  REQUIRE(fs.at({"target.tmp"}) != 0);
  CHECK(fs.content(fs.at({"target"})) == "old");
  CHECK(fs.content(fs.at({"target.tmp"})) == "new");

  REQUIRE(fs.m.rename(kRootIno, "target.tmp", kRootIno, "target", 0) == 0);
  fs.fsync(kRootIno);
  fs.cut();
  CHECK(fs.at({"target.tmp"}) == 0);
  CHECK(fs.content(fs.at({"target"})) == "new");
}

TEST_CASE("a file fsynced but never named durably is gone, and an unlinked one comes back whole", "[powercut]") {
  Fs fs;
  uint64_t f = fs.create(kRootIno, "f");
  fs.write(f, 0, "kept");
  fs.fsync(f);
  fs.fsync(kRootIno);
  REQUIRE(fs.m.unlink(kRootIno, "f") == 0);
  fs.write(f, 0, "gone");  // through a descriptor still open
  CHECK(fs.at({"f"}) == 0);
  fs.cut();
  REQUIRE(fs.at({"f"}) != 0);
  CHECK(fs.content(fs.at({"f"})) == "kept");
}

TEST_CASE("every call fails EIO from the cut until the power returns", "[powercut]") {
  Fs fs;
  uint64_t f = fs.create(kRootIno, "f");
  fs.fsync(kRootIno);
  fs.m.cut(CutMode::kDiscard, 1);
  NodeAttr a;
  std::string out;
  CHECK(fs.m.write(f, 0, "x") == EIO);
  CHECK(fs.m.fsync(f) == EIO);
  CHECK(fs.m.read(f, 0, 1, out) == EIO);
  CHECK(fs.m.lookup(kRootIno, "f", a) == EIO);
  CHECK(fs.m.create(kRootIno, "g", 0600, true, a) == EIO);
  fs.m.restore();
  CHECK(fs.m.lookup(kRootIno, "f", a) == 0);
  CHECK(fs.m.write(f, 0, "x") == 0);
}

TEST_CASE("a torn cut leaves every page old, new or torn at sector boundaries, and the old or new length",
          "[powercut]") {
  const std::string old_data(3 * kPageBytes, 'o');
  const std::string new_data(5 * kPageBytes, 'n');
  std::set<uint64_t> lengths;
  std::set<std::string> sector_kinds;
  uint64_t torn = 0;
  uint64_t reported = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    Fs fs;
    uint64_t f = fs.create(kRootIno, "f");
    fs.fsync(kRootIno);
    fs.write(f, 0, old_data);
    fs.fsync(f);
    fs.write(f, 0, new_data);
    CutReport r = fs.cut(CutMode::kTorn, seed);
    std::string got = fs.content(fs.at({"f"}));
    lengths.insert(got.size());
    REQUIRE((got.size() == old_data.size() || got.size() == new_data.size()));
    for (size_t s = 0; s < got.size(); s += kSectorBytes) {
      std::string sector = got.substr(s, kSectorBytes);
      // Past the old length, the old content is nothing: zeros.
      const char old_byte = s < old_data.size() ? 'o' : '\0';
      REQUIRE((sector == std::string(kSectorBytes, old_byte) || sector == std::string(kSectorBytes, 'n')));
      sector_kinds.insert(sector.substr(0, 1));
    }
    torn += r.pages_torn;
    if (got != old_data) {
      ++reported;
      REQUIRE(r.partly_written.count("f") == 1);
      const size_t common = std::min(got.size(), old_data.size());
      const auto differs = std::mismatch(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(common), old_data.begin());
      CHECK(r.partly_written.at("f") == static_cast<uint64_t>(differs.first - got.begin()));
    } else {
      CHECK(r.partly_written.empty());
    }
  }
  CHECK(lengths.size() == 2);
  CHECK(sector_kinds.size() == 3);  // old, new, and zeros past the old length
  CHECK(torn > 0);
  CHECK(reported > 0);
}

TEST_CASE("a torn cut keeps a prefix of a directory's unsynced changes, never a later one alone", "[powercut]") {
  std::set<std::set<std::string>> outcomes;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    Fs fs;
    fs.create(kRootIno, "a");
    fs.create(kRootIno, "b");
    REQUIRE(fs.m.rename(kRootIno, "a", kRootIno, "c", 0) == 0);
    fs.cut(CutMode::kTorn, seed);
    std::vector<DirEntry> entries;
    REQUIRE(fs.m.readdir(kRootIno, entries) == 0);
    std::set<std::string> names;
    for (const auto& e : entries) names.insert(e.name);
    outcomes.insert(names);
  }
  const std::set<std::set<std::string>> prefixes{{}, {"a"}, {"a", "b"}, {"b", "c"}};
  CHECK(outcomes == prefixes);
}

TEST_CASE("after a failed fsync the pages it did not write are never written by a later one", "[powercut]") {
  Fs fs;
  uint64_t f = fs.create(kRootIno, "log");
  fs.fsync(kRootIno);
  fs.write(f, 0, "aaaa");
  fs.fsync(f);
  fs.m.add_fault({FaultOp::kFsync, EIO, "log", 1});
  fs.write(f, 0, "bbbb");
  CHECK(fs.m.fsync(f) == EIO);
  CHECK(fs.content(f) == "bbbb");  // readers see what was written
  fs.fsync(f);                     // succeeds, as Linux's does after reporting the error once
  fs.write(f, kPageBytes, "cccc");  // another page: the one that failed is not written again
  fs.fsync(f);
  CHECK(fs.m.faults_injected() == 1);
  fs.cut();
  CHECK(fs.content(fs.at({"log"})) == "aaaa" + std::string(kPageBytes - 4, '\0') + "cccc");
}

TEST_CASE("faults match paths and run out after their count", "[powercut]") {
  Fs fs;
  uint64_t d = fs.mkdir(kRootIno, "part");
  uint64_t a = fs.create(d, "0.log");
  uint64_t b = fs.create(d, "0.index");
  fs.m.add_fault({FaultOp::kWrite, ENOSPC, ".log", 2});
  fs.m.add_fault({FaultOp::kRead, EIO, "part/0.index", -1});
  CHECK(fs.m.write(b, 0, "x") == 0);
  CHECK(fs.m.write(a, 0, "x") == ENOSPC);
  CHECK(fs.m.write(a, 0, "x") == ENOSPC);
  CHECK(fs.m.write(a, 0, "x") == 0);
  std::string out;
  CHECK(fs.m.read(a, 0, 1, out) == 0);
  for (int i = 0; i < 3; ++i) CHECK(fs.m.read(b, 0, 1, out) == EIO);
  fs.m.clear_faults();
  CHECK(fs.m.read(b, 0, 1, out) == 0);
  CHECK(fs.m.files_matching("part/0.") == std::vector<uint64_t>{a, b});
  CHECK(fs.m.path_of(a) == "part/0.log");
}

TEST_CASE("an inode is freed once no name, durable name, lookup or open holds it", "[powercut]") {
  Fs fs;
  const size_t base = fs.m.nodes();
  NodeAttr a;
  REQUIRE(fs.m.create(kRootIno, "f", 0600, true, a) == 0);  // one lookup, as the kernel holds one
  REQUIRE(fs.m.open(a.ino) == 0);
  fs.fsync(kRootIno);
  REQUIRE(fs.m.unlink(kRootIno, "f") == 0);
  fs.fsync(kRootIno);
  fs.m.release(a.ino);
  CHECK(fs.m.nodes() == base + 1);  // the kernel still knows it
  fs.m.forget(a.ino, 1);
  CHECK(fs.m.nodes() == base);

  uint64_t d = fs.mkdir(kRootIno, "d");
  fs.create(d, "f");
  fs.cut();  // neither was ever synced in its directory
  CHECK(fs.m.nodes() == base);
}

}  // namespace
}  // namespace streamd::powercut
