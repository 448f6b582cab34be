// streamd with storage.engine postgres (docs/ENGINES.md §"The PostgreSQL engine") over a PostgreSQL
// of the test's own: --init-postgres prepares the schema, the daemon serves the protocol, keeps
// streams, records and group offsets across a restart, and refuses at start a server with fsync off.
#include <catch2/catch.hpp>
#include <cstdlib>

#include "tests/integration/running_daemon.h"
#include "tests/integration/wire_client.h"
#include "tests/support/pg_cluster.h"

namespace streamd::testing {
namespace {

TEST_CASE("streamd over postgres: --init-postgres, appends, reads and commits that survive a restart",
          "[operations][postgres]") {
  const std::string dsn = create_database(shared_cluster_dsn());
  const std::string init = DaemonProcess::binary() + " --init-postgres --storage.postgres.dsn '" + dsn + "'";
  REQUIRE(std::system(init.c_str()) == 0);

  RunningDaemon r({"--storage.engine", "postgres", "--storage.postgres.dsn", dsn});
  CHECK(r.daemon.http_get("/healthz").status == 200);
  WireClient c(r.daemon.port());
  REQUIRE(c.call(create_request("kept", 2)).has_create_stream());
  for (int i = 0; i < 6; ++i) REQUIRE(c.call(append_request("kept", {{"", "record", {}}})).has_append());
  v1::Request commit;
  commit.mutable_commit()->set_stream("kept");
  commit.mutable_commit()->set_group("g");
  commit.mutable_commit()->set_next(2);
  REQUIRE(c.call(commit).has_commit());

  REQUIRE(r.daemon.stop() == 0);
  REQUIRE(r.daemon.start());
  WireClient again(r.daemon.port());
  auto read = again.call(read_request("kept", {{0, 0}, {1, 0}}));
  REQUIRE(read.has_read());
  size_t records = 0;
  for (const auto& p : read.read().partitions()) records += static_cast<size_t>(p.entries_size());
  CHECK(records == 6);
  v1::Request ask;
  ask.mutable_committed()->set_stream("kept");
  ask.mutable_committed()->set_group("g");
  auto committed = again.call(ask);
  REQUIRE(committed.has_committed());
  CHECK(committed.committed().next() == 2);
}

TEST_CASE("streamd over postgres refuses a server with fsync off (SQL_STREAM_MISCONFIGURED, 78)",
          "[operations][postgres]") {
  (void)shared_cluster_dsn();  // skips, naming why, where PostgreSQL cannot run
  PgCluster cluster({"fsync=off"});
  DaemonProcess daemon({"--storage.engine", "postgres", "--storage.postgres.dsn", cluster.dsn()});
  REQUIRE_FALSE(daemon.start());
  CHECK(daemon.exit_code() == 78);
  CHECK(daemon.log().find("SQL_STREAM_MISCONFIGURED") != std::string::npos);
  CHECK(daemon.log().find("field=fsync") != std::string::npos);
}

}  // namespace
}  // namespace streamd::testing
