// PowerCutFs: the test's handle on a power-cut filesystem (powercut_model.h) mounted with FUSE, so that
// an unmodified program — the real streamd — runs on it while the test decides when the power goes.
// Failure model: docs/RELIABILITY.md §"The power-cut filesystem".
//
// The filesystem is served by a process of its own (powercut_server, started here and talked to over a
// pipe, powercut_protocol.h), so that this process may use the mount freely, mappings included.
//
// Usage: mount(); run the program on mount_point(); cut() (from then on every call on the mount fails
// EIO); kill the program and wait for it to exit; restore(); start it again. Kill every process using
// the mount before restore() or destruction (both unmount).
//
// Thread-safety: one thread at a time, but for write_back().
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "tests/powercut/powercut_model.h"

namespace streamd::powercut {

class PowerCutFs {
 public:
  // Why a FUSE filesystem cannot be mounted here ("" when it can): no /dev/fuse, or, without root, no
  // fusermount3 to mount through.
  static std::string unavailable_reason();
  // Starts the server and mounts an empty filesystem on `mount_point`, an existing empty directory.
  // nullptr, with *error set, when that fails.
  static std::unique_ptr<PowerCutFs> mount(const std::string& mount_point, std::string* error);
  ~PowerCutFs();  // unmounts and ends the server
  PowerCutFs(const PowerCutFs&) = delete;
  PowerCutFs& operator=(const PowerCutFs&) = delete;

  const std::string& mount_point() const { return mount_point_; }

  // The power fails now (PowerCutModel::cut).
  CutReport cut(CutMode mode, uint64_t seed);
  // The kernel writes back every page it holds dirty for the mount (syncfs): stores through shared
  // mappings reach the filesystem as unsynced writes, which a cut may then keep, lose or tear, as a
  // real disk's writeback does at any moment. Without it a mapping's stores reach the filesystem only
  // at msync, or when the kernel's flusher runs (seconds), so a cut would never find them half written.
  // Makes nothing durable. Safe from any thread, also while another thread uses this handle.
  void write_back() const;
  // The power returns: unmounts, and mounts again on what the cut left. False, with *error, on failure.
  bool restore(std::string* error);
  // Adds a fault (PowerCutModel::add_fault). A read fault also drops the pages the kernel caches for the
  // matching files, so that the next read of them reaches the model and fails.
  void add_fault(const Fault& fault);
  void clear_faults();
  // Successful fsyncs, and faults injected, since the mount.
  uint64_t fsyncs();
  uint64_t faults_injected();

 private:
  PowerCutFs(std::string mount_point, pid_t pid, FILE* to, FILE* from);
  void send(const std::string& line);
  std::string receive();

  const std::string mount_point_;
  pid_t pid_;
  FILE* to_;    // the server's stdin
  FILE* from_;  // its stdout
};

}  // namespace streamd::powercut
