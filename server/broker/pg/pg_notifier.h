// PgNotifier: tells the engine's listener thread what this broker committed, so that it sends one
// NOTIFY for all of it (coalesced: at most one per millisecond). Appends leave the head they wrote
// (signal_head), which the NOTIFY carries to the other brokers (pg_change_feed.h); anything else (a
// group commit) asks them to read everything again (signal). Signalling costs a short lock, and a
// byte on a pipe only when nothing was pending, so appends never wait for the database.
//
// Thread-safety: signal() and signal_head() from any thread; take_pending(), take() and wake_fd()
// from the listener thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace streamd {

// The channel every broker of one database NOTIFYs and LISTENs on.
inline constexpr const char* kPgChannel = "streamd_changes";

class PgNotifier {
 public:
  PgNotifier();
  ~PgNotifier();
  PgNotifier(const PgNotifier&) = delete;
  PgNotifier& operator=(const PgNotifier&) = delete;

  // Something other than an append's head changed.
  void signal();
  // An append to (stream, part) committed; `item` (pg_changes::head_item) replaces the partition's
  // earlier one not sent yet.
  void signal_head(int64_t stream_id, int32_t part, std::string item);

  struct Pending {
    bool refresh = false;
    std::vector<std::string> heads;
    bool any() const { return refresh || !heads.empty(); }
  };
  // What was signalled since the last take, clearing it and the pipe.
  Pending take_pending();
  // Drops what was signalled; whether anything was.
  bool take() { return take_pending().any(); }
  // Readable while a signal is pending (or the listener is told to stop).
  int wake_fd() const { return fds_[0]; }
  void wake();

 private:
  void mark_pending();

  std::atomic<bool> pending_{false};
  std::mutex mu_;
  bool refresh_ = false;
  std::map<std::pair<int64_t, int32_t>, std::string> heads_;
  int fds_[2] = {-1, -1};
};

}  // namespace streamd
