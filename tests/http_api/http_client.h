// HttpClient: a blocking HTTP/1.1 client for the API's tests, over one keep-alive connection to
// 127.0.0.1 (TestSocket, every wait bounded). It sends exactly the bytes a test gives it when asked
// (raw()), so malformed and oversize requests can be sent too. Not thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/daemon_fixture.h"

namespace streamd::testing {

struct HttpAnswer {
  int status = 0;  // 0: no answer (closed, or timed out)
  std::map<std::string, std::string> headers;  // names lower-cased; the last of repeated ones
  std::string body;
  bool closed = false;  // the server said Connection: close
  std::string header(const std::string& name) const;
};

class HttpClient {
 public:
  explicit HttpClient(uint16_t port) : port_(port) {}

  // Headers every request carries (Authorization, Cookie).
  std::map<std::string, std::string> defaults;

  HttpAnswer get(const std::string& path) { return request("GET", path, ""); }
  HttpAnswer del(const std::string& path) { return request("DELETE", path, ""); }
  HttpAnswer post(const std::string& path, const std::string& json) {
    return request("POST", path, json, {{"Content-Type", "application/json"}});
  }
  HttpAnswer request(const std::string& method, const std::string& path, const std::string& body,
                     const std::map<std::string, std::string>& headers = {});
  // Sends `bytes` as they are and reads one answer.
  HttpAnswer raw(const std::string& bytes, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Opens a fresh connection for the next request.
  void reconnect() { socket_.reset(); }
  bool connected() const { return socket_ && socket_->connected(); }
  // Connections the client has opened so far (keep-alive keeps this at 1).
  int connections() const { return opened_; }

 private:
  HttpAnswer read_answer(std::chrono::milliseconds timeout);
  uint16_t port_;
  std::unique_ptr<TestSocket> socket_;
  int opened_ = 0;
};

}  // namespace streamd::testing
