// The HTTP listener under clients that misbehave: oversize heads and bodies, bodies without a
// length, malformed lines, slow and idle connections. Each gets a clear answer (or a close) and
// costs the others nothing: /metrics keeps answering throughout.
#include <catch2/catch.hpp>
#include <thread>

#include "tests/http_api/http_client.h"

namespace streamd::testing {
namespace {

std::string post_head(uint16_t port, size_t length) {
  return "POST /api/v1/streams/x/records HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(length) + "\r\n\r\n";
}

TEST_CASE("oversize and malformed requests get a clear answer and write nothing", "[http_server]") {
  DaemonProcess daemon({"--console.max-body-bytes", "65536"});
  REQUIRE(daemon.start());
  const uint16_t port = daemon.http_port();
  HttpClient c(port);
  // A body over the limit is refused before it is read, and the connection closes.
  auto big = c.raw(post_head(port, 10'000'000));
  CHECK(big.status == 413);
  CHECK(big.closed);
  CHECK(big.body.find("65536") != std::string::npos);
  // A head over 16 KiB.
  auto head = c.raw("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Filler: " + std::string(20000, 'a') + "\r\n\r\n");
  CHECK(head.status == 431);
  // A body without a length, a bad line, a bad length, a header without a colon.
  CHECK(c.raw("POST /api/v1/streams HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n").status == 501);
  CHECK(c.raw("GARBAGE\r\n\r\n").status == 400);
  CHECK(c.raw("GET /metrics HTTP/2.0\r\n\r\n").status == 400);
  CHECK(c.raw("POST /api/v1/streams HTTP/1.1\r\nContent-Length: 1x\r\n\r\n").status == 400);
  CHECK(c.raw("POST /api/v1/streams HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}").status == 400);
  CHECK(c.raw("GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n").status == 400);
  // A client that asks to continue is told to, then its body is read whole.
  TestSocket expect(port);
  std::string head100 = post_head(port, 2);
  head100.insert(head100.size() - 2, "Expect: 100-continue\r\n");
  REQUIRE(expect.send_all(head100));
  auto interim = expect.read_exact(25, std::chrono::seconds(5));
  REQUIRE(interim.has_value());
  CHECK(*interim == "HTTP/1.1 100 Continue\r\n\r\n");
  REQUIRE(expect.send_all("{}"));
  auto final_line = expect.read_exact(12, std::chrono::seconds(5));
  REQUIRE(final_line.has_value());
  CHECK(*final_line == "HTTP/1.1 400");  // read, then refused as a produce body ({} has no records)
  CHECK(daemon.http_get("/api/v1/streams").body.find("\"total\":0") != std::string::npos);
  CHECK(daemon.http_get("/metrics").status == 200);
}

TEST_CASE("keep-alive carries many requests, pipelined ones answered in order", "[http_server]") {
  DaemonProcess daemon;
  REQUIRE(daemon.start());
  HttpClient c(daemon.http_port());
  for (int i = 0; i < 50; ++i) REQUIRE(c.get("/healthz").status == 200);
  CHECK(c.connections() == 1);
  // Two requests in one write: two answers, in order, on the same connection.
  TestSocket s(daemon.http_port());
  REQUIRE(s.send_all("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  std::string all;
  while (auto b = s.read_exact(1, std::chrono::seconds(5))) all += *b;
  const size_t first = all.find("ok\n");
  const size_t second = all.find("ready\n");
  CHECK(first != std::string::npos);
  CHECK(second != std::string::npos);
  CHECK(first < second);
  // HTTP/1.0 without keep-alive closes after its answer.
  HttpClient old(daemon.http_port());
  CHECK(old.raw("GET /healthz HTTP/1.0\r\n\r\n").closed);
}

TEST_CASE("slow and idle clients do not keep /metrics from answering", "[http_server]") {
  DaemonProcess daemon;
  REQUIRE(daemon.start());
  const uint16_t port = daemon.http_port();
  // Forty connections that send half a head and stop, and forty that send nothing.
  std::vector<std::unique_ptr<TestSocket>> stalled;
  for (int i = 0; i < 40; ++i) {
    stalled.push_back(std::make_unique<TestSocket>(port));
    REQUIRE(stalled.back()->send_all("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: "));
    stalled.push_back(std::make_unique<TestSocket>(port));
  }
  // One that trickles a byte at a time while /metrics is asked for.
  TestSocket trickle(port);
  std::thread slow([&] {
    const std::string head = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
    for (char ch : head) {
      if (!trickle.send_all(std::string(1, ch))) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  for (int i = 0; i < 10; ++i) {
    const auto began = std::chrono::steady_clock::now();
    auto m = daemon.http_get("/metrics");
    CHECK(m.status == 200);
    CHECK(m.body.find("streamd_http_connections") != std::string::npos);
    // Generous for a busy machine; a server blocked by the slow clients would not answer at all.
    CHECK(std::chrono::steady_clock::now() - began < std::chrono::seconds(3));
  }
  slow.join();
  // A request that takes too long to arrive is cut off: the stalled ones close within the
  // request timeout (10 s) — the trickler among them, whose head never ended.
  CHECK(trickle.closed_by_peer(std::chrono::seconds(15)));
  CHECK(stalled.front()->closed_by_peer(std::chrono::seconds(15)));
}

}  // namespace
}  // namespace streamd::testing
