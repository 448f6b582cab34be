#include "server/broker/routing.h"

#include <optional>

#include "proto/placement.h"

namespace streamd {

namespace {

Status check_sizes(const std::string& stream, const std::vector<RecordInput>& records, int64_t max_record_bytes) {
  if (records.empty()) {
    return Status(Code::kInvalidBatchSize, "An append needs at least one record", {{"stream", stream}, {"records", "0"}});
  }
  for (size_t i = 0; i < records.size(); ++i) {
    const RecordInput& r = records[i];
    const size_t size = record_size(r.key, r.payload, r.headers);
    if (size > static_cast<uint64_t>(max_record_bytes)) {
      return Status::of(Code::kRecordTooLarge, {{"stream", stream},
                                                {"index", std::to_string(i)},
                                                {"size", std::to_string(size)},
                                                {"limit", std::to_string(max_record_bytes)}});
    }
  }
  return Status();
}

}  // namespace

Result<PartitionId> route_batch(const std::string& stream, const std::vector<RecordInput>& records,
                                int32_t partitions, int64_t max_record_bytes, std::atomic<uint64_t>& rotation,
                                RotationShare share) {
  if (Status s = check_sizes(stream, records, max_record_bytes); !s.ok()) return s;
  std::optional<size_t> first_keyed;
  int32_t partition = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].key.empty()) continue;
    const int32_t p = placement::partition_of(records[i].key, partitions);
    if (!first_keyed) {
      first_keyed = i;
      partition = p;
    } else if (p != partition) {
      return Status::of(Code::kPartitionsMixed, {{"stream", stream},
                                                 {"index", std::to_string(i)},
                                                 {"record_partition", std::to_string(p)},
                                                 {"partition", std::to_string(partition)},
                                                 {"first_keyed_index", std::to_string(*first_keyed)},
                                                 {"partitions", std::to_string(partitions)}});
    }
  }
  if (!first_keyed) {
    share = share.over(partitions);
    // The share's partitions: index, index + count, … below `partitions`.
    const auto taken = static_cast<uint64_t>((partitions - share.index + share.count - 1) / share.count);
    const auto turn = static_cast<int32_t>(rotation.fetch_add(1, std::memory_order_relaxed) % taken);
    partition = share.index + turn * share.count;
  }
  return PartitionId(partition);
}

Status check_placed_batch(const std::string& stream, const std::vector<RecordInput>& records, PartitionId partition,
                          int32_t partitions, int64_t max_record_bytes, bool enforce_placement) {
  if (Status s = check_sizes(stream, records, max_record_bytes); !s.ok()) return s;
  if (partition.value < 0 || partition.value >= partitions) {
    return Status::of(Code::kUnknownPartition, {{"stream", stream},
                                                {"partition", std::to_string(partition.value)},
                                                {"partitions", std::to_string(partitions)}});
  }
  if (!enforce_placement) return Status();
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].key.empty()) continue;
    const int32_t p = placement::partition_of(records[i].key, partitions);
    if (p != partition.value) {
      return Status::of(Code::kPartitionsMixed, {{"stream", stream},
                                                 {"index", std::to_string(i)},
                                                 {"record_partition", std::to_string(p)},
                                                 {"partition", std::to_string(partition.value)},
                                                 {"partitions", std::to_string(partitions)}});
    }
  }
  return Status();
}

}  // namespace streamd
