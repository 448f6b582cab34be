#include "server/http_api/gate.h"

#include <cctype>

namespace streamd::http_api {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && lower(s.substr(0, prefix.size())) == prefix;
}

}  // namespace

std::string host_name(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    return lower(close == std::string_view::npos ? host : host.substr(0, close + 1));
  }
  return lower(host.substr(0, host.find(':')));
}

bool is_loopback_name(std::string_view host) {
  if (host == "localhost" || host == "[::1]") return true;
  // 127.0.0.0/8 written as four decimal parts.
  if (!host.starts_with("127.")) return false;
  int parts = 0;
  size_t i = 0;
  while (i <= host.size()) {
    const size_t dot = host.find('.', i);
    const std::string_view part = host.substr(i, dot == std::string_view::npos ? std::string_view::npos : dot - i);
    if (part.empty() || part.size() > 3 || part.find_first_not_of("0123456789") != std::string_view::npos) return false;
    if (std::stoi(std::string(part)) > 255) return false;
    ++parts;
    if (dot == std::string_view::npos) break;
    i = dot + 1;
  }
  return parts == 4;
}

bool host_allowed(std::optional<std::string_view> host_header, const std::vector<std::string>& allowed, bool any) {
  if (!host_header || host_header->empty()) return false;
  const std::string host = host_name(*host_header);
  if (any || is_loopback_name(host)) return true;
  for (const std::string& name : allowed) {
    if (lower(name) == host) return true;
  }
  return false;
}

std::optional<std::string> refuse_change(const HttpRequest& request) {
  const auto host = request.header("Host");
  if (auto origin = request.header("Origin")) {
    const std::string expected = std::string(request.tls ? "https://" : "http://") + lower(host.value_or(""));
    if (lower(*origin) != expected) return "the request comes from another origin (" + std::string(*origin) + ")";
  }
  if (auto site = request.header("Sec-Fetch-Site")) {
    if (lower(*site) == "cross-site" || lower(*site) == "same-site") {
      return "the browser says the request comes from another site (Sec-Fetch-Site: " + std::string(*site) + ")";
    }
  }
  if (request.method == "POST") {
    const auto type = request.header("Content-Type");
    if (!type || !starts_with_ci(*type, "application/json")) {
      return "a POST must send Content-Type: application/json";
    }
  }
  return std::nullopt;
}

void add_security_headers(HttpResponse& response, bool tls) {
  response.headers.emplace_back("Content-Security-Policy", std::string(kContentSecurityPolicy));
  response.headers.emplace_back("X-Frame-Options", "DENY");
  response.headers.emplace_back("Cross-Origin-Opener-Policy", "same-origin");
  response.headers.emplace_back("Cross-Origin-Resource-Policy", "same-origin");
  if (tls) response.headers.emplace_back("Strict-Transport-Security", "max-age=31536000");
}

}  // namespace streamd::http_api
