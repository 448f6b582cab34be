#include "tests/integration/txn_reads.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

namespace streamd::testing {

std::vector<std::string> txn_payloads(uint16_t port, const std::string& stream, int32_t partition,
                                      v1::Isolation isolation) {
  WireClient c(port);
  std::vector<std::string> out;
  uint64_t from = 0;
  for (;;) {
    v1::Request request = read_request(stream, {{partition, from}}, 1000);
    request.mutable_read()->set_isolation(isolation);
    v1::Response r = c.call(request);
    REQUIRE(r.has_read());
    const auto& p = r.read().partitions(0);
    REQUIRE_FALSE(p.has_error());
    if (p.entries_size() == 0) return out;
    for (const auto& e : p.entries()) out.push_back(e.record().payload());
    from = p.next_from();
  }
}

void wait_for_txn_records(uint16_t port, const std::string& stream, int32_t partitions, size_t n) {
  size_t seen = 0;
  for (int i = 0; i < 500 && seen < n; ++i) {
    seen = 0;
    for (int32_t p = 0; p < partitions; ++p) seen += txn_payloads(port, stream, p, v1::READ_UNCOMMITTED).size();
    if (seen < n) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(seen == n);
}

}  // namespace streamd::testing
