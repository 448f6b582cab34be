// Every operation of docs/SEMANTICS.md §2 and every error code the broker can produce, over the wire, against
// the real daemon.
#include <catch2/catch.hpp>

#include "proto/placement.h"
#include "tests/integration/running_daemon.h"
#include "tests/integration/wire_client.h"

namespace streamd::testing {
namespace {

struct Running {
  explicit Running(std::vector<std::string> args = {}) : daemon(std::move(args)) { REQUIRE(daemon.start()); }
  ~Running() { CHECK(daemon.stop() == 0); }
  DaemonProcess daemon;
};

// Keys that hash to `partition` of `partitions`, from a deterministic sequence.
std::string key_for(int32_t partition, int32_t partitions, int skip = 0) {
  for (int i = 0;; ++i) {
    std::string key = "key-" + std::to_string(i);
    if (placement::partition_of(key, partitions) == partition && skip-- == 0) return key;
  }
}

TEST_CASE("Hello answers the protocol version, the broker version and the frame limit", "[protocol]") {
  Running r({"--limits.max-frame-bytes", "1MiB"});
  WireClient c(r.daemon.port(), false);
  v1::Request hello;
  hello.mutable_hello()->set_protocol_version(1);
  auto response = c.call(hello);
  REQUIRE(response.has_hello());
  CHECK(response.hello().protocol_version() == 1);
  CHECK(response.hello().broker_version() == STREAMD_VERSION);
  CHECK(response.hello().max_frame_bytes() == 1u << 20);
}

TEST_CASE("stream administration: create, exists, list, describe, delete", "[protocol]") {
  Running r;
  WireClient c(r.daemon.port());
  REQUIRE(c.connected());

  auto created = c.call(create_request("orders", 3));
  REQUIRE(created.has_create_stream());
  CHECK(created.create_stream().created());
  CHECK(created.create_stream().policy().partitions() == 3);
  CHECK(created.create_stream().policy().max_record_bytes() == 1 << 20);  // normalized

  auto again = c.call(create_request("orders", 3));
  CHECK(error_name(again) == "STREAM_EXISTS");
  CHECK(again.error().code() == 0x00040102u);
  auto idempotent = c.call(create_request("orders", 3, true));
  REQUIRE(idempotent.has_create_stream());
  CHECK_FALSE(idempotent.create_stream().created());

  auto bad_name = c.call(create_request("../etc", 1));
  CHECK(error_name(bad_name) == "STREAM_MISCONFIGURED");
  CHECK(bad_name.error().fields().at("field") == "name");
  auto negative = c.call(create_request("neg", -1));
  CHECK(error_name(negative) == "STREAM_MISCONFIGURED");
  CHECK(negative.error().fields().at("field") == "partitions");

  v1::Request list;
  list.mutable_list_streams();
  auto listed = c.call(list);
  REQUIRE(listed.has_list_streams());
  REQUIRE(listed.list_streams().streams_size() == 1);
  CHECK(listed.list_streams().streams(0).name() == "orders");
  CHECK(listed.list_streams().streams(0).partitions() == 3);

  v1::Request describe;
  describe.mutable_describe_stream()->set_name("orders");
  auto described = c.call(describe);
  REQUIRE(described.has_describe_stream());
  CHECK(described.describe_stream().partitions_size() == 3);
  CHECK(described.describe_stream().created_at_us() > 0);

  v1::Request del;
  del.mutable_delete_stream()->set_name("orders");
  auto deleted = c.call(del);
  REQUIRE(deleted.has_delete_stream());
  CHECK(deleted.delete_stream().deleted());
  auto missing = c.call(del);
  CHECK(error_name(missing) == "STREAM_NOT_FOUND");
  del.mutable_delete_stream()->set_if_exists(true);
  auto quiet = c.call(del);
  REQUIRE(quiet.has_delete_stream());
  CHECK_FALSE(quiet.delete_stream().deleted());
  CHECK(error_name(c.call(describe)) == "STREAM_NOT_FOUND");
}

TEST_CASE("append and read carry records byte for byte, with their errors", "[protocol]") {
  Running r;
  WireClient c(r.daemon.port());
  REQUIRE(c.call(create_request("s", 2)).has_create_stream());
  const std::string key = key_for(1, 2);
  const std::string binary("\0\x01\xff payload", 11);

  auto appended = c.call(append_request("s", {{key, binary, {{"h1", std::string("\0v", 2)}, {"h2", ""}}},
                                              {key, "", {}},
                                              {"", "unkeyed follows the batch", {}}}));
  REQUIRE(appended.has_append());
  CHECK(appended.append().partition() == 1);
  CHECK(appended.append().first() == 0);
  CHECK(appended.append().last() == 2);

  auto read = c.call(read_request("s", {{1, 0}}));
  REQUIRE(read.has_read());
  REQUIRE(read.read().partitions_size() == 1);
  const auto& p = read.read().partitions(0);
  CHECK(p.partition() == 1);
  CHECK_FALSE(p.has_error());
  REQUIRE(p.entries_size() == 3);
  CHECK(p.next_from() == 3);
  CHECK(p.entries(0).record().key() == key);
  CHECK(p.entries(0).record().payload() == binary);
  REQUIRE(p.entries(0).record().headers_size() == 2);
  CHECK(p.entries(0).record().headers(0).name() == "h1");
  CHECK(p.entries(0).record().headers(0).value() == std::string("\0v", 2));
  CHECK(p.entries(1).record().payload().empty());
  CHECK(p.entries(2).record().key().empty());
  CHECK(p.entries(2).offset() == 2);
  CHECK(p.entries(0).appended_at_us() == p.entries(2).appended_at_us());
  CHECK(p.entries(0).appended_at_us() > 0);

  SECTION("per-cursor errors") {
    auto errors = c.call(read_request("s", {{1, 4}, {5, 0}, {0, 0}}));
    REQUIRE(errors.has_read());
    REQUIRE(errors.read().partitions_size() == 3);
    CHECK(errors.read().partitions(0).error().name() == "OFFSET_AHEAD");
    CHECK(errors.read().partitions(0).error().fields().at("next") == "3");
    CHECK(errors.read().partitions(1).error().name() == "UNKNOWN_PARTITION");
    CHECK_FALSE(errors.read().partitions(2).has_error());
    CHECK(errors.read().partitions(2).entries_size() == 0);
  }
  SECTION("request-level errors") {
    CHECK(error_name(c.call(read_request("s", {{0, 0}}, 0))) == "INVALID_BATCH_SIZE");
    CHECK(error_name(c.call(read_request("nope", {{0, 0}}))) == "STREAM_NOT_FOUND");
    CHECK(error_name(c.call(read_request("s", {}))) == "STREAM_MISCONFIGURED");
    CHECK(error_name(c.call(append_request("s", {}))) == "INVALID_BATCH_SIZE");
    auto mixed = c.call(append_request("s", {{key_for(0, 2), "a", {}}, {key_for(1, 2), "b", {}}}));
    CHECK(error_name(mixed) == "PARTITIONS_MIXED");
    CHECK(mixed.error().code() == 0x00022609u);
  }
}

TEST_CASE("RECORD_TOO_LARGE and STREAM_FULL carry their fields and write nothing", "[protocol]") {
  Running r;
  WireClient c(r.daemon.port());
  v1::Request create = create_request("small", 1);
  create.mutable_create_stream()->mutable_policy()->set_max_record_bytes(1024);
  create.mutable_create_stream()->mutable_policy()->set_max_bytes(4096);
  REQUIRE(c.call(create).has_create_stream());

  auto too_large = c.call(append_request("small", {{"", "ok", {}}, {"", std::string(2000, 'x'), {}}}));
  CHECK(error_name(too_large) == "RECORD_TOO_LARGE");
  CHECK(too_large.error().fields().at("index") == "1");
  CHECK(too_large.error().fields().at("size") == "2000");
  CHECK(too_large.error().fields().at("limit") == "1024");

  // Fill the stream (no retention frees room), then one more append is refused at once.
  std::string last_error;
  for (int i = 0; i < 20 && last_error.empty(); ++i) {
    last_error = error_name(c.call(append_request("small", {{"", std::string(900, 'f'), {}}})));
  }
  CHECK(last_error == "STREAM_FULL");
  v1::Request bounds;
  bounds.mutable_bounds()->set_stream("small");
  auto b = c.call(bounds);
  REQUIRE(b.has_bounds());
  CHECK(b.bounds().next() < 20);
}

TEST_CASE("bounds, peek, offset_at and trim", "[protocol]") {
  Running r;
  WireClient c(r.daemon.port());
  for (int i = 0; i < 5; ++i)
    REQUIRE(c.call(append_request("auto", {{"", "r" + std::to_string(i), {}}})).has_append());

  v1::Request bounds;
  bounds.mutable_bounds()->set_stream("auto");
  auto b = c.call(bounds);
  REQUIRE(b.has_bounds());
  CHECK(b.bounds().first() == 0);
  CHECK(b.bounds().next() == 5);
  bounds.mutable_bounds()->set_partition(3);
  CHECK(error_name(c.call(bounds)) == "UNKNOWN_PARTITION");

  v1::Request peek;
  peek.mutable_peek()->set_stream("auto");
  auto peeked = c.call(peek);
  REQUIRE(peeked.has_peek());
  REQUIRE(peeked.peek().has_entry());
  CHECK(peeked.peek().entry().offset() == 4);
  CHECK(peeked.peek().entry().record().payload() == "r4");

  v1::Request at;
  at.mutable_offset_at()->set_stream("auto");
  at.mutable_offset_at()->set_time_us(0);
  auto before_all = c.call(at);
  REQUIRE(before_all.has_offset_at());
  CHECK(before_all.offset_at().offset() == 0);
  at.mutable_offset_at()->set_time_us(INT64_MAX);
  auto after_all = c.call(at);
  REQUIRE(after_all.has_offset_at());
  CHECK(after_all.offset_at().offset() == 5);

  v1::Request trim;
  trim.mutable_trim()->set_stream("auto");
  trim.mutable_trim()->set_before(3);
  auto trimmed = c.call(trim);
  REQUIRE(trimmed.has_trim());
  CHECK(trimmed.trim().first() == 3);
  auto gone = c.call(read_request("auto", {{0, 1}}));
  REQUIRE(gone.has_read());
  CHECK(gone.read().partitions(0).error().name() == "OFFSET_TRIMMED");
  CHECK(gone.read().partitions(0).error().fields().at("first") == "3");
  trim.mutable_trim()->set_before(9);
  CHECK(error_name(c.call(trim)) == "OFFSET_AHEAD");

  REQUIRE(c.call(create_request("empty", 1)).has_create_stream());
  peek.mutable_peek()->set_stream("empty");
  auto nothing = c.call(peek);
  REQUIRE(nothing.has_peek());
  CHECK_FALSE(nothing.peek().has_entry());
}

TEST_CASE("consumer groups: commit, committed, list_groups", "[protocol]") {
  Running r;
  WireClient c(r.daemon.port());
  REQUIRE(c.call(create_request("g", 1)).has_create_stream());
  REQUIRE(c.call(append_request("g", {{"", "a", {}}, {"", "b", {}}, {"", "c", {}}})).has_append());

  v1::Request committed;
  committed.mutable_committed()->set_stream("g");
  committed.mutable_committed()->set_group("readers");
  CHECK(error_name(c.call(committed)) == "UNKNOWN_GROUP");

  v1::Request commit;
  commit.mutable_commit()->set_stream("g");
  commit.mutable_commit()->set_group("readers");
  commit.mutable_commit()->set_next(2);
  auto done = c.call(commit);
  REQUIRE(done.has_commit());
  CHECK(done.commit().next() == 2);
  auto now = c.call(committed);
  REQUIRE(now.has_committed());
  CHECK(now.committed().next() == 2);

  commit.mutable_commit()->set_next(7);
  CHECK(error_name(c.call(commit)) == "OFFSET_AHEAD");
  commit.mutable_commit()->set_group("");
  commit.mutable_commit()->set_next(1);
  auto empty_group = c.call(commit);
  CHECK(error_name(empty_group) == "STREAM_MISCONFIGURED");
  CHECK(empty_group.error().fields().at("field") == "group");

  v1::Request groups;
  groups.mutable_list_groups()->set_stream("g");
  auto listed = c.call(groups);
  REQUIRE(listed.has_list_groups());
  REQUIRE(listed.list_groups().groups_size() == 1);
  CHECK(listed.list_groups().groups(0).group() == "readers");
  CHECK(listed.list_groups().groups(0).committed() == 2);
  CHECK(listed.list_groups().groups(0).next() == 3);
  CHECK(listed.list_groups().groups(0).lag() == 1);
}

TEST_CASE("compact with no compact_after is a zero result, health reports the broker", "[protocol]") {
  Running r;
  WireClient c(r.daemon.port());
  REQUIRE(c.call(append_request("k", {{"a", "1", {}}, {"a", "2", {}}})).has_append());
  v1::Request compact;
  compact.mutable_compact()->set_stream("k");
  auto compacted = c.call(compact);
  REQUIRE(compacted.has_compact());
  CHECK(compacted.compact().scanned() == 0);
  CHECK(compacted.compact().kept() == 0);
  CHECK(compacted.compact().dropped() == 0);

  v1::Request health;
  health.mutable_health();
  auto h = c.call(health);
  REQUIRE(h.has_health());
  CHECK(h.health().status() == "ok");
  CHECK(h.health().version() == STREAMD_VERSION);
  CHECK(h.health().streams() == 1);
}

TEST_CASE("auto_create_streams off refuses appends to unknown streams", "[protocol]") {
  Running r({"--auto-create-streams", "false"});
  WireClient c(r.daemon.port());
  CHECK(error_name(c.call(append_request("unknown", {{"", "x", {}}}))) == "STREAM_NOT_FOUND");
}

TEST_CASE("the connection past max_connections gets UNAVAILABLE and a close, others carry on", "[protocol]") {
  Running r({"--limits.max-connections", "1"});
  WireClient first(r.daemon.port());
  REQUIRE(first.connected());
  TestSocket second(r.daemon.port());
  auto body = second.read_frame();
  REQUIRE(body.has_value());
  v1::Response refused;
  REQUIRE(refused.ParseFromString(*body));
  CHECK(error_name(refused) == "UNAVAILABLE");
  CHECK(refused.error().code() == 0x00040107u);
  CHECK(second.closed_by_peer());
  v1::Request health;
  health.mutable_health();
  CHECK(first.call(health).has_health());
}

}  // namespace
}  // namespace streamd::testing

namespace streamd::testing {
namespace {

TEST_CASE("a disk that refuses writes is STREAM_BACKEND_FAILED over the wire, other streams carry on",
          "[protocol]") {
  // The segment log (64 MiB segments) hits the 6 MiB file limit after about 90 appends of 64 KiB.
  DaemonProcess daemon;
  daemon.set_file_size_limit(6u << 20);
  REQUIRE(daemon.start());
  WireClient c(daemon.port());
  REQUIRE(c.call(create_request("fills", 1)).has_create_stream());
  std::string error;
  v1::Response failed;
  for (int i = 0; i < 200 && error.empty(); ++i) {
    failed = c.call(append_request("fills", {{"", std::string(64 * 1024, 'd'), {}}}));
    error = error_name(failed);
  }
  CHECK(error == "STREAM_BACKEND_FAILED");
  CHECK(failed.error().code() == 0x00035E01u);
  CHECK(failed.error().message().find("File too large") != std::string::npos);
  CHECK(c.call(append_request("other", {{"", "small", {}}})).has_append());
  CHECK(daemon.stop() == 0);
}

}  // namespace
}  // namespace streamd::testing

namespace streamd::testing {
namespace {

// A stream of at most 4 KiB, in 1 KiB segments, whose appends wait `block_timeout_ms` for room: five
// appends of ~950 bytes are admitted (each finds it below the limit) and leave it full.
void create_full_stream(WireClient& c, const std::string& name, int64_t block_timeout_ms) {
  v1::Request create = create_request(name, 1);
  auto* policy = create.mutable_create_stream()->mutable_policy();
  policy->set_max_record_bytes(1024);
  policy->set_max_bytes(4096);
  policy->set_block_timeout_ms(block_timeout_ms);
  policy->set_segment_bytes(1024);
  REQUIRE(c.call(create).has_create_stream());
  for (int i = 0; i < 5; ++i)
    REQUIRE(c.call(append_request(name, {{"", std::string(900, 'f'), {}}})).has_append());
}

TEST_CASE("an append to a full stream waits block_timeout, then STREAM_FULL", "[protocol]") {
  RunningDaemon r;
  WireClient c(r.daemon.port());
  create_full_stream(c, "brim", 200);
  auto refused = c.call(append_request("brim", {{"", std::string(900, 'g'), {}}}));
  CHECK(error_name(refused) == "STREAM_FULL");
  CHECK(refused.error().code() == 0x00022607u);
}

TEST_CASE("an append waiting for room is answered once a trim makes some", "[protocol]") {
  RunningDaemon r;
  WireClient producer(r.daemon.port());
  WireClient admin(r.daemon.port());
  create_full_stream(producer, "tight", 60'000);
  const uint64_t id = producer.send(append_request("tight", {{"", std::string(900, 'g'), {}}}));
  // The append is waiting: an answer to a later request on the same connection comes first.
  v1::Request bounds;
  bounds.mutable_bounds()->set_stream("tight");
  auto before = producer.call(bounds);
  REQUIRE(before.has_bounds());
  CHECK(before.bounds().next() == 5);
  v1::Request trim;
  trim.mutable_trim()->set_stream("tight");
  trim.mutable_trim()->set_before(5);
  REQUIRE(admin.call(trim).has_trim());
  auto answer = producer.wait_for(id, std::chrono::seconds(30));
  REQUIRE(answer.has_value());
  REQUIRE(answer->has_append());
  CHECK(answer->append().first() == 5);
}

}  // namespace
}  // namespace streamd::testing
