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
  if (!pending_.exchange(true)) wake();
}

void PgNotifier::wake() {
  const char byte = 1;
  // A full pipe already wakes the listener.
  if (fds_[1] >= 0) (void)!::write(fds_[1], &byte, 1);
}

bool PgNotifier::take() {
  char buf[64];
  while (fds_[0] >= 0 && ::read(fds_[0], buf, sizeof buf) > 0) {
  }
  return pending_.exchange(false);
}

}  // namespace streamd
