// streamctl against the real daemon: every administrative command's happy path with its JSON shape,
// its human table, and the exit code of each error the commands can meet.
#include <catch2/catch.hpp>

#include "tests/integration/streamctl_runner.h"
#include "tests/support/daemon_fixture.h"

namespace streamd::testing {
namespace {

struct Broker {
  explicit Broker(std::vector<std::string> args = {}) : daemon(std::move(args)) { REQUIRE(daemon.start()); }
  ~Broker() { CHECK(daemon.stop() == 0); }
  CtlResult ctl(const std::vector<std::string>& args, const std::string& input = "") {
    return run_streamctl(daemon.port(), args, input);
  }
  DaemonProcess daemon;
};

TEST_CASE("create, list, describe and delete", "[streamctl]") {
  Broker b;
  CtlResult created = b.ctl({"create", "orders", "--partitions", "3", "--retain-for", "7d", "--json"});
  REQUIRE(created.code == 0);
  CHECK(
      created.out ==
      R"({"name":"orders","policy":{"partitions":3,"max_record_bytes":1048576,"retain_for_ms":604800000,)"
      R"("retain_bytes":0,"max_bytes":0,"block_timeout_ms":0,"segment_bytes":67108864,"compact_after_ms":0,)"
      R"("timestamp_type":"CreateTime"}})"
      "\n");
  CHECK(b.ctl({"create", "events"}).code == 0);

  CtlResult again = b.ctl({"create", "orders"});
  CHECK(again.code == 73);
  CHECK(again.err.rfind("streamctl: STREAM_EXISTS: ", 0) == 0);
  CHECK(b.ctl({"create", "orders", "--if-not-exists"}).code == 0);

  CtlResult list = b.ctl({"list", "--json"});
  REQUIRE(list.code == 0);
  CHECK(list.out.find(R"({"name":"orders","partitions":3})") != std::string::npos);
  CHECK(list.out.find(R"({"name":"events","partitions":1})") != std::string::npos);
  CtlResult table = b.ctl({"list"});
  CHECK(table.lines().at(0) == "NAME    PARTITIONS");

  CtlResult describe = b.ctl({"describe", "orders", "--json"});
  REQUIRE(describe.code == 0);
  CHECK(describe.out.find(R"("partitions":[{"partition":0,"first":0,"next":0,"bytes":0,"segments":)") !=
        std::string::npos);
  CtlResult describe_text = b.ctl({"describe", "orders"});
  CHECK(describe_text.out.find("PARTITION  FIRST  NEXT  BYTES  SEGMENTS") != std::string::npos);

  CtlResult deleted = b.ctl({"delete", "orders", "--json"});
  CHECK(deleted.code == 0);
  CHECK(deleted.out == "{\"name\":\"orders\"}\n");
  CtlResult gone = b.ctl({"delete", "orders"});
  CHECK(gone.code == 66);
  CHECK(gone.err.rfind("streamctl: STREAM_NOT_FOUND: ", 0) == 0);
  CHECK(b.ctl({"delete", "orders", "--if-exists"}).code == 0);
  CHECK(b.ctl({"describe", "orders"}).code == 66);
}

TEST_CASE("a policy the broker refuses names its field, exit 78", "[streamctl]") {
  Broker b;
  CtlResult negative = b.ctl({"create", "bad", "--partitions=-1", "--json"});
  CHECK(negative.code == 78);
  CHECK(negative.err.find("field=partitions") != std::string::npos);
  CHECK(negative.err.find(R"({"error":{"code":140801,"name":"STREAM_MISCONFIGURED",)") != std::string::npos);
  CtlResult name = b.ctl({"create", "../etc"});
  CHECK(name.code == 78);
  CHECK(name.err.find("field=name") != std::string::npos);
  CtlResult block = b.ctl({"create", "bad", "--block-timeout", "5s"});
  CHECK(block.code == 78);
  CHECK(block.err.find("field=block_timeout") != std::string::npos);
}

TEST_CASE("alter changes the fields given on a live stream and keeps the others", "[streamctl]") {
  Broker b;
  REQUIRE(b.ctl({"create", "orders", "--partitions", "3", "--retain-for", "7d", "--max-bytes", "2000000"}).code == 0);
  CtlResult checked = b.ctl({"alter", "orders", "--retain-bytes", "5000", "--validate-only", "--json"});
  REQUIRE(checked.code == 0);
  CHECK(checked.out.find(R"("validate_only":true)") != std::string::npos);
  CHECK(checked.out.find(R"("retain_bytes":5000,)") != std::string::npos);
  CHECK(b.ctl({"describe", "orders", "--json"}).out.find(R"("retain_bytes":0,)") != std::string::npos);

  CtlResult altered = b.ctl({"alter", "orders", "--retain-bytes", "5000", "--retain-for", "0", "--timestamp-type",
                             "LogAppendTime", "--json"});
  REQUIRE(altered.code == 0);
  CHECK(altered.out ==
        R"({"name":"orders","validate_only":false,"policy":{"partitions":3,"max_record_bytes":1048576,)"
        R"("retain_for_ms":0,"retain_bytes":5000,"max_bytes":2000000,"block_timeout_ms":0,)"
        R"("segment_bytes":67108864,"compact_after_ms":0,"timestamp_type":"LogAppendTime"}})"
        "\n");
  CtlResult described = b.ctl({"describe", "orders", "--json"});
  CHECK(described.out.find(R"("retain_bytes":5000,"max_bytes":2000000,)") != std::string::npos);
  CtlResult text = b.ctl({"alter", "orders", "--segment-bytes", "1048576"});
  REQUIRE(text.code == 0);
  CHECK(text.lines().at(0) == "altered stream orders");

  CtlResult count = b.ctl({"alter", "orders", "--partitions", "4"});
  CHECK(count.code == 78);
  CHECK(count.err.find("field=partitions") != std::string::npos);
  CHECK(b.ctl({"alter", "orders", "--partitions", "3", "--compact-after", "1h"}).code == 0);
  CtlResult bad = b.ctl({"alter", "orders", "--max-bytes", "10"});
  CHECK(bad.code == 78);
  CHECK(bad.err.find("field=max_bytes") != std::string::npos);
  CHECK(b.ctl({"describe", "orders", "--json"}).out.find(R"("max_bytes":2000000,)") != std::string::npos);
  CHECK(b.ctl({"alter", "absent", "--retain-bytes", "1"}).code == 66);
}

TEST_CASE("bounds, peek, seek, trim, commit, committed and groups", "[streamctl]") {
  Broker b;
  REQUIRE(b.ctl({"create", "s", "--partitions", "2"}).code == 0);
  // Unstamped unkeyed batches rotate at the broker: two batches of five land on partitions 0 and 1.
  REQUIRE(b.ctl({"produce", "s", "--no-idempotence", "--batch", "5", "--value", "a", "b", "c", "d", "e"}).code == 0);
  REQUIRE(b.ctl({"produce", "s", "--no-idempotence", "--batch", "5", "--value", "f", "g", "h", "i", "j"}).code == 0);

  CtlResult bounds = b.ctl({"bounds", "s", "--json"});
  REQUIRE(bounds.code == 0);
  CHECK(bounds.out == R"([{"partition":0,"first":0,"next":5,"last_stable":5},{"partition":1,"first":0,"next":5,"last_stable":5}])"
                      "\n");
  CHECK(b.ctl({"bounds", "s", "--partition", "1"}).lines() ==
        std::vector<std::string>{"PARTITION  FIRST  NEXT  STABLE", "        1      0     5       5"});

  CtlResult peek = b.ctl({"peek", "s", "--partition", "0", "--json"});
  REQUIRE(peek.code == 0);
  CHECK(json_int(peek.out, "offset") == 4);
  CHECK(json_string(peek.out, "payload") == "e");

  CtlResult seek_past = b.ctl({"seek", "s", "--partition", "0", "--time", "2100-01-01T00:00:00Z", "--json"});
  CHECK(seek_past.out == "{\"partition\":0,\"offset\":5}\n");
  CtlResult seek_before = b.ctl({"seek", "s", "--partition", "0", "--time=-1h", "--json"});
  CHECK(seek_before.out == "{\"partition\":0,\"offset\":0}\n");

  CtlResult trim = b.ctl({"trim", "s", "--partition", "0", "--before", "2", "--json"});
  REQUIRE(trim.code == 0);
  CHECK(trim.out == "{\"partition\":0,\"first\":2}\n");

  CtlResult commit = b.ctl({"commit", "s", "--group", "g", "--partition", "1", "--offset", "3", "--json"});
  REQUIRE(commit.code == 0);
  CHECK(commit.out == "{\"group\":\"g\",\"partition\":1,\"offset\":3}\n");
  CtlResult committed = b.ctl({"committed", "s", "--group", "g", "--json"});
  CHECK(committed.out == "[{\"partition\":1,\"offset\":3}]\n");
  CtlResult groups = b.ctl({"groups", "s", "--json"});
  CHECK(groups.out == "[{\"group\":\"g\",\"partition\":1,\"committed\":3,\"next\":5,\"lag\":2}]\n");
  CtlResult groups_table = b.ctl({"groups", "s"});
  CHECK(groups_table.lines() == std::vector<std::string>{"GROUP  PARTITION  COMMITTED  NEXT  LAG",
                                                         "g              1          3     5    2"});

  CtlResult health = b.ctl({"health", "--json"});
  REQUIRE(health.code == 0);
  CHECK(json_string(health.out, "status") == "ok");
  CHECK(json_int(health.out, "streams") == 1);
}

TEST_CASE("compact reports scanned, kept and dropped per partition", "[streamctl]") {
  Broker b;
  REQUIRE(b.ctl({"create", "c", "--partitions", "2"}).code == 0);
  CtlResult never = b.ctl({"compact", "c", "--json"});
  REQUIRE(never.code == 0);
  CHECK(
      never.out ==
      R"([{"partition":0,"scanned":0,"kept":0,"dropped":0},{"partition":1,"scanned":0,"kept":0,"dropped":0}])"
      "\n");
  CHECK(b.ctl({"compact", "c", "--partition", "1"}).lines().at(0) == "PARTITION  SCANNED  KEPT  DROPPED");
}

TEST_CASE("each error a command can meet exits with docs/SEMANTICS.md §4's code", "[streamctl]") {
  Broker b({"--limits.max-frame-bytes", "64KiB"});
  REQUIRE(
      b.ctl({"create", "s", "--partitions", "2", "--max-record-bytes", "1000", "--max-bytes", "3000"}).code ==
      0);
  REQUIRE(b.ctl({"produce", "s", "--no-idempotence", "--value", "x", "y"}).code == 0);  // one on each

  auto expect = [&](const std::vector<std::string>& args, int code, const std::string& name) {
    CtlResult r = b.ctl(args);
    INFO(args.front() << " " << args.at(1) << ": " << r.err);
    CHECK(r.code == code);
    CHECK(r.err.rfind("streamctl: " + name + ": ", 0) == 0);
  };
  expect({"bounds", "s", "--partition", "7"}, 65, "UNKNOWN_PARTITION");
  expect({"commit", "s", "--group", "g", "--partition", "0", "--offset", "99"}, 65, "OFFSET_AHEAD");
  expect({"trim", "s", "--partition", "0", "--before", "99"}, 65, "OFFSET_AHEAD");
  expect({"committed", "s", "--group", "nobody", "--partition", "0"}, 66, "UNKNOWN_GROUP");
  expect({"committed", "s", "--group", "nobody"}, 66, "UNKNOWN_GROUP");
  expect({"commit", "s", "--group", "", "--partition", "0", "--offset", "0"}, 78, "STREAM_MISCONFIGURED");
  expect({"peek", "ghost", "--partition", "0"}, 66, "STREAM_NOT_FOUND");
  expect({"produce", "s", "--value", std::string(1001, 'r')}, 78, "RECORD_TOO_LARGE");
  expect({"produce", "s", "--batch", "0", "--value", "x"}, 78, "INVALID_BATCH_SIZE");
  expect({"produce", "s", "--value", std::string(70'000, 'f')}, 76, "FRAME_TOO_LARGE");
  expect({"consume", "s", "--from", "99", "--partition", "0"}, 65, "OFFSET_AHEAD");
  REQUIRE(b.ctl({"trim", "s", "--partition", "0", "--before", "1"}).code == 0);
  expect({"consume", "s", "--from", "0", "--partition", "0"}, 65, "OFFSET_TRIMMED");
  // max_bytes 3000 with no block_timeout: the append that finds it full is refused at once.
  CtlResult fill;
  for (int i = 0; i < 10 && fill.code != 75; ++i)
    fill = b.ctl({"produce", "s", "--value", std::string(900, 'z')});
  CHECK(fill.code == 75);
  CHECK(fill.err.rfind("streamctl: STREAM_FULL: ", 0) == 0);

  CtlResult unreachable = run_streamctl(1, {"list", "--timeout", "300ms"});
  CHECK(unreachable.code == 69);
  CHECK(unreachable.err.rfind("streamctl: UNAVAILABLE: ", 0) == 0);
}

TEST_CASE("a disk that refuses a write is STREAM_BACKEND_FAILED, exit 74", "[streamctl]") {
  // Every file the daemon writes is capped at 2 MiB: the first segment log fills after 2 MiB of records.
  DaemonProcess daemon;
  daemon.set_file_size_limit(2u << 20);
  REQUIRE(daemon.start());
  const std::string record = std::string(60'000, 'd') + "\n";
  std::string input;
  for (int i = 0; i < 8; ++i) input += record;
  CtlResult r;
  for (int i = 0; i < 10 && r.code != 74; ++i) r = run_streamctl(daemon.port(), {"produce", "fills"}, input);
  CHECK(r.code == 74);
  CHECK(r.err.rfind("streamctl: STREAM_BACKEND_FAILED: ", 0) == 0);
  CHECK(daemon.stop() == 0);
}

}  // namespace
}  // namespace streamd::testing
