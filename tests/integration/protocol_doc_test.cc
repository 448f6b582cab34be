// docs/PROTOCOL.md's worked example is a capture, not an illustration: this test replays it against a
// fresh daemon and requires the same bytes, so the document cannot drift from the code.
#include <catch2/catch.hpp>
#include <cstdio>
#include <sstream>

#include "tests/integration/running_daemon.h"
#include "tests/integration/wire_client.h"

namespace streamd::testing {
namespace {

// The hex dumps of the document, in order: each a run of "    0000  00 01 …  |…|" lines.
std::vector<std::string> hex_dumps(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string text;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);

  std::vector<std::string> dumps;
  std::istringstream lines(text);
  std::string line;
  bool in_dump = false;
  while (std::getline(lines, line)) {
    const bool hex_line = line.size() > 10 && line.starts_with("    ") && line[8] == ' ' && line[9] == ' ' &&
                          line.find('|') != std::string::npos &&
                          line.substr(4, 4).find_first_not_of("0123456789abcdef") == std::string::npos;
    if (!hex_line) {
      in_dump = false;
      continue;
    }
    if (!in_dump || line.substr(4, 4) == "0000") dumps.emplace_back();
    in_dump = true;
    std::istringstream bytes(line.substr(10, line.find('|') - 10));
    std::string byte;
    while (bytes >> byte) dumps.back() += static_cast<char>(std::stoi(byte, nullptr, 16));
  }
  return dumps;
}

TEST_CASE("the worked Append example of docs/PROTOCOL.md is what the daemon sends and answers",
          "[protocol]") {
  const auto dumps = hex_dumps(STREAMD_SOURCE_DIR "/docs/PROTOCOL.md");
  REQUIRE(dumps.size() == 3);  // the Append request, its answer, the answer to the same request again

  RunningDaemon r;
  WireClient c(r.daemon.port());
  REQUIRE(c.connected());
  v1::Request append = append_request("orders", {{"user-42", "hello", {{"type", "greeting"}}}});
  append.set_id(2);
  CHECK(frame_of(append) == dumps[0]);
  for (const auto& [id, expected] : {std::pair<uint64_t, const std::string&>{2, dumps[1]}, {3, dumps[2]}}) {
    append.set_id(id);
    REQUIRE(c.socket().send_all(frame_of(append)));
    auto body = c.socket().read_frame();
    REQUIRE(body.has_value());
    CHECK(expected.size() == 4 + body->size());
    CHECK(expected.substr(4) == *body);
  }
}

}  // namespace
}  // namespace streamd::testing
