#include "client/error.h"

#include <algorithm>
#include <iterator>

namespace streamd::client {
namespace {

#define STREAMD_CLIENT_ERROR_ROW(e, name, code, http, exit, message) {ErrorCode::e, name, exit, message},
constexpr ErrorInfo kTable[] = {STREAMD_ERRORS(STREAMD_CLIENT_ERROR_ROW)};
#undef STREAMD_CLIENT_ERROR_ROW

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
  // Every enumerator is in the table, but an ErrorCode may hold any number (a cast): such an error
  // has no name and no default message, as one received with a code this client does not know, and
  // to_string() names it by its number.
  const ErrorInfo* info = error_info(code_);
  if (info == nullptr) return;
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
