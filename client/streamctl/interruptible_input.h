// InterruptibleInput: a read-only streambuf over a file descriptor (streamctl's stdin) that ends —
// reports end of input — as soon as an interrupt flag is set, even while no byte arrives. A blocked
// read(2) is restarted after a signal handler, so std::cin would keep `produce` waiting on a silent
// pipe long after SIGTERM; this waits in poll(2) with a short timeout and checks the flag between.
//
// Nothing ties it to an output stream, unlike std::cin (tied to std::cout): reading never flushes the
// output that another thread may be writing. Not thread-safe: one reader.
#pragma once

#include <atomic>
#include <streambuf>
#include <vector>

namespace streamd::streamctl {

class InterruptibleInput final : public std::streambuf {
 public:
  InterruptibleInput(int fd, const std::atomic<bool>& interrupted);

 protected:
  int_type underflow() override;

 private:
  const int fd_;
  const std::atomic<bool>& interrupted_;
  std::vector<char> buffer_;
};

}  // namespace streamd::streamctl
