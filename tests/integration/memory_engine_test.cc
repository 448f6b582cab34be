// streamd with storage.engine memory (docs/ENGINES.md): it serves the protocol like the file engine,
// says it is ephemeral in /healthz and its start-up log, keeps nothing across a restart, touches no
// data directory, and refuses appends past storage.memory.max_bytes with STREAM_FULL.
#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/integration/running_daemon.h"
#include "tests/integration/wire_client.h"

namespace streamd::testing {
namespace {

TEST_CASE("the memory engine serves appends and reads, and says in /healthz and its log that it is ephemeral",
          "[operations]") {
  RunningDaemon r({"--storage.engine", "memory"});
  auto health = r.daemon.http_get("/healthz");
  CHECK(health.status == 200);
  CHECK(health.body.rfind("ok\n", 0) == 0);
  CHECK(health.body.find("memory") != std::string::npos);
  CHECK(health.body.find("ephemeral") != std::string::npos);
  CHECK(r.daemon.log().find("ephemeral") != std::string::npos);

  WireClient c(r.daemon.port());
  REQUIRE(c.call(create_request("kept", 2)).has_create_stream());
  for (int i = 0; i < 4; ++i) REQUIRE(c.call(append_request("kept", {{"", "record", {}}})).has_append());
  auto read = c.call(read_request("kept", {{0, 0}, {1, 0}}));
  REQUIRE(read.has_read());
  size_t records = 0;
  for (const auto& p : read.read().partitions()) records += static_cast<size_t>(p.entries_size());
  CHECK(records == 4);
  CHECK_FALSE(std::filesystem::exists(r.daemon.data_dir() + "/streams"));

  REQUIRE(r.daemon.stop() == 0);
  REQUIRE(r.daemon.start());
  WireClient again(r.daemon.port());
  CHECK(error_name(again.call(read_request("kept", {{0, 0}}))) == "STREAM_NOT_FOUND");
}

TEST_CASE("the memory engine refuses appends past storage.memory.max_bytes with STREAM_FULL", "[operations]") {
  RunningDaemon r({"--storage.engine", "memory", "--storage.memory.max-bytes", "1MiB"});
  WireClient c(r.daemon.port());
  REQUIRE(c.call(create_request("full", 1)).has_create_stream());
  const std::string payload(64 * 1024, 'x');
  int appended = 0;
  std::string refused;
  for (int i = 0; i < 64 && refused.empty(); ++i) {
    auto answer = c.call(append_request("full", {{"", payload, {}}}));
    if (answer.has_append()) {
      ++appended;
    } else {
      refused = error_name(answer);
    }
  }
  CHECK(refused == "STREAM_FULL");
  CHECK(appended >= 15);
  CHECK(appended <= 17);
  // Nothing was evicted: every acknowledged record is still there.
  int kept = 0;
  uint64_t from = 0;
  for (int reads = 0; reads < 64 && kept < appended; ++reads) {
    auto read = c.call(read_request("full", {{0, from}}));
    REQUIRE(read.has_read());
    REQUIRE(read.read().partitions(0).entries_size() > 0);
    kept += read.read().partitions(0).entries_size();
    from = read.read().partitions(0).next_from();
  }
  CHECK(kept == appended);
}

TEST_CASE("storage.engine postgres without storage.postgres.dsn is refused at start naming the key",
          "[operations]") {
  DaemonProcess daemon({"--storage.engine", "postgres"});
  REQUIRE_FALSE(daemon.start());
  CHECK(daemon.exit_code() == 78);
  CHECK(daemon.log().find("SQL_STREAM_MISCONFIGURED") != std::string::npos);
  CHECK(daemon.log().find("storage.postgres.dsn") != std::string::npos);
}

TEST_CASE("an unknown storage.engine is refused at start naming the value", "[operations]") {
  DaemonProcess daemon({"--storage.engine", "mysql"});
  REQUIRE_FALSE(daemon.start());
  CHECK(daemon.exit_code() == 78);
  CHECK(daemon.log().find("storage.engine") != std::string::npos);
  CHECK(daemon.log().find("mysql") != std::string::npos);
}

}  // namespace
}  // namespace streamd::testing
