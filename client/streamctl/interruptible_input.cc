#include "client/streamctl/interruptible_input.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace streamd::streamctl {
namespace {

constexpr size_t kBufferBytes = 64 * 1024;
// How long a signal may go unnoticed by a reader waiting for input. A signal also interrupts the
// poll itself; the timeout covers one that lands between the flag check and the poll.
constexpr int kPollMillis = 100;

}  // namespace

InterruptibleInput::InterruptibleInput(int fd, const std::atomic<bool>& interrupted)
    : fd_(fd), interrupted_(interrupted), buffer_(kBufferBytes) {}

InterruptibleInput::int_type InterruptibleInput::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  while (!interrupted_.load()) {
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, kPollMillis);
    if (ready < 0 && errno != EINTR) return traits_type::eof();
    if (ready <= 0) continue;
    const ssize_t n = ::read(fd_, buffer_.data(), buffer_.size());
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return traits_type::eof();
    setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
    return traits_type::to_int_type(*gptr());
  }
  return traits_type::eof();
}

}  // namespace streamd::streamctl
