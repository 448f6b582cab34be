// server/storage on the power-cut filesystem (powercut_fs.h): what the storage layer made durable before
// answering must survive a cut under the strict model, where a file's name is durable only once its
// directory is synced. One case per durability bug the crash harness found (docs/RELIABILITY.md).
// Skipped, saying why, where FUSE cannot be mounted.
#include <catch2/catch.hpp>

#include "server/storage/clock.h"
#include "server/storage/executor.h"
#include "server/storage/stream_store.h"
#include "tests/powercut/mounted.h"

namespace streamd {
namespace {

struct OnPowerCut : powercut::Mounted {
  ThreadPool pool{2};
  ManualClock clock;

  std::unique_ptr<StreamStore> open_store(const std::string& data_dir) {
    StreamStoreOptions options;
    options.partition.preallocate_bytes = 4096;
    auto store = StreamStore::open(posix_file_system(), mnt + "/" + data_dir, pool, clock, options);
    INFO(store.status().to_string());
    REQUIRE(store.ok());
    return std::move(store).value();
  }
};

TEST_CASE("a data directory made at the first start, and the streams created in it, survive a power cut",
          "[powercut][storage]") {
  OnPowerCut t;
  if (!t.start()) return;
  {
    auto store = t.open_store("var/lib/data");  // every component made by the broker
    REQUIRE(store->create("orders", Policy{}).ok());
    store->close();
  }
  t.cut_and_restore();
  auto store = t.open_store("var/lib/data");
  CHECK(store->find("orders").ok());
}

}  // namespace
}  // namespace streamd
