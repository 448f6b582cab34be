#include "server/storage/txn_marker.h"

#include "server/storage/batch_builder.h"
#include "server/storage/record_reader.h"

namespace streamd {
namespace {

constexpr size_t kKeyBytes = 4;    // version, type
constexpr size_t kValueBytes = 6;  // version, coordinator epoch

void put_be16(char* p, uint16_t v) {
  p[0] = static_cast<char>(v >> 8);
  p[1] = static_cast<char>(v & 0xff);
}
uint16_t get_be16(const char* p) {
  return static_cast<uint16_t>((static_cast<uint8_t>(p[0]) << 8) | static_cast<uint8_t>(p[1]));
}

}  // namespace

std::string build_txn_marker(int64_t id, int16_t epoch, MarkerType type, int32_t coordinator_epoch) {
  char key[kKeyBytes];
  put_be16(key, 0);
  put_be16(key + 2, static_cast<uint16_t>(type));
  char value[kValueBytes];
  put_be16(value, 0);
  const auto ce = static_cast<uint32_t>(coordinator_epoch);
  put_be16(value + 2, static_cast<uint16_t>(ce >> 16));
  put_be16(value + 4, static_cast<uint16_t>(ce & 0xffff));
  BatchBuilder builder(BatchOptions{false, true, true, {id, epoch, -1}});
  RecordView r;
  r.key = std::string_view(key, kKeyBytes);
  r.payload = std::string_view(value, kValueBytes);
  builder.add(r);
  return std::move(builder).finish();
}

std::optional<MarkerType> parse_txn_marker(std::string_view batch) {
  RecordReader records(batch);
  if (!records.header().control()) return std::nullopt;
  RecordView r;
  if (!records.next(r) || r.key.size() < kKeyBytes) return std::nullopt;
  // A newer key version keeps the type where version 0 has it (Kafka's ControlRecordType).
  if (static_cast<int16_t>(get_be16(r.key.data())) < 0) return std::nullopt;
  switch (get_be16(r.key.data() + 2)) {
    case 0:
      return MarkerType::kAbort;
    case 1:
      return MarkerType::kCommit;
    default:
      return std::nullopt;
  }
}

}  // namespace streamd
