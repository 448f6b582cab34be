#include "server/net/http_message.h"

#include <cctype>
#include <charconv>

namespace streamd {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// RFC 9110 §5.6.2's tchar.
bool token_char(char c) {
  if (std::isalnum(static_cast<unsigned char>(c)) != 0) return true;
  for (char t : std::string_view("!#$%&'*+-.^_`|~")) {
    if (c == t) return true;
  }
  return false;
}

bool all_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!token_char(c)) return false;
  }
  return true;
}

// A value may hold visible characters, blanks and obs-text, never a control character.
bool valid_value(std::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) return false;
  }
  return true;
}

bool contains_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (same_header_name(trim(list.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

HeadParse refuse(int status, std::string problem) {
  HeadParse p;
  p.status = status;
  p.problem = std::move(problem);
  return p;
}

}  // namespace

bool same_header_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (same_header_name(n, name)) return std::string_view(v);
  }
  return std::nullopt;
}

HeadParse parse_head(std::string_view head) {
  const size_t eol = head.find("\r\n");
  const std::string_view line = head.substr(0, eol);
  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) return refuse(400, "bad request line");
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return refuse(400, "bad request line");
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!all_token(method) || target.front() != '/' || !valid_value(target) ||
      target.find(' ') != std::string_view::npos) {
    return refuse(400, "bad request line");
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return refuse(400, "bad request line");

  HeadParse parsed;
  HttpRequest request;
  request.method = std::string(method);
  const size_t question = target.find('?');
  request.path = std::string(target.substr(0, question));
  if (question != std::string_view::npos) request.query = std::string(target.substr(question + 1));
  bool close = version == "HTTP/1.0";
  bool saw_length = false;
  std::string_view rest = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2);
  while (!rest.empty()) {
    const size_t end = rest.find("\r\n");
    const std::string_view field = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 2);
    if (field.empty()) break;  // the blank line ending the head
    if (field.front() == ' ' || field.front() == '\t') return refuse(400, "obsolete header line folding");
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos || !all_token(field.substr(0, colon))) {
      return refuse(400, "malformed header line");
    }
    const std::string_view name = field.substr(0, colon);
    const std::string_view value = trim(field.substr(colon + 1));
    if (!valid_value(value)) return refuse(400, "a control character in header " + std::string(name));
    if (same_header_name(name, "Transfer-Encoding")) {
      return refuse(501, "Transfer-Encoding is not accepted on requests: send Content-Length");
    }
    if (same_header_name(name, "Content-Length")) {
      uint64_t n = 0;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (saw_length || value.empty() || ec != std::errc() || ptr != value.data() + value.size()) {
        return refuse(400, "a bad or repeated Content-Length");
      }
      saw_length = true;
      parsed.content_length = n;
    } else if (same_header_name(name, "Connection")) {
      if (contains_token(value, "close")) close = true;
      if (contains_token(value, "keep-alive")) close = false;
    } else if (same_header_name(name, "Authorization")) {
      if (value.size() > 7 && same_header_name(value.substr(0, 7), "Bearer ")) {
        request.bearer = std::string(trim(value.substr(7)));
      }
    }
    request.headers.emplace_back(std::string(name), std::string(value));
  }
  request.keep_alive = !close;
  parsed.request = std::move(request);
  return parsed;
}

std::optional<HttpRequest> parse_request_head(std::string_view head) { return parse_head(head).request; }

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 415:
      return "Unsupported Media Type";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

std::string format_http_response(const HttpResponse& response, bool include_body, bool keep_alive) {
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " +
                    std::string(reason_phrase(response.status)) + "\r\n";
  out += "Content-Type: " + response.content_type + "\r\n";
  if (response.stream) {
    out += "Transfer-Encoding: chunked\r\n";
  } else {
    out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  }
  bool cache_control = false;
  for (const auto& [name, value] : response.headers) {
    out += name + ": " + value + "\r\n";
    cache_control = cache_control || same_header_name(name, "Cache-Control");
  }
  if (!cache_control) out += "Cache-Control: no-store\r\n";
  out += "X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  if (include_body && !response.stream) out += response.body;
  return out;
}

std::string format_chunk(std::string_view bytes) {
  char size[20];
  const auto [end, ec] = std::to_chars(size, size + sizeof size, bytes.size(), 16);
  (void)ec;
  std::string out(size, end);
  out += "\r\n";
  out += bytes;
  out += "\r\n";
  if (bytes.empty()) return "0\r\n\r\n";
  return out;
}

}  // namespace streamd
