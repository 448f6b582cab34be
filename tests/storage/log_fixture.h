// Helpers shared by the segment, index and partition-log tests: batch factories and file damage.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "server/storage/batch_builder.h"
#include "server/storage/partition_log.h"
#include "server/storage/record_batch.h"

namespace streamd::testing {

// Small segments with dense indexes, so a few records roll segments and cross index entries.
inline PartitionOptions small_partition_options(uint64_t segment_bytes) {
  PartitionOptions o;
  o.segment_bytes = segment_bytes;
  o.index_interval_bytes = 128;
  o.preallocate_bytes = 4096;
  return o;
}

// The payload of record `offset` in the tests' logs: distinct per offset, so reads can be checked.
inline std::string payload_for(uint64_t offset) { return "payload-" + std::to_string(offset); }

// A batch of `count` records whose payloads are payload_for(first + i).
inline std::string make_batch(uint64_t first, uint32_t count, std::string key = {}) {
  BatchBuilder b;
  for (uint32_t i = 0; i < count; ++i) b.add(key, payload_for(first + i));
  return std::move(b).finish();
}

inline std::string read_file(const std::string& path) {
  std::string bytes(std::filesystem::file_size(path), '\0');
  std::ifstream in(path, std::ios::binary);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return bytes;
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline void flip_byte(const std::string& path, uint64_t pos) {
  std::string bytes = read_file(path);
  bytes[pos] = static_cast<char>(bytes[pos] ^ 0x5A);
  write_file(path, bytes);
}

inline void truncate_file(const std::string& path, uint64_t size) { std::filesystem::resize_file(path, size); }

// Every payload read from `from` to the end, in order, one record per read call's budget.
inline std::vector<std::pair<uint64_t, std::string>> read_all(const SegmentedLog& log, Offset from,
                                                              uint32_t per_read = 7) {
  std::vector<std::pair<uint64_t, std::string>> out;
  for (;;) {
    auto r = log.read(from, per_read, 1 << 20);
    if (!r.ok() || r->entries.empty()) break;
    for (const auto& e : r->entries) out.emplace_back(e.offset.value, std::string(e.payload));
    from = r->next_from;
  }
  return out;
}

}  // namespace streamd::testing
