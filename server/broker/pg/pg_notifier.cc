#include "server/broker/pg/pg_notifier.h"

#include <fcntl.h>
#include <unistd.h>

namespace streamd {

PgNotifier::PgNotifier() {
  if (::pipe2(fds_, O_NONBLOCK | O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
}

PgNotifier::~PgNotifier() {
  for (int fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
}

void PgNotifier::signal() {
  {
    std::lock_guard lock(mu_);
    refresh_ = true;
  }
  mark_pending();
}

void PgNotifier::signal_head(int64_t stream_id, int32_t part, std::string item) {
  {
    std::lock_guard lock(mu_);
    heads_[{stream_id, part}] = std::move(item);
  }
  mark_pending();
}

void PgNotifier::mark_pending() {
  if (!pending_.exchange(true)) wake();
}

void PgNotifier::wake() {
  const char byte = 1;
  // A full pipe already wakes the listener.
  if (fds_[1] >= 0) (void)!::write(fds_[1], &byte, 1);
}

PgNotifier::Pending PgNotifier::take_pending() {
  char buf[64];
  while (fds_[0] >= 0 && ::read(fds_[0], buf, sizeof buf) > 0) {
  }
  // Cleared before the state is taken: a signal after this point wakes the listener again.
  pending_.store(false);
  Pending out;
  std::lock_guard lock(mu_);
  out.refresh = refresh_;
  refresh_ = false;
  out.heads.reserve(heads_.size());
  for (auto& [key, item] : heads_) out.heads.push_back(std::move(item));
  heads_.clear();
  return out;
}

}  // namespace streamd
