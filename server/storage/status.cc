#include "server/storage/status.h"

#include <cerrno>
#include <cstring>

namespace streamd {
namespace {

constexpr CodeInfo kCodes[] = {
#define STREAMD_INFO(e, name, code, http, exit, msg) {Code::e, name, http, exit, msg},
    STREAMD_ERRORS(STREAMD_INFO)
#undef STREAMD_INFO
};

constexpr CodeInfo kOkInfo{Code::kOk, "OK", 200, 0, "ok"};

}  // namespace

const CodeInfo* code_info(Code code) {
  if (code == Code::kOk) return &kOkInfo;
  for (const auto& info : kCodes) {
    if (info.code == code) return &info;
  }
  return nullptr;
}

const CodeInfo* code_info(std::string_view name) {
  for (const auto& info : kCodes) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

Status Status::of(Code code, Fields fields) {
  const CodeInfo* info = code_info(code);
  return Status(code, info ? std::string(info->default_message) : "unknown error", std::move(fields));
}

Status Status::io_error(std::string_view op, std::string_view path, int err) {
  return Status(Code::kStreamBackendFailed, std::string(op) + " " + std::string(path) + ": " + std::strerror(err),
                {{"op", std::string(op)},
                 {"path", std::string(path)},
                 {"errno", std::to_string(err)},
                 {"error", std::strerror(err)}});
}

bool Status::out_of_space() const {
  const std::string err = field("errno");
  const std::string op = field("op");
  if (op == "fdatasync" || op == "fsync" || op == "msync") return false;
  return code_ == Code::kStreamBackendFailed && (err == std::to_string(ENOSPC) || err == std::to_string(EDQUOT));
}

std::string_view Status::name() const {
  const CodeInfo* info = code_info(code_);
  return info ? info->name : "UNKNOWN";
}

int Status::http_status() const {
  const CodeInfo* info = code_info(code_);
  return info ? info->http_status : 500;
}

int Status::exit_code() const {
  const CodeInfo* info = code_info(code_);
  return info ? info->exit_code : 1;
}

std::string Status::field(const std::string& key) const {
  auto it = fields_.find(key);
  return it == fields_.end() ? std::string() : it->second;
}

Status& Status::with(std::string key, std::string value) & {
  fields_[std::move(key)] = std::move(value);
  return *this;
}

Status&& Status::with(std::string key, std::string value) && {
  fields_[std::move(key)] = std::move(value);
  return std::move(*this);
}

std::string Status::to_string() const {
  std::string out(name());
  out += ": ";
  out += message_;
  if (!fields_.empty()) {
    out += " (";
    bool first = true;
    for (const auto& [k, v] : fields_) {
      if (!first) out += ", ";
      first = false;
      out += k + "=" + v;
    }
    out += ")";
  }
  return out;
}

}  // namespace streamd
