#include "server/http_api/api_call.h"

#include <charconv>

namespace streamd::http_api {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<std::string_view> ApiCall::arg(std::string_view name) const {
  auto it = query.find(name);
  if (it == query.end()) return std::nullopt;
  return std::string_view(it->second);
}

void ApiCall::json(std::string body, int status) const { reply(json_response(std::move(body), status)); }

void ApiCall::error(const Status& status) const { reply(error_response(status)); }

void ApiCall::denied(std::string_view operation, std::string_view stream, std::string_view right) const {
  error(Status::of(Code::kPermissionDenied, {{"operation", std::string(operation)},
                                             {"stream", std::string(stream)},
                                             {"right", std::string(right)},
                                             {"principal", principal.name()}}));
}

std::string error_json(const Status& status) {
  JsonWriter w;
  w.begin_object().key("error").begin_object();
  w.field("code", status.raw_code()).field("name", status.name()).field("message", status.message());
  w.key("fields").begin_object();
  for (const auto& [k, v] : status.fields()) w.field(k, v);
  w.end_object().end_object().end_object();
  return w.take();
}

HttpResponse error_response(const Status& status) {
  HttpResponse response = json_response(error_json(status), status.http_status());
  if (status.code() == Code::kUnauthenticated) {
    response.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"streamd\"");
  }
  return response;
}

HttpResponse json_response(std::string body, int status) {
  body += '\n';
  return HttpResponse{status, "application/json", std::move(body)};
}

std::optional<std::string> percent_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      const int hi = hex_value(text[i + 1]);
      const int lo = hex_value(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::optional<std::map<std::string, std::string, std::less<>>> parse_query(std::string_view query) {
  std::map<std::string, std::string, std::less<>> out;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query.remove_prefix(amp == std::string_view::npos ? query.size() : amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    auto name = percent_decode(pair.substr(0, eq), true);
    auto value = percent_decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), true);
    if (!name || !value) return std::nullopt;
    out.insert_or_assign(std::move(*name), std::move(*value));
  }
  return out;
}

Status bad_argument(std::string_view field, std::string message) {
  return Status(Code::kStreamMisconfigured, std::move(message), {{"field", std::string(field)}});
}

Result<uint64_t> parse_u64(std::string_view field, std::string_view text) {
  uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return bad_argument(field, std::string(field) + " must be a non-negative integer");
  }
  return v;
}

Result<int64_t> parse_i64(std::string_view field, std::string_view text) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return bad_argument(field, std::string(field) + " must be an integer");
  }
  return v;
}

}  // namespace streamd::http_api
