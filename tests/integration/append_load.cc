#include "tests/integration/append_load.h"

#include <catch2/catch.hpp>

#include "tests/integration/wire_client.h"

namespace streamd::testing {

std::string load_payload(int connection, int seq) {
  std::string p = "c" + std::to_string(connection) + "-" + std::to_string(seq) + "|";
  p.append(200, static_cast<char>('a' + seq % 26));
  return p;
}

AppendLoad::AppendLoad(uint16_t port, std::string stream, int connections, int window, int max_per_connection)
    : port_(port),
      stream_(std::move(stream)),
      window_(window),
      max_per_connection_(max_per_connection),
      outcomes_(static_cast<size_t>(connections)) {
  for (int c = 0; c < connections; ++c) {
    threads_.emplace_back([this, c] { produce(c, outcomes_[static_cast<size_t>(c)]); });
  }
}

AppendLoad::~AppendLoad() {
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void AppendLoad::produce(int connection, LoadOutcome& out) {
  WireClient client(port_);
  if (!client.connected()) return;
  std::map<uint64_t, std::pair<int, std::string>> in_flight;  // id → (sending position, payload)
  std::map<int, Placement> acknowledged_by_seq;
  int sent = 0;
  for (;;) {
    while (static_cast<int>(in_flight.size()) < window_ && sent < max_per_connection_) {
      const std::string payload = load_payload(connection, sent);
      const uint64_t id = client.send(append_request(stream_, {{"", payload, {}}}));
      if (id == 0) break;
      in_flight[id] = {sent, payload};
      ++sent;
    }
    if (in_flight.empty()) break;
    auto response = client.receive(std::chrono::seconds(10));
    if (!response) break;  // closed by the broker (or it died)
    auto it = in_flight.find(response->id());
    if (it == in_flight.end()) continue;
    if (response->has_append()) {
      const Placement at{response->append().partition(), response->append().first()};
      out.acknowledged[it->second.second] = at;
      acknowledged_by_seq[it->second.first] = at;
      acknowledged_.fetch_add(1);
    } else {
      out.refused[it->second.second] = error_name(*response);
    }
    in_flight.erase(it);
  }
  for (const auto& [id, sent_payload] : in_flight) out.unanswered.insert(sent_payload.second);
  auto& in_order = out.acknowledged_in_order.emplace_back();
  for (const auto& [seq, at] : acknowledged_by_seq) in_order.push_back(at);
}

LoadOutcome AppendLoad::finish() {
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  LoadOutcome all;
  for (auto& o : outcomes_) {
    all.acknowledged.insert(o.acknowledged.begin(), o.acknowledged.end());
    all.refused.insert(o.refused.begin(), o.refused.end());
    all.unanswered.insert(o.unanswered.begin(), o.unanswered.end());
    all.acknowledged_in_order.push_back(o.acknowledged_in_order.empty() ? std::vector<Placement>()
                                                                        : o.acknowledged_in_order[0]);
  }
  return all;
}

std::map<std::string, Placement> read_everything(uint16_t port, const std::string& stream,
                                                 int32_t partitions) {
  std::map<std::string, Placement> out;
  WireClient client(port);
  REQUIRE(client.connected());
  for (int32_t p = 0; p < partitions; ++p) {
    uint64_t from = 0;
    for (int round = 0; round < 100000; ++round) {
      auto response = client.call(read_request(stream, {{p, from}}, 1000));
      REQUIRE(response.has_read());
      const auto& part = response.read().partitions(0);
      REQUIRE_FALSE(part.has_error());
      if (part.entries_size() == 0) break;
      for (const auto& e : part.entries()) out[e.record().payload()] = {p, e.offset()};
      from = part.next_from();
    }
  }
  return out;
}

}  // namespace streamd::testing
