#include "server/auth/rights.h"

namespace streamd::auth {

std::string_view right_name(Right right) {
  switch (right) {
    case Right::kRead:
      return "read";
    case Right::kWrite:
      return "write";
    case Right::kAdmin:
      return "admin";
  }
  return "read";
}

std::string Rights::str() const {
  if (*this == all()) return "all";
  std::string out;
  for (Right r : {Right::kRead, Right::kWrite, Right::kAdmin}) {
    if (!has(r)) continue;
    if (!out.empty()) out += ',';
    out += right_name(r);
  }
  return out.empty() ? "none" : out;
}

std::optional<Rights> Rights::parse(std::string_view text) {
  if (text == "all") return all();
  Rights rights;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view word = text.substr(0, comma);
    if (word == "read") {
      rights |= Right::kRead;
    } else if (word == "write") {
      rights |= Right::kWrite;
    } else if (word == "admin") {
      rights |= Right::kAdmin;
    } else {
      return std::nullopt;
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return std::nullopt;  // a trailing comma
  }
  if (rights.empty()) return std::nullopt;
  return rights;
}

}  // namespace streamd::auth
