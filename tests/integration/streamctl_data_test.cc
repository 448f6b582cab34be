// streamctl produce and consume against the real daemon: binary round trips, placement and order of
// keyed records, consumer groups, and a following consume stopped by SIGTERM.
#include <signal.h>

#include <catch2/catch.hpp>
#include <map>

#include "client/partitioner.h"
#include "client/streamctl/text_encoding.h"
#include "tests/integration/streamctl_runner.h"
#include "tests/support/daemon_fixture.h"

namespace streamd::testing {
namespace {

using streamctl::base64_decode;
using streamctl::base64_encode;

struct DataBroker {
  DataBroker() { REQUIRE(daemon.start()); }
  ~DataBroker() { CHECK(daemon.stop() == 0); }
  CtlResult ctl(const std::vector<std::string>& args, const std::string& input = "") {
    return run_streamctl(daemon.port(), args, input);
  }
  DaemonProcess daemon;
};

TEST_CASE("binary records round-trip: every byte value, empty payloads, tombstones, headers", "[streamctl]") {
  DataBroker b;
  REQUIRE(b.ctl({"create", "bin"}).code == 0);
  std::vector<std::pair<std::string, std::string>> records;  // key, payload
  std::string all_bytes;
  for (int i = 0; i < 256; ++i) {
    all_bytes.push_back(static_cast<char>(i));
    records.emplace_back("", std::string(1, static_cast<char>(i)));
  }
  records.emplace_back(all_bytes, all_bytes);
  records.emplace_back("", "");                       // empty, unkeyed
  records.emplace_back(std::string("k\0ey", 4), "");  // tombstone
  std::string input;
  for (const auto& [key, payload] : records)
    input += base64_encode(key) + ":" + base64_encode(payload) + "\n";
  CtlResult produced = b.ctl({"produce", "bin", "--base64", "--key-separator", ":", "--header",
                              "trace=" + base64_encode(std::string("\xff\x00\x01", 3)), "--header",
                              "h2=" + base64_encode("text"), "--json"},
                             input);
  REQUIRE(produced.code == 0);

  CtlResult consumed = b.ctl({"consume", "bin", "--json"});
  REQUIRE(consumed.code == 0);
  const auto lines = consumed.lines();
  REQUIRE(lines.size() == records.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    INFO(line);
    CHECK(json_int(line, "offset") == static_cast<int64_t>(i));
    CHECK(base64_decode(json_string(line, "key_b64")).value() == records[i].first);
    CHECK(base64_decode(json_string(line, "payload_b64")).value() == records[i].second);
    const bool utf8 = streamctl::is_valid_utf8(records[i].second);
    CHECK(json_is_null(line, "payload") == !utf8);
    if (utf8) CHECK(json_string(line, "payload") == records[i].second);
    CHECK(line.find(R"("headers":[{"name":"trace","value":null,"value_b64":"/wAB"},)"
                    R"({"name":"h2","value":"text","value_b64":"dGV4dA=="}])") != std::string::npos);
    CHECK(json_string(line, "appended_at").size() == std::string("2026-01-01T00:00:00.000000Z").size());
  }
}

TEST_CASE("keyed records land on partition_of and stay in order", "[streamctl]") {
  DataBroker b;
  REQUIRE(b.ctl({"create", "k", "--partitions", "5"}).code == 0);
  std::string input;
  for (int i = 0; i < 600; ++i) input += "key-" + std::to_string(i % 37) + "=" + std::to_string(i) + "\n";
  CtlResult produced = b.ctl({"produce", "k", "--key-separator", "=", "--batch", "16"}, input);
  REQUIRE(produced.code == 0);
  CtlResult consumed = b.ctl({"consume", "k", "--json"});
  REQUIRE(consumed.code == 0);
  REQUIRE(consumed.lines().size() == 600);
  std::map<std::string, int> last;
  for (const auto& line : consumed.lines()) {
    const std::string key = json_string(line, "key");
    CHECK(json_int(line, "partition") == client::partition_of(key, 5));
    const int n = std::stoi(json_string(line, "payload"));
    if (last.count(key) > 0) CHECK(n > last[key]);
    last[key] = n;
  }
  CHECK(last.size() == 37);

  CtlResult one = b.ctl({"consume", "k", "--partition", "2", "--json"});
  for (const auto& line : one.lines()) CHECK(json_int(line, "partition") == 2);
}

TEST_CASE("produce to an absent stream creates it with the default policy", "[streamctl]") {
  DataBroker b;
  CtlResult produced = b.ctl({"produce", "fresh", "--key", "k", "--value", "a", "b", "--json"});
  REQUIRE(produced.code == 0);
  CHECK(produced.out == "{\"partition\":0,\"first\":0,\"last\":1}\n");
  CHECK(b.ctl({"list", "--json"}).out == "[{\"name\":\"fresh\",\"partitions\":1}]\n");
}

TEST_CASE("produce streams stdin in constant memory", "[streamctl]") {
  DataBroker b;
  REQUIRE(b.ctl({"create", "big"}).code == 0);
  // 64 MiB of input: a producer that held it would need far more than the bound checked below.
  const std::string line = std::string(127, 'x') + "\n";
  std::string input;
  input.reserve(64 << 20);
  while (input.size() < (64u << 20)) input += line;
  CtlResult produced = b.ctl({"produce", "big", "--batch", "500"}, input);
  REQUIRE(produced.code == 0);
// The sanitizers' shadow memory (and ASan's quarantine) dwarf the bound.
#if !defined(__SANITIZE_ADDRESS__) && !defined(STREAMD_SANITIZE_THREAD)
  CHECK(produced.max_rss_kb < 40 * 1024);
#endif
  CtlResult bounds = b.ctl({"bounds", "big", "--json"});
  CHECK(json_int(bounds.out, "next") == static_cast<int64_t>(input.size() / line.size()));
}

TEST_CASE("produce --json prints one line per batch, covering exactly the records appended", "[streamctl]") {
  DataBroker b;
  REQUIRE(b.ctl({"create", "acks", "--partitions", "3"}).code == 0);
  // 9,000 records under 30 keys, read from stdin while earlier batches are being answered.
  std::string input;
  for (int i = 0; i < 9000; ++i) input += "key-" + std::to_string(i % 30) + "|r" + std::to_string(i) + "\n";
  for (int run = 0; run < 3; ++run) {
    std::map<int64_t, int64_t> next_first;  // partition → the first offset its next line must start at
    {
      CtlResult bounds = b.ctl({"bounds", "acks", "--json"});
      for (int64_t p = 0; p < 3; ++p) {
        const size_t at = bounds.out.find("{\"partition\":" + std::to_string(p) + ",");
        REQUIRE(at != std::string::npos);
        next_first[p] = json_int(bounds.out.substr(at), "next");
      }
    }
    CtlResult produced = b.ctl({"--json", "produce", "acks", "--key-separator", "|", "--batch", "3"}, input);
    REQUIRE(produced.code == 0);
    int64_t records = 0;
    size_t lines = 0;
    for (const std::string& line : produced.lines()) {
      ++lines;
      const int64_t p = json_int(line, "partition");
      const int64_t first = json_int(line, "first");
      const int64_t last = json_int(line, "last");
      INFO("run " << run << ": " << line);
      // In offset order per partition, each line starting where the one before it ended.
      CHECK(first == next_first[p]);
      CHECK(last >= first);
      next_first[p] = last + 1;
      records += last - first + 1;
    }
    CHECK(lines >= 3000);  // batches of at most 3 records
    CHECK(records == 9000);
    CtlResult bounds = b.ctl({"bounds", "acks", "--json"});
    for (int64_t p = 0; p < 3; ++p) {
      const size_t at = bounds.out.find("{\"partition\":" + std::to_string(p) + ",");
      CHECK(json_int(bounds.out.substr(at), "next") == next_first[p]);
    }
  }
}

TEST_CASE("consume --group resumes where it stopped, and --max and --from bound it", "[streamctl]") {
  DataBroker b;
  REQUIRE(b.ctl({"create", "g"}).code == 0);
  std::string input;
  for (int i = 0; i < 20; ++i) input += "v" + std::to_string(i) + "\n";
  REQUIRE(b.ctl({"produce", "g"}, input).code == 0);

  CtlResult first = b.ctl({"consume", "g", "--group", "readers", "--max", "7"});
  REQUIRE(first.code == 0);
  CHECK(first.lines() == std::vector<std::string>{"v0", "v1", "v2", "v3", "v4", "v5", "v6"});
  CHECK(b.ctl({"committed", "g", "--group", "readers", "--json"}).out ==
        "[{\"partition\":0,\"offset\":7}]\n");
  CtlResult second = b.ctl({"consume", "g", "--group", "readers", "--max", "3"});
  CHECK(second.lines() == std::vector<std::string>{"v7", "v8", "v9"});
  CtlResult rest = b.ctl({"consume", "g", "--group", "readers"});
  CHECK(rest.lines().size() == 10);
  CHECK(rest.lines().front() == "v10");
  CHECK(b.ctl({"consume", "g", "--group", "readers"}).out.empty());

  CHECK(b.ctl({"consume", "g", "--from", "18"}).lines() == std::vector<std::string>{"v18", "v19"});
  CHECK(b.ctl({"consume", "g", "--from", "latest"}).out.empty());
  CHECK(b.ctl({"consume", "g", "--from", "@-1h", "--max", "1"}).lines() == std::vector<std::string>{"v0"});
  CHECK(b.ctl({"consume", "g", "--from", "@2100-01-01T00:00:00Z"}).out.empty());
  CtlResult bad = b.ctl({"consume", "g", "--from", "yesterday"});
  CHECK(bad.code == 78);
  CHECK(bad.err.find("field=from") != std::string::npos);
}

TEST_CASE("a catch-up consume across many closed segments returns every record once, in order", "[streamctl]") {
  // Segments of 4 KiB: almost every read reaches into closed segments and runs on a reader thread,
  // while the last ones read the active segment on the loop.
  DataBroker b;
  REQUIRE(b.ctl({"create", "c", "--partitions", "2", "--segment-bytes", "4096"}).code == 0);
  std::string input;
  for (int i = 0; i < 3000; ++i) input += "record-" + std::to_string(i) + "\n";
  REQUIRE(b.ctl({"produce", "c", "--key", "k", "--batch", "50"}, input).code == 0);
  CtlResult described = b.ctl({"describe", "c", "--json"});
  REQUIRE(described.code == 0);
  // The keyed partition holds all 3000 records in many segments.
  const size_t keyed = described.out.find("\"next\":3000,");
  REQUIRE(keyed != std::string::npos);
  const size_t count_at = described.out.find("\"segments\":", keyed) + 11;
  CHECK(std::stoi(described.out.substr(count_at)) > 5);
  CtlResult all = b.ctl({"consume", "c"});
  REQUIRE(all.code == 0);
  const std::vector<std::string> lines = all.lines();
  REQUIRE(lines.size() == 3000);
  for (int i = 0; i < 3000; ++i) CHECK(lines[static_cast<size_t>(i)] == "record-" + std::to_string(i));
  // Peek and seek (offset_at) go through the reader threads too.
  CHECK(b.ctl({"peek", "c", "--partition", std::to_string(client::partition_of("k", 2))}).code == 0);
  CHECK(b.ctl({"seek", "c", "--partition", "0", "--time", "@-1h"}).code == 0);
}

TEST_CASE("consume --follow prints new records and stops on SIGTERM after committing them", "[streamctl]") {
  DataBroker b;
  REQUIRE(b.ctl({"create", "f", "--partitions", "2"}).code == 0);
  StreamctlProcess follower(b.daemon.port(), {"consume", "f", "--follow", "--group", "tail", "--json"});
  // The follower starts at earliest for an unknown group, so records produced before it polls count.
  REQUIRE(b.ctl({"produce", "f", "--value", "1", "2", "3"}).code == 0);
  REQUIRE(b.ctl({"produce", "f", "--key", "k", "--value", "4", "5"}).code == 0);
  auto lines = follower.wait_for_lines(5, std::chrono::seconds(20));
  REQUIRE(lines.size() == 5);
  follower.signal(SIGTERM);
  CtlResult ended = follower.wait();
  CHECK(ended.code == 0);
  CHECK(ended.lines().size() == 5);
  CtlResult committed = b.ctl({"committed", "f", "--group", "tail", "--json"});
  int64_t total = 0;
  for (const std::string& part : {std::string("0"), std::string("1")}) {
    const size_t at = committed.out.find("{\"partition\":" + part + ",");
    if (at != std::string::npos) total += json_int(committed.out.substr(at), "offset");
  }
  CHECK(total == 5);
  CHECK(b.ctl({"consume", "f", "--group", "tail"}).out.empty());
}

}  // namespace
}  // namespace streamd::testing
