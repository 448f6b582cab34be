#include "server/file_system_metrics.h"

#include <catch2/catch.hpp>

#include "server/storage/batch_builder.h"
#include "server/storage/record_batch.h"
#include "tests/support/temp_dir.h"

namespace streamd {
namespace {

std::string sealed_batch(int records, uint64_t base) {
  BatchBuilder builder;
  for (int i = 0; i < records; ++i) builder.add("k", "payload");
  std::string batch = std::move(builder).finish();
  seal_batch(batch, Offset(base), Timestamp(1));
  return batch;
}

TEST_CASE("partition-log syncs are counted with the batches each made durable", "[file_system_metrics]") {
  testing::TempDir dir;
  MetricsRegistry registry;
  auto fs = metered_file_system(posix_file_system(), registry);

  auto log = fs->open(dir.file("00000000000000000000.log"), OpenMode::kCreate);
  REQUIRE(log.ok());
  const std::string group = sealed_batch(3, 0) + sealed_batch(1, 3) + sealed_batch(2, 4);
  REQUIRE((*log)->write_at(FilePosition(0), group).ok());
  REQUIRE((*log)->sync().ok());
  REQUIRE((*log)->write_at(FilePosition(group.size()), sealed_batch(1, 6)).ok());
  REQUIRE((*log)->sync().ok());
  // Zero-filling ahead of the writer is no batch; a sync with nothing new observes no group.
  REQUIRE((*log)->write_at(FilePosition(1 << 20), std::string(4096, '\0')).ok());
  REQUIRE((*log)->sync().ok());

  auto other = fs->open(dir.file("offsets"), OpenMode::kCreate);
  REQUIRE(other.ok());
  REQUIRE((*other)->write_at(FilePosition(0), "x").ok());
  REQUIRE((*other)->sync().ok());  // not a partition log: not counted

  CHECK(registry.counter("streamd_log_syncs_total", "").value() == 3);
  CHECK(registry.counter("streamd_log_sync_failures_total", "").value() == 0);
  auto& batches = registry.histogram("streamd_group_commit_batches", "", {});
  CHECK(batches.count() == 2);
  CHECK(batches.sum() == 4);
  CHECK(registry.histogram("streamd_log_sync_duration_seconds", "", {}).count() == 3);
}

}  // namespace
}  // namespace streamd
