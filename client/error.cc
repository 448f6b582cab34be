#include "client/error.h"

#include <algorithm>
#include <iterator>

namespace streamd::client {
namespace {

// SPEC.md §4, row for row. tests/client/error_test.cc compares it with the broker's error_codes.h.
constexpr ErrorInfo kTable[] = {
    {ErrorCode::kStreamMisconfigured, "STREAM_MISCONFIGURED", 78,
     "The stream policy is not one this engine can honour"},
    {ErrorCode::kRecordTooLarge, "RECORD_TOO_LARGE", 78,
     "The record exceeds the stream's configured maximum size"},
    {ErrorCode::kOffsetTrimmed, "OFFSET_TRIMMED", 65, "The requested records are no longer retained"},
    {ErrorCode::kOffsetAhead, "OFFSET_AHEAD", 65, "The requested offset is past the end of the stream"},
    {ErrorCode::kUnknownPartition, "UNKNOWN_PARTITION", 65, "The stream has no such partition"},
    {ErrorCode::kInvalidBatchSize, "INVALID_BATCH_SIZE", 78, "The batch size is not a positive number"},
    {ErrorCode::kStreamFull, "STREAM_FULL", 75, "The stream is full"},
    {ErrorCode::kUnknownGroup, "UNKNOWN_GROUP", 66, "The consumer group has no committed offset"},
    {ErrorCode::kPartitionsMixed, "PARTITIONS_MIXED", 65,
     "The batch's records belong to different partitions"},
    {ErrorCode::kStreamBackendFailed, "STREAM_BACKEND_FAILED", 74, "The stream's storage failed"},
    {ErrorCode::kStreamDirectoryUnusable, "STREAM_DIRECTORY_UNUSABLE", 78,
     "The stream directory cannot be used"},
    {ErrorCode::kSubscriberMisconfigured, "SUBSCRIBER_MISCONFIGURED", 78,
     "The stream subscriber configuration is not usable"},
    {ErrorCode::kStreamNotFound, "STREAM_NOT_FOUND", 66, "The stream does not exist"},
    {ErrorCode::kStreamExists, "STREAM_EXISTS", 73, "The stream already exists"},
    {ErrorCode::kUnauthenticated, "UNAUTHENTICATED", 77, "The request carries no valid credentials"},
    {ErrorCode::kPermissionDenied, "PERMISSION_DENIED", 77, "The credentials do not allow this request"},
    {ErrorCode::kProtocolError, "PROTOCOL_ERROR", 76, "The request does not follow the protocol"},
    {ErrorCode::kFrameTooLarge, "FRAME_TOO_LARGE", 76, "The frame exceeds the broker's frame limit"},
    {ErrorCode::kUnavailable, "UNAVAILABLE", 69, "The broker is not available"},
};

}  // namespace

const ErrorInfo* error_table_begin() {
  return std::begin(kTable);
}
const ErrorInfo* error_table_end() {
  return std::end(kTable);
}

const ErrorInfo* error_info(uint32_t code) {
  auto it = std::find_if(std::begin(kTable), std::end(kTable),
                         [code](const ErrorInfo& info) { return static_cast<uint32_t>(info.code) == code; });
  return it == std::end(kTable) ? nullptr : it;
}

const ErrorInfo* error_info(std::string_view name) {
  auto it = std::find_if(std::begin(kTable), std::end(kTable),
                         [name](const ErrorInfo& info) { return info.name == name; });
  return it == std::end(kTable) ? nullptr : it;
}

Error::Error(ErrorCode code, std::string message, Fields fields)
    : code_(static_cast<uint32_t>(code)), message_(std::move(message)), fields_(std::move(fields)) {
  const ErrorInfo* info = error_info(code_);
  name_ = std::string(info->name);
  if (message_.empty()) message_ = std::string(info->default_message);
}

std::string Error::field(const std::string& key) const {
  auto it = fields_.find(key);
  return it == fields_.end() ? std::string() : it->second;
}

Error& Error::with(std::string key, std::string value) {
  fields_[std::move(key)] = std::move(value);
  return *this;
}

int Error::exit_code() const {
  const ErrorInfo* info = error_info(code_);
  return info == nullptr ? kUnknownErrorExitCode : info->exit_code;
}

std::string Error::to_string() const {
  std::string out = name_.empty() ? "ERROR_" + std::to_string(code_) : name_;
  out += ": ";
  out += message_;
  if (!fields_.empty()) {
    out += " (";
    bool first = true;
    for (const auto& [key, value] : fields_) {
      if (!first) out += ", ";
      first = false;
      out += key;
      out += '=';
      out += value;
    }
    out += ')';
  }
  return out;
}

}  // namespace streamd::client
