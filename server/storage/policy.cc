#include "server/storage/policy.h"

#include <string>

namespace streamd {
namespace {

Status refuse(const char* field, std::string value, std::string why, Fields extra = {}) {
  Fields fields = std::move(extra);
  fields["field"] = field;
  fields["value"] = std::move(value);
  return Status(Code::kStreamMisconfigured, std::string(field) + ": " + why, std::move(fields));
}

std::string ms(std::chrono::milliseconds d) {
  return std::to_string(d.count()) + "ms";
}

}  // namespace

// Checks run field by field in declaration order, so a policy with several faults is always refused
// on the same field, whichever engine or client validates it.
Status Policy::validate() const {
  if (partitions < 0) return refuse("partitions", std::to_string(partitions), "must not be negative");
  if (max_record_bytes < 0) {
    return refuse("max_record_bytes", std::to_string(max_record_bytes), "must not be negative");
  }
  if (retain_for.count() < 0) return refuse("retain_for", ms(retain_for), "must not be negative");
  if (retain_bytes < 0) return refuse("retain_bytes", std::to_string(retain_bytes), "must not be negative");
  if (max_bytes < 0) return refuse("max_bytes", std::to_string(max_bytes), "must not be negative");
  const int64_t record_limit = normalized().max_record_bytes;
  if (max_bytes > 0 && max_bytes < record_limit) {
    return refuse("max_bytes", std::to_string(max_bytes), "below max_record_bytes, no record could ever fit",
                  {{"max_record_bytes", std::to_string(record_limit)}});
  }
  if (block_timeout.count() < 0) return refuse("block_timeout", ms(block_timeout), "must not be negative");
  if (block_timeout.count() > 0 && max_bytes == 0) {
    return refuse("block_timeout", ms(block_timeout), "without max_bytes there is nothing to wait for",
                  {{"max_bytes", "0"}});
  }
  if (segment_bytes < 0) {
    return refuse("segment_bytes", std::to_string(segment_bytes), "must not be negative");
  }
  if (compact_after.count() < 0) return refuse("compact_after", ms(compact_after), "must not be negative");
  if (static_cast<uint8_t>(timestamp_type) > static_cast<uint8_t>(TimestampType::kLogAppendTime)) {
    return refuse("timestamp_type", std::to_string(static_cast<int>(timestamp_type)),
                  "must be CreateTime or LogAppendTime");
  }
  return Status();
}

Policy Policy::normalized() const {
  Policy p = *this;
  if (p.partitions == 0) p.partitions = 1;
  if (p.max_record_bytes == 0) p.max_record_bytes = kDefaultMaxRecordBytes;
  if (p.segment_bytes == 0) p.segment_bytes = kDefaultSegmentBytes;
  if (p.timestamp_type == TimestampType::kDefault) p.timestamp_type = TimestampType::kCreateTime;
  return p;
}

const char* timestamp_type_name(TimestampType type) {
  return type == TimestampType::kLogAppendTime ? "LogAppendTime" : "CreateTime";
}

std::optional<TimestampType> parse_timestamp_type(std::string_view name) {
  if (name == "CreateTime") return TimestampType::kCreateTime;
  if (name == "LogAppendTime") return TimestampType::kLogAppendTime;
  return std::nullopt;
}

}  // namespace streamd
