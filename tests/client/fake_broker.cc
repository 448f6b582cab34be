#include "fake_broker.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include "client/frame_codec.h"

namespace streamd::client::testing {
namespace {

void write_response(int fd, const v1::Response& response) {
  std::string frame(kFrameHeaderBytes, '\0');
  write_frame_length(frame.data(), static_cast<uint32_t>(response.ByteSizeLong()));
  response.AppendToString(&frame);
  const char* p = frame.data();
  size_t left = frame.size();
  while (left > 0) {
    ssize_t n = ::send(fd, p, left, MSG_NOSIGNAL);
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace

FakeBroker::FakeBroker(Handler handler, uint64_t max_frame_bytes)
    : handler_(std::move(handler)), max_frame_bytes_(max_frame_bytes) {
  start();
}

FakeBroker::~FakeBroker() {
  stop();
  // Serving threads may still be added by the accept loop until it sees the shutdown.
  while (true) {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mutex_);
      threads.swap(threads_);
    }
    if (threads.empty()) break;
    for (std::thread& t : threads) t.join();
  }
}

void FakeBroker::start() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port_);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 16) != 0) {
    throw std::runtime_error(std::string("fake broker cannot listen: ") + std::strerror(errno));
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::lock_guard lock(mutex_);
  port_ = ntohs(addr.sin_port);
  listen_fd_ = fd;
  threads_.emplace_back([this, fd] { accept_loop(fd); });
}

void FakeBroker::stop() {
  std::lock_guard lock(mutex_);
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
  listen_fd_ = -1;
  for (int fd : fds_) {
    ::shutdown(fd, SHUT_RDWR);
    dropped_.insert(fd);
  }
}

void FakeBroker::drop_connections() {
  std::lock_guard lock(mutex_);
  for (int fd : fds_) {
    ::shutdown(fd, SHUT_RDWR);
    dropped_.insert(fd);
  }
}

void FakeBroker::refuse_hello(uint32_t code, const std::string& name) {
  std::lock_guard lock(mutex_);
  hello_error_code_ = code;
  hello_error_name_ = name;
}

std::pair<std::string, std::string> FakeBroker::last_hello() {
  std::lock_guard lock(mutex_);
  return last_hello_;
}

void FakeBroker::send(const v1::Response& response) {
  std::lock_guard lock(mutex_);
  if (!fds_.empty()) write_response(fds_.back(), response);
}

void FakeBroker::accept_loop(int listen_fd) {
  while (true) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) break;
    ++accepted_;
    std::lock_guard lock(mutex_);
    fds_.push_back(fd);
    threads_.emplace_back([this, fd] { serve(fd); });
  }
  ::close(listen_fd);
}

void FakeBroker::serve(int fd) {
  FrameDecoder decoder(64 << 20);
  while (true) {
    ssize_t n = ::recv(fd, decoder.prepare(65536), 65536, 0);
    if (n <= 0) break;
    decoder.commit(static_cast<size_t>(n));
    std::string_view body;
    while (decoder.next(&body) == FrameDecoder::State::kFrame) {
      {
        // Like a broker whose connection died: requests still buffered are never processed.
        std::lock_guard lock(mutex_);
        if (dropped_.count(fd) > 0) break;
      }
      v1::Request request;
      request.ParseFromArray(body.data(), static_cast<int>(body.size()));
      v1::Response response;
      response.set_id(request.id());
      bool answer = true;
      if (request.has_hello()) {
        std::lock_guard lock(mutex_);
        last_hello_ = {request.hello().client_name(), request.hello().token()};
        if (hello_error_code_ != 0) {
          response.mutable_error()->set_code(hello_error_code_);
          response.mutable_error()->set_name(hello_error_name_);
        } else {
          response.mutable_hello()->set_protocol_version(1);
          response.mutable_hello()->set_broker_version("fake-1");
          response.mutable_hello()->set_max_frame_bytes(max_frame_bytes_);
        }
      } else {
        answer = handler_(request, &response);
      }
      if (answer) {
        std::lock_guard lock(mutex_);
        write_response(fd, response);
      }
    }
  }
  std::lock_guard lock(mutex_);
  std::erase(fds_, fd);
  dropped_.erase(fd);
  ::close(fd);
}

}  // namespace streamd::client::testing
