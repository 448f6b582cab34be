// Error, Status and Result<T>: the client's errors as values.
//
// An Error is one of the protocol's errors (docs/SEMANTICS.md §"Errors") as the broker (or the client
// itself) reports it: the numeric code, its NAME, a human message and `fields` (string pairs of
// context, never record bytes). Codes, names, exit codes and default messages come from the one
// table in proto/error_codes.h, which the broker expands too. All three types are plain values, safe
// to copy between threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "proto/error_codes.h"

namespace streamd::client {

#define STREAMD_CLIENT_ERROR_CODE(e, name, code, http, exit, message) e = code,
enum class ErrorCode : uint32_t { STREAMD_ERRORS(STREAMD_CLIENT_ERROR_CODE) };
#undef STREAMD_CLIENT_ERROR_CODE

// Static facts about one code of the table.
struct ErrorInfo {
  ErrorCode code;
  std::string_view name;
  int exit_code;
  std::string_view default_message;
};

// The whole table, in proto/error_codes.h's order.
const ErrorInfo* error_table_begin();
const ErrorInfo* error_table_end();
// nullptr for a number or a name that is not in the table (a newer peer's).
const ErrorInfo* error_info(uint32_t code);
const ErrorInfo* error_info(std::string_view name);

// The exit code streamctl uses for an error whose code it does not know (EX_SOFTWARE).
inline constexpr int kUnknownErrorExitCode = 70;

using Fields = std::map<std::string, std::string>;

class Error {
 public:
  // An error as received: any code, even one this client does not know.
  Error(uint32_t code, std::string name, std::string message, Fields fields = {})
      : code_(code), name_(std::move(name)), message_(std::move(message)), fields_(std::move(fields)) {}
  // One of the table's errors; an empty message takes the table's default.
  explicit Error(ErrorCode code, std::string message = {}, Fields fields = {});
  Error(ErrorCode code, Fields fields) : Error(code, std::string(), std::move(fields)) {}

  uint32_t code() const { return code_; }
  bool is(ErrorCode code) const { return code_ == static_cast<uint32_t>(code); }
  const std::string& name() const { return name_; }
  const std::string& message() const { return message_; }
  const Fields& fields() const { return fields_; }
  // The value of one field, empty when absent.
  std::string field(const std::string& key) const;
  Error& with(std::string key, std::string value);
  // True for an UNAVAILABLE worth retrying: the broker unreachable, restarting or not answering —
  // unless the client itself reported it as definite (definite()), as it does for a refused connection
  // under ConnectionOptions::fail_when_refused. The retrying layers (retry.h, Producer) stop at once
  // on anything else.
  bool retriable() const { return is(ErrorCode::kUnavailable) && !definite_; }
  Error& definite() {
    definite_ = true;
    return *this;
  }
  // The table's exit code for this error; kUnknownErrorExitCode for a code not in the table.
  int exit_code() const;
  // "NAME: message (k=v, k=v)", the line streamctl prints after "streamctl: ".
  std::string to_string() const;

 private:
  uint32_t code_;
  std::string name_;
  std::string message_;
  Fields fields_;
  bool definite_ = false;
};

// Ok, or the Error that explains why not.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return !error_.has_value(); }
  const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

// A value or the Error that explains its absence.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}      // NOLINT
  Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return state_.index() == 0; }
  const Error& error() const { return std::get<1>(state_); }
  Status status() const { return ok() ? Status() : Status(error()); }
  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }

 private:
  std::variant<T, Error> state_;
};

}  // namespace streamd::client
