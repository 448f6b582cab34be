#include "server/auth/stream_pattern.h"

namespace streamd::auth {
namespace {

bool name_chars(std::string_view s) {
  for (char c : s) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::optional<StreamPattern> StreamPattern::parse(std::string_view text) {
  if (text == "*") return StreamPattern(Kind::kAll, "");
  if (text.empty()) return std::nullopt;
  if (text.back() == '*') {
    text.remove_suffix(1);
    if (text.empty() || !name_chars(text)) return std::nullopt;
    return StreamPattern(Kind::kPrefix, std::string(text));
  }
  if (!name_chars(text)) return std::nullopt;
  return StreamPattern(Kind::kExact, std::string(text));
}

bool StreamPattern::matches(std::string_view stream) const {
  switch (kind_) {
    case Kind::kAll:
      return true;
    case Kind::kPrefix:
      return stream.starts_with(text_);
    case Kind::kExact:
      return stream == text_;
  }
  return false;
}

std::string StreamPattern::str() const {
  switch (kind_) {
    case Kind::kAll:
      return "*";
    case Kind::kPrefix:
      return text_ + "*";
    case Kind::kExact:
      return text_;
  }
  return text_;
}

}  // namespace streamd::auth
