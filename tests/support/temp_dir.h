// TempDir: a fresh directory for one test, removed with everything in it when the object goes away.
// Created under $TMPDIR (or /tmp) with mode 0700, as the broker requires of its data directory.
#pragma once

#include <string>

namespace streamd::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name.
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace streamd::testing
