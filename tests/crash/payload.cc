#include "tests/crash/payload.h"

#include <cstdio>

namespace streamd::crash {
namespace {

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

std::string header_of(const RecordId& id) {
  return "b=" + std::to_string(id.batch) + " i=" + std::to_string(id.index) + "/" + std::to_string(id.count) +
         " s=" + id.stream + "#" + std::to_string(id.incarnation) + " |";
}

std::string filler(const RecordId& id) {
  const uint64_t h = mix(id.batch * 1'000'003 + id.index);
  size_t length = h % 200;
  if (h % 23 == 0) length = (h >> 8) % (16 << 10);
  if (h % 997 == 0) length = 200 << 10;
  // Records at the stream's limit (1 MiB with key and header): groups that skip the journal and sync
  // their own segment, and segments that roll on one record.
  if (h % 4093 == 0) length = (1 << 20) - 4096;
  std::string out(length, '\0');
  uint64_t state = h;
  for (size_t i = 0; i < length; ++i) {
    if (i % 8 == 0) state = mix(state + i);
    out[i] = static_cast<char>('a' + (state >> ((i % 8) * 8)) % 26);
  }
  return out;
}

}  // namespace

std::string make_payload(const RecordId& id) { return header_of(id) + filler(id); }

std::string key_for(uint64_t batch) { return "k" + std::to_string(mix(batch) % 64); }

std::optional<RecordId> parse_payload(std::string_view payload) {
  const size_t bar = payload.find('|');
  if (bar == std::string_view::npos || bar > 200) return std::nullopt;
  const std::string head(payload.substr(0, bar));
  unsigned long long batch = 0, incarnation = 0;
  unsigned index = 0, count = 0;
  char stream[128] = {};
  if (std::sscanf(head.c_str(), "b=%llu i=%u/%u s=%127[^#]#%llu", &batch, &index, &count, stream, &incarnation) != 5) {
    return std::nullopt;
  }
  RecordId id{batch, index, count, stream, incarnation};
  if (payload != make_payload(id)) return std::nullopt;
  return id;
}

}  // namespace streamd::crash
