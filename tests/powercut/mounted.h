// A power-cut filesystem (powercut_fs.h) mounted on a temp dir for one test, and the cut-then-remount
// step every test repeats. Tests that use it call start() first and return when it says FUSE cannot
// be mounted (it warns why).
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>
#include <memory>
#include <string>

#include "tests/powercut/powercut_fs.h"
#include "tests/support/temp_dir.h"

namespace streamd::powercut {

struct Mounted {
  testing::TempDir dir;
  std::string mnt = dir.file("mnt");
  std::unique_ptr<PowerCutFs> fs;

  bool start() {
    if (std::string why = PowerCutFs::unavailable_reason(); !why.empty()) {
      WARN("skipped: " << why);
      return false;
    }
    std::filesystem::create_directory(mnt);
    std::string error;
    fs = PowerCutFs::mount(mnt, &error);
    INFO(error);
    REQUIRE(fs != nullptr);
    return true;
  }
  std::string path(const std::string& name) const { return mnt + "/" + name; }
  // Nothing may use the mount across the cut's remount: close what was opened on it first.
  void cut_and_restore(CutMode mode = CutMode::kDiscard, uint64_t seed = 1) {
    fs->cut(mode, seed);
    std::string error;
    const bool restored = fs->restore(&error);
    INFO(error);
    REQUIRE(restored);
  }
};

}  // namespace streamd::powercut
