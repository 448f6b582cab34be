// PgNotifier: tells the engine's listener thread that this broker committed appends or commits, so it
// sends one NOTIFY for all of them (coalesced: at most one per millisecond). Signalling costs an atomic
// exchange, and a byte on a pipe only when no signal was pending, so appends never wait for it.
//
// Thread-safety: signal() from any thread; take() and wake_fd() from the listener thread.
#pragma once

#include <atomic>

namespace streamd {

// The channel every broker of one database NOTIFYs and LISTENs on.
inline constexpr const char* kPgChannel = "streamd_changes";

class PgNotifier {
 public:
  PgNotifier();
  ~PgNotifier();
  PgNotifier(const PgNotifier&) = delete;
  PgNotifier& operator=(const PgNotifier&) = delete;

  void signal();
  // Whether a signal is pending, clearing it and the pipe.
  bool take();
  // Readable while a signal is pending (or the listener is told to stop).
  int wake_fd() const { return fds_[0]; }
  void wake();

 private:
  std::atomic<bool> pending_{false};
  int fds_[2] = {-1, -1};
};

}  // namespace streamd
