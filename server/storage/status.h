// Status and Result<T>: errors as values for storage, broker and protocol code.
//
// A Status is either ok or one of the protocol's errors (proto/error_codes.h) with a human message and
// `fields`, string pairs that carry context such as sizes, offsets, a path or an errno. Fields never
// carry record bytes. Status is a small value type; it is safe to copy between threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "proto/error_codes.h"

namespace streamd {

enum class Code : uint32_t {
  kOk = 0,
#define STREAMD_ENUM(e, name, code, http, exit, msg) e = code,
  STREAMD_ERRORS(STREAMD_ENUM)
#undef STREAMD_ENUM
};

// Static facts about one error code, from the single table in proto/error_codes.h.
struct CodeInfo {
  Code code;
  std::string_view name;
  int http_status;
  int exit_code;
  std::string_view default_message;
};

// Facts of `code`; nullptr for a number that is not in the table (e.g. from a newer peer).
const CodeInfo* code_info(Code code);
// Looks a code up by its wire name ("OFFSET_AHEAD"); nullptr when unknown.
const CodeInfo* code_info(std::string_view name);

using Fields = std::map<std::string, std::string>;

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(Code code, std::string message, Fields fields = {})
      : code_(code), message_(std::move(message)), fields_(std::move(fields)) {}

  static Status ok_status() { return Status(); }
  // An error with the table's default message.
  static Status of(Code code, Fields fields = {});
  // STREAM_BACKEND_FAILED for a failed system call: fields op, path, errno and strerror.
  static Status io_error(std::string_view op, std::string_view path, int err);
  // A write, or a file's creation, the device had no room for (errno ENOSPC or EDQUOT). Unlike a
  // failed sync, which may have dropped pages the kernel held, it leaves what was synced before
  // intact: once the unfinished write is cut away, the file may be written again when space returns.
  // A sync that fails ENOSPC is a failed sync, not this.
  bool out_of_space() const;

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  uint32_t raw_code() const { return static_cast<uint32_t>(code_); }
  std::string_view name() const;
  int http_status() const;
  int exit_code() const;
  const std::string& message() const { return message_; }
  const Fields& fields() const { return fields_; }
  std::string field(const std::string& key) const;

  Status& with(std::string key, std::string value) &;
  Status&& with(std::string key, std::string value) &&;

  // "NAME: message (k=v, k=v)", the shape streamctl prints.
  std::string to_string() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
  Fields fields_;
};

// A value or the Status that explains its absence.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace streamd

// Returns early from the enclosing function with the error of an expression yielding a Status.
#define STREAMD_RETURN_IF_ERROR(expr)          \
  do {                                         \
    ::streamd::Status streamd_status_ = (expr); \
    if (!streamd_status_.ok()) return streamd_status_; \
  } while (0)
