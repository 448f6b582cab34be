#include "tests/http_api/http_client.h"

#include <cctype>

namespace streamd::testing {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string HttpAnswer::header(const std::string& name) const {
  auto it = headers.find(lower(name));
  return it == headers.end() ? std::string() : it->second;
}

HttpAnswer HttpClient::request(const std::string& method, const std::string& path, const std::string& body,
                               const std::map<std::string, std::string>& headers) {
  std::string out = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) + "\r\n";
  std::map<std::string, std::string> all = defaults;
  for (const auto& [k, v] : headers) all[k] = v;
  for (const auto& [k, v] : all) out += k + ": " + v + "\r\n";
  if (!body.empty() || method == "POST") out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  out += "\r\n" + body;
  return raw(out);
}

HttpAnswer HttpClient::raw(const std::string& bytes, std::chrono::milliseconds timeout) {
  if (!socket_ || !socket_->connected()) {
    socket_ = std::make_unique<TestSocket>(port_);
    ++opened_;
  }
  if (!socket_->send_all(bytes)) {
    socket_.reset();
    return {};
  }
  HttpAnswer answer = read_answer(timeout);
  if (answer.status == 0 || answer.closed) socket_.reset();
  return answer;
}

HttpAnswer HttpClient::read_answer(std::chrono::milliseconds timeout) {
  HttpAnswer answer;
  std::string head;
  while (head.find("\r\n\r\n") == std::string::npos) {
    auto byte = socket_->read_exact(1, timeout);
    if (!byte) return answer;
    head += *byte;
    if (head.size() > 65536) return answer;
  }
  // "HTTP/1.1 200 OK"
  answer.status = std::stoi(head.substr(9, 3));
  size_t pos = head.find("\r\n") + 2;
  while (pos < head.size()) {
    const size_t end = head.find("\r\n", pos);
    if (end == pos) break;
    const std::string line = head.substr(pos, end - pos);
    const size_t colon = line.find(':');
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    answer.headers[lower(line.substr(0, colon))] = value;
    pos = end + 2;
  }
  answer.closed = lower(answer.header("Connection")) == "close";
  if (answer.status == 100) return read_answer(timeout);
  if (lower(answer.header("Transfer-Encoding")) == "chunked") {
    for (;;) {
      std::string size_line;
      while (size_line.size() < 2 || size_line.substr(size_line.size() - 2) != "\r\n") {
        auto byte = socket_->read_exact(1, timeout);
        if (!byte) return answer;
        size_line += *byte;
      }
      const size_t n = std::stoul(size_line, nullptr, 16);
      auto chunk = socket_->read_exact(n + 2, timeout);
      if (!chunk) return answer;
      if (n == 0) break;
      answer.body += chunk->substr(0, n);
    }
    return answer;
  }
  const std::string length = answer.header("Content-Length");
  const size_t n = length.empty() ? 0 : std::stoul(length);
  if (n > 0) {
    auto body = socket_->read_exact(n, timeout);
    if (body) answer.body = *body;
  }
  return answer;
}

}  // namespace streamd::testing
