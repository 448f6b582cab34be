#include "fuzz/fuzz_support.h"

#include "server/storage/coding.h"
#include "server/storage/crc32c.h"
#include "server/storage/record_batch.h"

namespace streamd::fuzz {

using namespace batch_format;

size_t repair_batch_crcs(std::string& log) {
  size_t repaired = 0;
  size_t pos = 0;
  while (log.size() - pos >= kMinHeaderSize) {
    const uint32_t length = coding::get_fixed32(log.data() + pos + kLengthOffset);
    if (length < kMinHeaderSize - 4 || length > log.size() - pos - 4) break;
    char* batch = log.data() + pos;
    coding::put_fixed32(batch + kCrcOffset, crc32c_extend(0, batch + kCrcCoveredFrom, 4ull + length - kCrcCoveredFrom));
    pos += 4ull + length;
    ++repaired;
  }
  return repaired;
}

Split split_flags(const uint8_t* data, size_t size) {
  Split out;
  if (size == 0) return out;
  out.flags = data[0];
  out.rest.assign(reinterpret_cast<const char*>(data) + 1, size - 1);
  return out;
}

}  // namespace streamd::fuzz
