// WireClient: a test's raw protocol connection to a running streamd (docs/PROTOCOL.md), over
// TestSocket, with Request builders. Every wait is bounded. Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "streamd.pb.h"
#include "tests/support/daemon_fixture.h"

namespace streamd::testing {

std::string frame_of(const v1::Request& request);

class WireClient {
 public:
  // Connects; sends Hello and checks its answer when `hello`.
  explicit WireClient(uint16_t port, bool hello = true);

  bool connected() const { return socket_.connected() && ok_; }
  TestSocket& socket() { return socket_; }
  uint64_t next_id() { return ++last_id_; }

  // Assigns an id when the request has none; returns it (0 when sending failed).
  uint64_t send(v1::Request request);
  std::optional<v1::Response> receive(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // send, then receive the answer with the same id (answers to other ids are kept for later).
  v1::Response call(v1::Request request, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // The answer to `id`, from those already received or the socket.
  std::optional<v1::Response> wait_for(uint64_t id,
                                       std::chrono::milliseconds timeout = std::chrono::seconds(10));

 private:
  TestSocket socket_;
  bool ok_ = true;
  uint64_t last_id_ = 0;
  std::vector<v1::Response> early_;
};

struct TestRecord {
  std::string key;
  std::string payload;
  std::vector<std::pair<std::string, std::string>> headers;
};

v1::Request create_request(const std::string& name, int32_t partitions = 1, bool if_not_exists = false);
v1::Request append_request(const std::string& stream, const std::vector<TestRecord>& records);
v1::Request read_request(const std::string& stream, const std::vector<std::pair<int32_t, uint64_t>>& cursors,
                         int32_t max_records = 1000, uint32_t wait_ms = 0);
v1::Request bounds_request(const std::string& stream, int32_t partition);

// The error name of a response, or "" when it succeeded.
std::string error_name(const v1::Response& response);

}  // namespace streamd::testing
