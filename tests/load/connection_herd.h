// ConnectionHerd: many protocol connections to one broker, opened at once from a single thread (epoll,
// non-blocking connects), each sending Hello. It waits until every one has its answer: served (Hello
// answered; the connection stays open until close_all), refused (the broker answered UNAVAILABLE and
// closed), or failed (closed with no answer, a connect error, or no answer in time). Raise the
// process's descriptor limit first (process_stats.h). Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace streamd::testing {

struct HerdOutcome {
  int served = 0;
  int refused = 0;
  int failed = 0;
  std::string first_failure;
};

class ConnectionHerd {
 public:
  ConnectionHerd(uint16_t port, int count, std::chrono::milliseconds timeout);
  ~ConnectionHerd();
  ConnectionHerd(const ConnectionHerd&) = delete;
  ConnectionHerd& operator=(const ConnectionHerd&) = delete;

  const HerdOutcome& outcome() const { return outcome_; }
  // Closes every connection still open.
  void close_all();

 private:
  struct Peer {
    int fd = -1;
    bool sent = false;
    std::string received;
  };
  void run(uint16_t port, int count, std::chrono::milliseconds timeout);
  void fail(Peer& peer, const std::string& why);

  std::vector<Peer> peers_;
  HerdOutcome outcome_;
};

}  // namespace streamd::testing
