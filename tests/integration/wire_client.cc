#include "tests/integration/wire_client.h"

namespace streamd::testing {

std::string frame_of(const v1::Request& request) {
  const std::string body = request.SerializeAsString();
  std::string out(4, '\0');
  const auto n = static_cast<uint32_t>(body.size());
  out[0] = static_cast<char>(n >> 24);
  out[1] = static_cast<char>(n >> 16);
  out[2] = static_cast<char>(n >> 8);
  out[3] = static_cast<char>(n);
  return out + body;
}

WireClient::WireClient(uint16_t port, bool hello) : socket_(port) {
  if (!hello || !socket_.connected()) return;
  v1::Request request;
  request.mutable_hello()->set_protocol_version(1);
  request.mutable_hello()->set_client_name("integration-test");
  v1::Response response = call(request);
  ok_ = response.has_hello() && !response.has_error();
}

uint64_t WireClient::send(v1::Request request) {
  if (request.id() == 0) request.set_id(next_id());
  if (!socket_.send_all(frame_of(request))) return 0;
  return request.id();
}

std::optional<v1::Response> WireClient::receive(std::chrono::milliseconds timeout) {
  auto body = socket_.read_frame(timeout);
  if (!body) return std::nullopt;
  v1::Response response;
  if (!response.ParseFromString(*body)) return std::nullopt;
  return response;
}

std::optional<v1::Response> WireClient::wait_for(uint64_t id, std::chrono::milliseconds timeout) {
  for (auto it = early_.begin(); it != early_.end(); ++it) {
    if (it->id() == id) {
      v1::Response found = std::move(*it);
      early_.erase(it);
      return found;
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto response = receive(left);
    if (!response) return std::nullopt;
    if (response->id() == id) return response;
    early_.push_back(std::move(*response));
  }
  return std::nullopt;
}

v1::Response WireClient::call(v1::Request request, std::chrono::milliseconds timeout) {
  const uint64_t id = send(std::move(request));
  if (id == 0) return {};
  auto response = wait_for(id, timeout);
  return response ? *response : v1::Response();
}

v1::Request create_request(const std::string& name, int32_t partitions, bool if_not_exists) {
  v1::Request request;
  auto* body = request.mutable_create_stream();
  body->set_name(name);
  body->mutable_policy()->set_partitions(partitions);
  body->set_if_not_exists(if_not_exists);
  return request;
}

v1::Request append_request(const std::string& stream, const std::vector<TestRecord>& records) {
  v1::Request request;
  auto* body = request.mutable_append();
  body->set_stream(stream);
  for (const TestRecord& r : records) {
    auto* wr = body->add_records();
    wr->set_key(r.key);
    wr->set_payload(r.payload);
    for (const auto& [name, value] : r.headers) {
      auto* h = wr->add_headers();
      h->set_name(name);
      h->set_value(value);
    }
  }
  return request;
}

v1::Request read_request(const std::string& stream, const std::vector<std::pair<int32_t, uint64_t>>& cursors,
                         int32_t max_records, uint32_t wait_ms) {
  v1::Request request;
  auto* body = request.mutable_read();
  body->set_stream(stream);
  for (const auto& [partition, from] : cursors) {
    auto* c = body->add_cursors();
    c->set_partition(partition);
    c->set_from(from);
  }
  body->set_max_records(max_records);
  body->set_wait_ms(wait_ms);
  return request;
}

v1::Request bounds_request(const std::string& stream, int32_t partition) {
  v1::Request r;
  r.mutable_bounds()->set_stream(stream);
  r.mutable_bounds()->set_partition(partition);
  return r;
}

std::string error_name(const v1::Response& response) {
  return response.has_error() ? response.error().name() : std::string();
}

}  // namespace streamd::testing
