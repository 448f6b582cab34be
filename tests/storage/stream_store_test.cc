#include "server/storage/stream_store.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "server/storage/batch_builder.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

StreamStoreOptions small_options() {
  StreamStoreOptions options;
  options.partition.preallocate_bytes = 4096;
  return options;
}

class StoreFixture {
 public:
  StoreFixture() { open(); }
  void open() {
    auto opened = StreamStore::open(posix_file_system(), dir.path(), pool, clock, small_options());
    INFO(opened.status().to_string());
    REQUIRE(opened.ok());
    store = std::move(opened).value();
  }
  void reopen() {
    store.reset();
    open();
  }
  std::shared_ptr<Stream> create(const std::string& name, Policy policy = {}) {
    auto s = store->create(name, policy);
    INFO(s.status().to_string());
    REQUIRE(s.ok());
    return *s;
  }
  std::string streams() const { return dir.file("streams"); }

  TempDir dir;
  ThreadPool pool{2};
  ManualClock clock;
  std::unique_ptr<StreamStore> store;
};

std::string one_batch(const std::string& payload) {
  BatchBuilder b;
  b.add("", payload);
  return std::move(b).finish();
}

TEST_CASE("a created stream has its policy normalized, its creation time and its partitions") {
  StoreFixture f;
  Policy policy;
  policy.partitions = 3;
  auto s = f.create("orders", policy);
  CHECK(s->name() == "orders");
  CHECK(s->policy() == policy.normalized());
  CHECK(s->created_at() == f.clock.now());
  CHECK(s->partition_count() == 3);
  CHECK(s->partition(PartitionId(2)) != nullptr);
  CHECK(s->partition(PartitionId(3)) == nullptr);
  CHECK(s->partition(PartitionId(-1)) == nullptr);
  CHECK(fs::is_directory(f.streams() + "/orders/2"));
  CHECK(fs::exists(f.streams() + "/orders/STREAM"));
  CHECK(f.store->find("orders").ok());
  CHECK(f.store->size() == 1);
}

TEST_CASE("creating a stream that exists is STREAM_EXISTS") {
  StoreFixture f;
  f.create("a");
  auto again = f.store->create("a", Policy{});
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().code() == Code::kStreamExists);
  CHECK(again.status().field("stream") == "a");
}

TEST_CASE("a bad name is refused before any path is formed from it") {
  StoreFixture f;
  auto name = GENERATE(as<std::string>{}, "../escape", "a/b", "", ".hidden", "..");
  INFO(name);
  auto created = f.store->create(name, Policy{});
  REQUIRE_FALSE(created.ok());
  CHECK(created.status().code() == Code::kStreamMisconfigured);
  CHECK(created.status().field("field") == "name");
  CHECK(f.store->find(name).status().code() == Code::kStreamMisconfigured);
  CHECK(f.store->remove(name).code() == Code::kStreamMisconfigured);
  CHECK_FALSE(fs::exists(f.dir.file("escape")));
  CHECK(fs::is_empty(f.streams()));
}

TEST_CASE("a bad policy is refused by field and creates nothing") {
  StoreFixture f;
  Policy policy;
  policy.retain_bytes = -1;
  auto created = f.store->create("s", policy);
  REQUIRE_FALSE(created.ok());
  CHECK(created.status().code() == Code::kStreamMisconfigured);
  CHECK(created.status().field("field") == "retain_bytes");
  CHECK(fs::is_empty(f.streams()));
}

TEST_CASE("an absent stream is STREAM_NOT_FOUND") {
  StoreFixture f;
  CHECK(f.store->find("nope").status().code() == Code::kStreamNotFound);
  Status removed = f.store->remove("nope");
  CHECK(removed.code() == Code::kStreamNotFound);
  CHECK(removed.field("stream") == "nope");
}

TEST_CASE("streams are listed by name") {
  StoreFixture f;
  for (const char* name : {"c", "a", "b"}) f.create(name);
  std::vector<std::string> names;
  for (const auto& s : f.store->list()) names.push_back(s->name());
  CHECK(names == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("streams, their policy, records and commits survive a reopen") {
  StoreFixture f;
  Policy policy;
  policy.partitions = 2;
  policy.retain_bytes = 1 << 20;
  auto s = f.create("kept", policy);
  const Timestamp created = s->created_at();
  REQUIRE(append_and_wait(*s->partition(PartitionId(1)), one_batch("x")).ok());
  s.reset();
  f.clock.advance(std::chrono::seconds(5));
  f.reopen();
  auto found = f.store->find("kept");
  REQUIRE(found.ok());
  CHECK((*found)->policy() == policy.normalized());
  CHECK((*found)->created_at() == created);
  CHECK((*found)->partition(PartitionId(1))->bounds() == Bounds{Offset(0), Offset(1)});
}

TEST_CASE("a removed stream is gone from disk and the store, and its name can be created again") {
  StoreFixture f;
  auto s = f.create("gone");
  REQUIRE(append_and_wait(*s->partition(PartitionId(0)), one_batch("old")).ok());
  REQUIRE(f.store->remove("gone").ok());
  CHECK(f.store->find("gone").status().code() == Code::kStreamNotFound);
  CHECK(fs::is_empty(f.streams()));
  // The removed stream refuses appends; nothing it held reaches the new stream of the same name.
  CHECK(append_and_wait(*s->partition(PartitionId(0)), one_batch("late")).status().code() == Code::kUnavailable);
  auto again = f.create("gone");
  CHECK(again->partition(PartitionId(0))->bounds() == Bounds{});
  f.reopen();
  CHECK(f.store->find("gone").ok());
}

TEST_CASE("open finishes interrupted creates and deletes") {
  StoreFixture f;
  f.create("live");
  f.create("doomed");
  f.store.reset();
  // A delete cut short after its rename, and a create cut short before its rename.
  fs::rename(f.streams() + "/doomed", f.streams() + "/.deleted.doomed.7-0");
  fs::create_directories(f.streams() + "/.creating.half/0");
  f.open();
  std::vector<std::string> names;
  for (const auto& s : f.store->list()) names.push_back(s->name());
  CHECK(names == std::vector<std::string>{"live"});
  CHECK(fs::exists(f.streams() + "/live"));
  CHECK_FALSE(fs::exists(f.streams() + "/.deleted.doomed.7-0"));
  CHECK_FALSE(fs::exists(f.streams() + "/.creating.half"));
  CHECK(f.store->create("half", Policy{}).ok());
  CHECK(f.store->create("doomed", Policy{}).ok());
}

TEST_CASE("a stream whose metadata is damaged stays offline and keeps its name taken") {
  StoreFixture f;
  f.create("good");
  f.create("bad");
  f.store.reset();
  fs::resize_file(f.streams() + "/bad/STREAM", 3);
  f.open();
  CHECK(f.store->find("good").ok());
  CHECK(f.store->find("bad").status().code() == Code::kStreamNotFound);
  CHECK(f.store->create("bad", Policy{}).status().code() == Code::kStreamExists);
}

TEST_CASE("a second store on the same data directory is refused") {
  StoreFixture f;
  ThreadPool pool(1);
  auto second = StreamStore::open(posix_file_system(), f.dir.path(), pool, f.clock);
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == Code::kStreamDirectoryUnusable);
  CHECK(second.status().field("reason") == "locked by another broker");
}

TEST_CASE("a stream's size counts every partition") {
  StoreFixture f;
  Policy policy;
  policy.partitions = 2;
  auto s = f.create("sized", policy);
  std::string batch = one_batch("payload");
  const uint64_t one = batch.size();
  REQUIRE(append_and_wait(*s->partition(PartitionId(0)), batch).ok());
  REQUIRE(append_and_wait(*s->partition(PartitionId(1)), batch).ok());
  CHECK(s->size_bytes() == 2 * one);
}

TEST_CASE("unknown_partition names the stream, the partition and the count") {
  StoreFixture f;
  auto s = f.create("p");
  Status st = s->unknown_partition(PartitionId(4));
  CHECK(st.code() == Code::kUnknownPartition);
  CHECK(st.fields() == Fields{{"stream", "p"}, {"partition", "4"}, {"partitions", "1"}});
}

TEST_CASE("a store keeps its partitions' open files within max_open_files, opening them as they are used") {
  TempDir dir;
  ThreadPool pool{2};
  ManualClock clock;
  StreamStoreOptions options = small_options();
  options.max_open_files = 12;  // four single-segment partitions of the sixteen
  auto open = [&] {
    auto opened = StreamStore::open(posix_file_system(), dir.path(), pool, clock, options);
    REQUIRE(opened.ok());
    return std::move(opened).value();
  };
  auto store = open();
  Policy policy;
  policy.partitions = 16;
  auto s = store->create("wide", policy);
  REQUIRE(s.ok());
  CHECK(store->open_partitions().open_files() <= 12);
  for (int32_t p = 0; p < 16; ++p) {
    REQUIRE(append_and_wait(*(*s)->partition(PartitionId(p)), one_batch("r" + std::to_string(p))).ok());
  }
  s->reset();
  store.reset();

  store = open();
  CHECK(store->open_partitions().open_files() <= 12);
  auto found = store->find("wide");
  REQUIRE(found.ok());
  for (int32_t p = 0; p < 16; ++p) {
    PartitionSlot& slot = *(*found)->partition(PartitionId(p));
    CHECK(slot.bounds() == Bounds{Offset(0), Offset(1)});
    auto read = slot.read(Offset(0), 10, 1 << 20);
    REQUIRE(read.ok());
    REQUIRE(read->entries.size() == 1);
    CHECK(read->entries[0].payload == "r" + std::to_string(p));
  }
}

TEST_CASE("a restart opens only the partitions whose files changed since their last clean close") {
  StoreFixture f;
  Policy policy;
  policy.partitions = 4;
  auto s = f.create("few", policy);
  for (int32_t p = 0; p < 4; ++p) REQUIRE(append_and_wait(*s->partition(PartitionId(p)), one_batch("a")).ok());
  s.reset();
  f.reopen();
  // Every partition closed cleanly: none opens, and each answers from its marker's summary.
  CHECK(f.store->open_partitions().open_files() == 0);
  auto again = f.store->find("few");
  REQUIRE(again.ok());
  for (int32_t p = 0; p < 4; ++p) CHECK((*again)->partition(PartitionId(p))->bounds() == Bounds{Offset(0), Offset(1)});
  CHECK(f.store->open_partitions().open_files() == 0);
  // Partition 2 is written and then left as a crash leaves it; the others are only read.
  REQUIRE(append_and_wait(*(*again)->partition(PartitionId(2)), one_batch("b")).ok());
  CHECK((*again)->partition(PartitionId(1))->read(Offset(0), 10, 1 << 20)->entries.size() == 1);
  (*again)->partition(PartitionId(2))->close(PartitionLog::CloseMode::kAsIs);
  again->reset();
  f.reopen();
  CHECK(f.store->open_partitions().open_files() == 3);  // partition 2's one segment, recovered
  auto last = f.store->find("few");
  REQUIRE(last.ok());
  CHECK((*last)->partition(PartitionId(2))->bounds() == Bounds{Offset(0), Offset(2)});
  CHECK((*last)->partition(PartitionId(1))->bounds() == Bounds{Offset(0), Offset(1)});
}

}  // namespace
}  // namespace streamd
