#include "server/auth/sasl_plain.h"

namespace streamd::auth {

std::optional<PlainCredentials> parse_sasl_plain(std::string_view message) {
  const size_t first = message.find('\0');
  if (first == std::string_view::npos) return std::nullopt;
  const size_t second = message.find('\0', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  const std::string_view authzid = message.substr(0, first);
  PlainCredentials c{std::string(message.substr(first + 1, second - first - 1)),
                     std::string(message.substr(second + 1))};
  if (c.user.empty() || c.password.find('\0') != std::string::npos) return std::nullopt;
  if (!authzid.empty() && authzid != c.user) return std::nullopt;
  return c;
}

}  // namespace streamd::auth
