// FuseServer: a PowerCutModel (powercut_model.h) mounted with FUSE (libfuse3, low-level API) and served
// from this process's threads. It runs in a process of its own (powercut_server.cc): a process that
// serves a FUSE mount must never map a file of that mount itself, or an munmap waiting for the
// mapping's writeback (which this process must serve) deadlocks against its own threads.
//
// The kernel is kept from remembering anything the model might lose: writes go through to the model as
// they are made (no writeback cache), attributes and names are never cached (timeouts 0), and
// remount() unmounts and mounts again, so no page the kernel cached before a cut outlives it.
//
// Thread-safety: one thread drives it; the FUSE callbacks run on the loop's own threads.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "tests/powercut/powercut_model.h"

struct fuse_session;

namespace streamd::powercut {

class FuseServer {
 public:
  // Mounts `model` on `mount_point`, an existing empty directory. nullptr, with *error, on failure.
  static std::unique_ptr<FuseServer> mount(const std::string& mount_point, PowerCutModel& model, std::string* error);
  ~FuseServer();  // unmounts
  FuseServer(const FuseServer&) = delete;
  FuseServer& operator=(const FuseServer&) = delete;

  // Unmounts, dropping every page the kernel cached, runs `unmounted` (the power comes back there:
  // the kernel's last writebacks of the old mount must still fail), and mounts again.
  bool remount(const std::function<void()>& unmounted, std::string* error);
  // Drops the kernel's cached pages of the files whose path contains `path_contains`, so that their
  // next read reaches the model.
  void drop_cached_pages(const std::string& path_contains);

  // The FUSE callbacks' way back to the object (fuse_server.cc).
  struct Callbacks;

 private:
  FuseServer(std::string mount_point, PowerCutModel& model) : mount_point_(std::move(mount_point)), model_(model) {}
  bool start(std::string* error);
  void stop();

  const std::string mount_point_;
  PowerCutModel& model_;
  fuse_session* session_ = nullptr;
  std::thread loop_;
  unsigned connection_ = 0;  // the FUSE connection's number under /sys/fs/fuse/connections
};

}  // namespace streamd::powercut
