#include "server/storage/partition_summary.h"

#include "server/storage/coding.h"
#include "server/storage/crc32c.h"

namespace streamd {
namespace {

constexpr uint8_t kSummaryVersion = 2;
constexpr uint8_t kSummaryVersionWithoutProducers = 1;
constexpr size_t kSummaryHeaderSize = 1 + 8 + 8 + 8 + 4;
constexpr size_t kSegmentSize = 5 * 8;

void put64(std::string& out, uint64_t v) {
  char buf[8];
  coding::put_fixed64(buf, v);
  out.append(buf, 8);
}

}  // namespace

std::string encode_summary(const PartitionSummary& summary) {
  std::string out;
  out.reserve(kSummaryHeaderSize + summary.segments.size() * kSegmentSize + 4);
  out.push_back(static_cast<char>(kSummaryVersion));
  put64(out, summary.bounds.first.value);
  put64(out, summary.bounds.next.value);
  put64(out, summary.size_bytes);
  char count[4];
  coding::put_fixed32(count, static_cast<uint32_t>(summary.segments.size()));
  out.append(count, 4);
  for (const SegmentInfo& s : summary.segments) {
    put64(out, s.base.value);
    put64(out, s.end.value);
    put64(out, s.bytes);
    put64(out, static_cast<uint64_t>(s.min_appended_at.micros));
    put64(out, static_cast<uint64_t>(s.max_appended_at.micros));
  }
  char length[4];
  coding::put_fixed32(length, static_cast<uint32_t>(summary.producers.size()));
  out.append(length, 4);
  out += summary.producers;
  char crc[4];
  coding::put_fixed32(crc, crc32c(out));
  out.append(crc, 4);
  return out;
}

std::optional<PartitionSummary> decode_summary(std::string_view bytes) {
  if (bytes.size() < kSummaryHeaderSize + 4) return std::nullopt;
  const uint8_t version = static_cast<uint8_t>(bytes[0]);
  if (version != kSummaryVersion && version != kSummaryVersionWithoutProducers) return std::nullopt;
  const char* p = bytes.data();
  const uint64_t count = coding::get_fixed32(p + 25);
  const uint64_t segments_end = kSummaryHeaderSize + count * kSegmentSize;
  uint64_t producers_length = 0;
  if (version == kSummaryVersion) {
    if (count == 0 || bytes.size() < segments_end + 4 + 4) return std::nullopt;
    producers_length = coding::get_fixed32(p + segments_end);
  }
  const uint64_t producers_at = segments_end + (version == kSummaryVersion ? 4 : 0);
  if (count == 0 || bytes.size() != producers_at + producers_length + 4) return std::nullopt;
  const size_t body = bytes.size() - 4;
  if (coding::get_fixed32(p + body) != crc32c(bytes.substr(0, body))) return std::nullopt;
  PartitionSummary summary;
  summary.bounds = {Offset(coding::get_fixed64(p + 1)), Offset(coding::get_fixed64(p + 9))};
  summary.size_bytes = coding::get_fixed64(p + 17);
  const char* at = p + kSummaryHeaderSize;
  for (uint64_t i = 0; i < count; ++i, at += kSegmentSize) {
    SegmentInfo s;
    s.base = Offset(coding::get_fixed64(at));
    s.end = Offset(coding::get_fixed64(at + 8));
    s.bytes = coding::get_fixed64(at + 16);
    s.min_appended_at = Timestamp(static_cast<int64_t>(coding::get_fixed64(at + 24)));
    s.max_appended_at = Timestamp(static_cast<int64_t>(coding::get_fixed64(at + 32)));
    s.active = i + 1 == count;
    summary.segments.push_back(s);
  }
  summary.producers = std::string(bytes.substr(producers_at, producers_length));
  return summary;
}

}  // namespace streamd
