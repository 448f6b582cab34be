#include "server/storage/stream_name.h"

#include <string>

namespace streamd {
namespace {

bool allowed(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

Status refuse(std::string_view name, std::string reason) {
  return Status(Code::kStreamMisconfigured, "The stream name is not valid: " + reason,
                {{"field", "name"}, {"reason", reason}, {"length", std::to_string(name.size())}});
}

}  // namespace

Status validate_stream_name(std::string_view name) {
  if (name.empty()) return refuse(name, "empty");
  if (name.size() > kMaxStreamNameBytes) {
    return refuse(name, "longer than " + std::to_string(kMaxStreamNameBytes) + " bytes");
  }
  if (name.front() == '.') return refuse(name, "starts with '.'");
  for (size_t i = 0; i < name.size(); ++i) {
    if (!allowed(name[i])) {
      return refuse(name, "byte outside [A-Za-z0-9._-]").with("index", std::to_string(i));
    }
  }
  return Status();
}

}  // namespace streamd
