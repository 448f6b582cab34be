#include "server/net/auth.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace streamd {
namespace {

Status bad_file(std::string_view reason, size_t line = 0) {
  Fields fields{{"field", "auth.token_file"}, {"reason", std::string(reason)}};
  if (line > 0) fields["line"] = std::to_string(line);
  return Status::of(Code::kStreamMisconfigured, std::move(fields));
}

std::optional<Access> parse_access(std::string_view word) {
  if (word == "read") return Access::kRead;
  if (word == "write") return Access::kWrite;
  if (word == "admin") return Access::kAdmin;
  return std::nullopt;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Splits off the next whitespace-separated word of `rest`.
std::string_view next_word(std::string_view& rest) {
  size_t begin = 0;
  while (begin < rest.size() && is_space(rest[begin])) ++begin;
  size_t end = begin;
  while (end < rest.size() && !is_space(rest[end])) ++end;
  std::string_view word = rest.substr(begin, end - begin);
  rest.remove_prefix(end);
  return word;
}

// Equal in time that depends only on the lengths.
bool same_bytes(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

std::string_view access_name(Access access) {
  switch (access) {
    case Access::kRead:
      return "read";
    case Access::kWrite:
      return "write";
    case Access::kAdmin:
      return "admin";
  }
  return "read";
}

bool permits(Access access, v1::Request::BodyCase kind) {
  switch (kind) {
    case v1::Request::kHello:
    case v1::Request::kListStreams:
    case v1::Request::kDescribeStream:
    case v1::Request::kRead:
    case v1::Request::kBounds:
    case v1::Request::kPeek:
    case v1::Request::kCommit:
    case v1::Request::kCommitted:
    case v1::Request::kListGroups:
    case v1::Request::kOffsetAt:
    case v1::Request::kHealth:
      return true;
    case v1::Request::kAppend:
      return access >= Access::kWrite;
    case v1::Request::kCreateStream:
    case v1::Request::kDeleteStream:
    case v1::Request::kTrim:
    case v1::Request::kCompact:
      return access == Access::kAdmin;
    case v1::Request::BODY_NOT_SET:
      return false;
  }
  return false;
}

Result<TokenTable> TokenTable::parse(std::string_view text) {
  TokenTable table;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    std::string_view rest = line;
    std::string_view first = next_word(rest);
    if (first.empty() || first.front() == '#') continue;
    std::optional<Access> access = parse_access(first);
    if (!access) return bad_file("expected read, write or admin before the token", line_no);
    std::string_view token = next_word(rest);
    if (token.empty()) return bad_file("no token after the access level", line_no);
    if (!next_word(rest).empty()) return bad_file("more than an access level and a token", line_no);
    for (const auto& [known, _] : table.entries_) {
      if (known == token) return bad_file("the token appears twice", line_no);
    }
    table.entries_.emplace_back(std::string(token), *access);
  }
  if (table.entries_.empty()) return bad_file("the file holds no token; every connection would be refused");
  return table;
}

Result<TokenTable> TokenTable::load(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::of(Code::kStreamMisconfigured, {{"field", "auth.token_file"}, {"path", path},
                                                               {"reason", std::strerror(errno)}});
  struct stat st {};
  std::string text;
  Status status;
  if (::fstat(fd, &st) != 0) {
    status = bad_file(std::strerror(errno));
  } else if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    status = bad_file("group or others may read or write the file; chmod 600 it");
  } else {
    char buf[4096];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        status = bad_file(std::strerror(errno));
        break;
      }
      if (n == 0) break;
      text.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  if (!status.ok()) return status;
  return parse(text);
}

std::optional<Access> TokenTable::find(std::string_view token) const {
  std::optional<Access> found;
  for (const auto& [known, access] : entries_) {
    if (same_bytes(known, token)) found = access;
  }
  return found;
}

std::optional<Access> Authenticator::admit(std::string_view token) const {
  if (!table_) return Access::kAdmin;
  return table_->find(token);
}

void Authenticator::replace(std::shared_ptr<const TokenTable> table) {
  table_ = std::move(table);
  ++generation_;
}

}  // namespace streamd
