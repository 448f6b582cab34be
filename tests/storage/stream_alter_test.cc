// server/storage/stream_store.h's alter: a live stream's policy replaced durably, its metadata file
// replaced atomically, and its partitions' next segments sized by a changed segment_bytes.
#include <catch2/catch.hpp>
#include <cerrno>
#include <fstream>
#include <sstream>

#include "server/storage/batch_builder.h"
#include "server/storage/stream_store.h"
#include "tests/support/fault_injection_fs.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

using testing::FaultInjectionFileSystem;
using testing::TempDir;

class AlterFixture {
 public:
  explicit AlterFixture(FileSystem& fs = posix_file_system()) : file_system(fs) { open(); }
  void open() {
    StreamStoreOptions options;
    options.partition.preallocate_bytes = 4096;
    auto opened = StreamStore::open(file_system, dir.path(), pool, clock, options);
    INFO(opened.status().to_string());
    REQUIRE(opened.ok());
    store = std::move(opened).value();
  }
  void reopen() {
    store.reset();
    open();
  }
  std::shared_ptr<Stream> create(const std::string& name, const Policy& policy) {
    auto s = store->create(name, policy);
    INFO(s.status().to_string());
    REQUIRE(s.ok());
    return *s;
  }
  std::shared_ptr<Stream> find(const std::string& name) {
    auto s = store->find(name);
    REQUIRE(s.ok());
    return *s;
  }
  std::string meta_bytes(const std::string& name) const {
    std::ifstream in(dir.file("streams/" + name + "/STREAM"), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
  }

  FileSystem& file_system;
  TempDir dir;
  ThreadPool pool{2};
  ManualClock clock;
  std::unique_ptr<StreamStore> store;
};

// An edit that sets the fields a test names, as the broker's would.
PolicyEdit setting(std::function<void(Policy&)> set) {
  return [set = std::move(set)](const Policy& current) -> Result<Policy> {
    Policy next = current;
    set(next);
    return next.normalized();
  };
}

std::string batch_of(size_t payload_bytes) {
  BatchBuilder b;
  b.add("", std::string(payload_bytes, 'p'));
  return std::move(b).finish();
}

TEST_CASE("alter replaces a stream's policy durably: the stream answers it, and a reopen reads it") {
  AlterFixture f;
  Policy policy;
  policy.partitions = 2;
  policy.retain_for = std::chrono::hours(1);
  auto s = f.create("orders", policy);
  const Timestamp created = s->created_at();
  f.clock.advance(std::chrono::seconds(5));

  auto altered = f.store->alter("orders", setting([](Policy& p) {
                                  p.retain_for = std::chrono::minutes(1);
                                  p.retain_bytes = 1 << 20;
                                  p.compact_after = std::chrono::hours(2);
                                }));
  REQUIRE(altered.ok());
  Policy expected = policy.normalized();
  expected.retain_for = std::chrono::minutes(1);
  expected.retain_bytes = 1 << 20;
  expected.compact_after = std::chrono::hours(2);
  CHECK(*altered == expected);
  CHECK(s->policy() == expected);  // the open stream, held before the change, sees it
  CHECK(s->created_at() == created);

  s.reset();
  f.reopen();
  auto again = f.find("orders");
  CHECK(again->policy() == expected);
  CHECK(again->created_at() == created);
  CHECK(again->partition_count() == 2);
}

TEST_CASE("a refused edit, or one that changes the partition count, leaves the policy and its file as they were") {
  AlterFixture f;
  Policy policy;
  policy.partitions = 3;
  auto s = f.create("fixed", policy);
  const std::string before = f.meta_bytes("fixed");

  auto refused = f.store->alter("fixed", [](const Policy&) -> Result<Policy> {
    return Status(Code::kStreamMisconfigured, "retain_for: must not be negative", {{"field", "retain_for"}});
  });
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().field("field") == "retain_for");

  auto repartitioned = f.store->alter("fixed", setting([](Policy& p) { p.partitions = 4; }));
  REQUIRE_FALSE(repartitioned.ok());
  CHECK(repartitioned.status().code() == Code::kStreamMisconfigured);
  CHECK(repartitioned.status().field("field") == "partitions");

  auto invalid = f.store->alter("fixed", setting([](Policy& p) { p.block_timeout = std::chrono::seconds(1); }));
  REQUIRE_FALSE(invalid.ok());
  CHECK(invalid.status().field("field") == "block_timeout");

  CHECK(s->policy() == policy.normalized());
  CHECK(f.meta_bytes("fixed") == before);
}

TEST_CASE("alter of an absent stream is STREAM_NOT_FOUND, of a bad name STREAM_MISCONFIGURED") {
  AlterFixture f;
  auto absent = f.store->alter("nothing", setting([](Policy&) {}));
  REQUIRE_FALSE(absent.ok());
  CHECK(absent.status().code() == Code::kStreamNotFound);
  auto bad = f.store->alter("../etc", setting([](Policy&) {}));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == Code::kStreamMisconfigured);
  CHECK(bad.status().field("field") == "name");
}

TEST_CASE("a change whose metadata could not be synced leaves the old policy, in memory and after a crash") {
  FaultInjectionFileSystem faulty;
  AlterFixture f(faulty);
  Policy policy;
  policy.retain_bytes = 4096;
  auto s = f.create("t", policy);

  faulty.fail_next_sync(EIO, "STREAM.tmp");
  auto failed = f.store->alter("t", setting([](Policy& p) { p.retain_bytes = 8192; }));
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == Code::kStreamBackendFailed);
  CHECK(failed.status().field("stream") == "t");
  CHECK(s->policy().retain_bytes == 4096);

  // The next change goes through, and is what a crash keeps.
  auto done = f.store->alter("t", setting([](Policy& p) { p.retain_bytes = 16384; }));
  REQUIRE(done.ok());
  s.reset();
  f.store.reset();
  REQUIRE(faulty.drop_unsynced_data().ok());
  f.open();
  CHECK(f.find("t")->policy().retain_bytes == 16384);
}

TEST_CASE("a changed segment_bytes sizes the segments begun from then on, also in a partition closed at the time") {
  AlterFixture f;
  Policy policy;
  policy.segment_bytes = 1 << 20;
  auto s = f.create("seg", policy);
  const std::string batch = batch_of(1000);
  PartitionSlot* slot = s->partition(PartitionId(0));
  for (int i = 0; i < 4; ++i) REQUIRE(append_and_wait(*slot, batch).ok());
  REQUIRE(slot->segments().size() == 1);

  // Reopened after a clean close, the partition stays closed until used: the change reaches it there.
  s.reset();
  f.reopen();
  s = f.find("seg");
  slot = s->partition(PartitionId(0));
  REQUIRE_FALSE(slot->is_open());
  const uint64_t small = 2 * batch.size() + batch.size() / 2;
  REQUIRE(f.store->alter("seg", setting([&](Policy& p) { p.segment_bytes = static_cast<int64_t>(small); })).ok());
  // The active segment, past the smaller size, closes at the next batch; then two batches a segment.
  for (int i = 0; i < 4; ++i) REQUIRE(append_and_wait(*slot, batch).ok());
  auto segments = slot->segments();
  REQUIRE(segments.size() == 3);
  CHECK(segments[0].bytes == 4 * batch.size());
  CHECK(segments[1].bytes == 2 * batch.size());
  CHECK(segments[2].bytes == 2 * batch.size());

  // A larger size is for the segments begun after it: the active one, begun at the small size, still
  // closes at it, and the next one takes every batch.
  REQUIRE(f.store->alter("seg", setting([](Policy& p) { p.segment_bytes = 1 << 20; })).ok());
  for (int i = 0; i < 5; ++i) REQUIRE(append_and_wait(*slot, batch).ok());
  segments = slot->segments();
  REQUIRE(segments.size() == 4);
  CHECK(segments[3].bytes == 5 * batch.size());
  CHECK(slot->bounds() == Bounds{Offset(0), Offset(13)});
}

}  // namespace
}  // namespace streamd
