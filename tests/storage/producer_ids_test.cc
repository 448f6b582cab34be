// server/storage/producer_ids.cc: ids never handed out twice, across reopens and lost unsynced writes,
// and a damaged file refused rather than guessed past.
#include "server/storage/producer_ids.h"

#include <catch2/catch.hpp>

#include <set>

#include "tests/storage/log_fixture.h"
#include "tests/support/fault_injection_fs.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

TEST_CASE("producer ids: never handed out twice, across reopens and crashes") {
  testing::TempDir dir;
  testing::FaultInjectionFileSystem fs;
  const std::string path = dir.file("PRODUCER_IDS");
  std::set<int64_t> seen;
  for (int run = 0; run < 4; ++run) {
    auto ids = ProducerIds::open(fs, dir.path(), path);
    REQUIRE(ids.ok());
    // Some runs take more than a block, and every other one ends in a crash.
    const int take = run % 2 == 0 ? 5 : static_cast<int>(ProducerIds::kBlock) + 7;
    for (int i = 0; i < take; ++i) {
      auto id = (*ids)->next();
      REQUIRE(id.ok());
      CHECK(seen.insert(*id).second);
    }
    ids->reset();
    if (run % 2 == 1) REQUIRE(fs.drop_unsynced_data().ok());
  }
  CHECK(*seen.begin() == 0);
}

TEST_CASE("producer ids: a damaged file is refused, naming it") {
  testing::TempDir dir;
  const std::string path = dir.file("PRODUCER_IDS");
  {
    auto ids = ProducerIds::open(posix_file_system(), dir.path(), path);
    REQUIRE(ids.ok());
    REQUIRE((*ids)->next().ok());
  }
  testing::flip_byte(path, 3);
  auto reopened = ProducerIds::open(posix_file_system(), dir.path(), path);
  REQUIRE_FALSE(reopened.ok());
  CHECK(reopened.status().code() == Code::kStreamBackendFailed);
  CHECK(reopened.status().fields().at("path") == path);
  testing::write_file(path, "short");
  CHECK_FALSE(ProducerIds::open(posix_file_system(), dir.path(), path).ok());
}

}  // namespace
}  // namespace streamd
