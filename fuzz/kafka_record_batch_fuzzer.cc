// The Kafka listener's RecordBatch decoder (server/kafka/record_batch.h) over hostile record sets, as
// a Produce request brings them: decode_record_set either refuses with an error and a reason and
// appends nothing, or appends records whose views lie inside the input or its own arena. Compressed
// sets are inflated within the bound given. Input: a flags byte (bit 0: repair each v2 batch's
// CRC-32C first, so the decoder is reached past the checksum), then the record set.
#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "server/kafka/codec.h"
#include "server/kafka/record_batch.h"
#include "server/storage/crc32c.h"

using namespace streamd;

namespace {

// Walks the set batch by batch by their big-endian length fields and rewrites each whole batch's CRC.
void repair_kafka_crcs(std::string& set) {
  using namespace kafka::batch_v2;
  size_t pos = 0;
  while (set.size() - pos >= kHeaderSize) {
    const uint32_t length = kafka::get_be32(set.data() + pos + kLength);
    if (length < kHeaderSize - kLogOverhead || length > set.size() - pos - kLogOverhead) break;
    const size_t total = kLogOverhead + length;
    kafka::put_be32(set.data() + pos + kCrc, crc32c_extend(0, set.data() + pos + kAttributes, total - kAttributes));
    pos += total;
  }
}

bool inside(std::string_view view, std::string_view whole, const std::deque<std::string>& arena) {
  if (view.empty()) return true;
  auto within = [&](std::string_view w) { return view.data() >= w.data() && view.data() + view.size() <= w.data() + w.size(); };
  if (within(whole)) return true;
  for (const std::string& a : arena) {
    if (within(a)) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Split in = fuzz::split_flags(data, size);
  if (in.flags & 1) repair_kafka_crcs(in.rest);
  std::vector<kafka::KafkaRecord> out;
  std::deque<std::string> arena;
  const kafka::DecodeResult result = kafka::decode_record_set(in.rest, 1 << 20, out, arena);
  if (result.error != kafka::Error::kNone) {
    if (!out.empty() || result.reason.empty()) std::abort();
    return 0;
  }
  for (const kafka::KafkaRecord& r : out) {
    if (r.key && !inside(*r.key, in.rest, arena)) std::abort();
    if (r.value && !inside(*r.value, in.rest, arena)) std::abort();
    for (const HeaderView& h : r.headers) {
      if (!inside(h.name, in.rest, arena) || !inside(h.value, in.rest, arena)) std::abort();
    }
  }
  return 0;
}
