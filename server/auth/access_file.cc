// The access file's grammar (docs/SECURITY.md §The access file), one statement per line:
//
//   token NAME sha256:HEX                          NAME's token, by its SHA-256 digest
//   scram NAME MECHANISM ITERATIONS SALT STORED SERVER   a SCRAM credential (base64 fields)
//   grant PRINCIPAL RIGHTS PATTERN [PATTERN...]    RIGHTS (read,write,admin or all) on the patterns
//   read|write|admin TOKEN                         the format from before digests: a token in clear
//                                                  with that access on every stream
//
// Words are separated by blanks; a word in double quotes may hold blanks (\" and \\ inside), for
// certificate subjects. A line whose first word starts with '#' is a comment.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "server/auth/access_table.h"
#include "server/auth/crypto.h"

namespace streamd::auth {
namespace {

constexpr size_t kMaxNameBytes = 200;

Status bad_line(std::string_view reason, size_t line = 0) {
  Fields fields{{"field", "auth.token_file"}, {"reason", std::string(reason)}};
  if (line > 0) fields["line"] = std::to_string(line);
  return Status::of(Code::kStreamMisconfigured, std::move(fields));
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// The words of one line; nullopt for an unterminated quote or a bad escape.
std::optional<std::vector<std::string>> split_words(std::string_view line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (true) {
    while (i < line.size() && is_blank(line[i])) ++i;
    if (i == line.size()) return words;
    std::string word;
    if (line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\') {
          if (i == line.size() || (line[i] != '"' && line[i] != '\\')) return std::nullopt;
          c = line[i++];
        }
        word += c;
      }
      if (!closed || (i < line.size() && !is_blank(line[i]))) return std::nullopt;
    } else {
      while (i < line.size() && !is_blank(line[i])) word += line[i++];
    }
    words.push_back(std::move(word));
  }
}

bool principal_name_ok(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameBytes) return false;
  for (char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-' || c == '@';
    if (!ok) return false;
  }
  return true;
}

// A certificate subject in RFC 2253 form ("CN=ops,O=Example") always holds an '='; names never do.
bool is_subject(std::string_view principal) { return principal.find('=') != std::string_view::npos; }

std::optional<Rights> legacy_access(std::string_view word) {
  // Each level of the old format allowed what the one before it did, and more.
  if (word == "read") return Rights(Right::kRead);
  if (word == "write") return Rights(Right::kRead) | Right::kWrite;
  if (word == "admin") return Rights::all();
  return std::nullopt;
}

}  // namespace

class AccessFileParser {
 public:
  Result<AccessTable> parse(std::string_view text) {
    size_t line_no = 0;
    while (!text.empty()) {
      const size_t nl = text.find('\n');
      const std::string_view line = text.substr(0, nl);
      text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
      ++line_no;
      auto words = split_words(line);
      if (!words) return bad_line("an unterminated quote, or a backslash before anything but \" or \\", line_no);
      if (words->empty() || words->front().front() == '#') continue;
      if (Status s = statement(*words, line_no); !s.ok()) return s;
    }
    // Grants come in any order: each must name a principal defined somewhere in the file.
    for (const auto& [name, line] : granted_) {
      const PrincipalEntry* e = table_.find(name);
      if (!is_subject(name) && (e == nullptr || (e->token_digest.empty() && e->scram.empty()))) {
        return bad_line("the grant names \"" + name +
                            "\", which no token or scram line defines (a certificate subject holds an '=')",
                        line);
      }
    }
    if (table_.entries_.empty()) return bad_line("the file holds no principal; every connection would be refused");
    return std::move(table_);
  }

 private:
  Status statement(const std::vector<std::string>& w, size_t line) {
    const std::string& kind = w[0];
    if (kind == "token") return token(w, line);
    if (kind == "scram") return scram(w, line);
    if (kind == "grant") return grant(w, line);
    if (auto access = legacy_access(kind)) return legacy(w, *access, line);
    return bad_line("expected token, scram or grant (or read, write or admin before a token in clear)", line);
  }

  Status token(const std::vector<std::string>& w, size_t line) {
    if (w.size() != 3) return bad_line("expected: token NAME sha256:HEX", line);
    if (!principal_name_ok(w[1])) return bad_name(line);
    std::optional<std::string> digest;
    if (w[2].starts_with("sha256:")) digest = hex_decode(std::string_view(w[2]).substr(7));
    if (!digest || digest->size() != 32)
      return bad_line("expected the token's digest as sha256: and 64 hex digits", line);
    PrincipalEntry& e = entry(w[1]);
    if (!e.token_digest.empty()) return bad_line("a second token line for " + w[1], line);
    return set_token(e, std::move(*digest), line);
  }

  Status scram(const std::vector<std::string>& w, size_t line) {
    if (w.size() != 7)
      return bad_line("expected: scram NAME SCRAM-SHA-256|SCRAM-SHA-512 ITERATIONS SALT STORED_KEY SERVER_KEY", line);
    if (!principal_name_ok(w[1])) return bad_name(line);
    ScramCredential c;
    auto mechanism = parse_scram_mechanism(w[2]);
    if (!mechanism) return bad_line("the mechanism is neither SCRAM-SHA-256 nor SCRAM-SHA-512", line);
    c.mechanism = *mechanism;
    auto [end, ec] = std::from_chars(w[3].data(), w[3].data() + w[3].size(), c.iterations);
    if (ec != std::errc() || end != w[3].data() + w[3].size() || c.iterations < kMinScramIterations)
      return bad_line("the iteration count must be a number of at least 4096", line);
    auto salt = base64_decode(w[4]);
    auto stored = base64_decode(w[5]);
    auto server = base64_decode(w[6]);
    const size_t size = digest_size(scram_digest(c.mechanism));
    if (!salt || salt->empty() || !stored || stored->size() != size || !server || server->size() != size)
      return bad_line("the salt and both keys must be base64, the keys of the mechanism's digest size", line);
    c.salt = std::move(*salt);
    c.stored_key = std::move(*stored);
    c.server_key = std::move(*server);
    PrincipalEntry& e = entry(w[1]);
    for (const ScramCredential& known : e.scram) {
      if (known.mechanism == c.mechanism) return bad_line("a second " + w[2] + " line for " + w[1], line);
    }
    e.scram.push_back(std::move(c));
    return Status();
  }

  Status grant(const std::vector<std::string>& w, size_t line) {
    if (w.size() < 4) return bad_line("expected: grant PRINCIPAL RIGHTS PATTERN [PATTERN...]", line);
    if (!is_subject(w[1]) && !principal_name_ok(w[1])) return bad_name(line);
    auto rights = Rights::parse(w[2]);
    if (!rights) return bad_line("the rights must be read, write, admin, a comma list of them, or all", line);
    PrincipalEntry& e = entry(w[1]);
    for (size_t i = 3; i < w.size(); ++i) {
      auto pattern = StreamPattern::parse(w[i]);
      if (!pattern) {
        return bad_line("\"" + w[i] + "\" is no stream pattern (a name, a prefix ending in *, or *)", line);
      }
      e.grants.push_back(Grant{std::move(*pattern), *rights});
    }
    granted_.emplace_back(w[1], line);
    return Status();
  }

  Status legacy(const std::vector<std::string>& w, Rights access, size_t line) {
    if (w.size() == 1) return bad_line("no token after the access level", line);
    if (w.size() > 2) return bad_line("more than an access level and a token", line);
    // Named for its line: the token itself must never appear where principals' names do (errors, logs).
    PrincipalEntry& e = entry("line-" + std::to_string(line));
    e.grants.push_back(Grant{*StreamPattern::parse("*"), access});
    ++table_.clear_text_tokens_;
    return set_token(e, hash(Digest::kSha256, w[1]), line);
  }

  Status set_token(PrincipalEntry& e, std::string digest, size_t line) {
    if (table_.find_token_digest(digest) != nullptr) return bad_line("the token appears twice", line);
    e.token_digest = std::move(digest);
    return Status();
  }

  static Status bad_name(size_t line) {
    return bad_line("a principal is 1-200 characters of [A-Za-z0-9._@-], or a certificate subject", line);
  }

  PrincipalEntry& entry(const std::string& name) {
    for (PrincipalEntry& e : table_.entries_) {
      if (e.name == name) return e;
    }
    table_.entries_.push_back(PrincipalEntry{name, {}, {}, {}});
    return table_.entries_.back();
  }

  AccessTable table_;
  std::vector<std::pair<std::string, size_t>> granted_;
};

Result<AccessTable> AccessTable::parse(std::string_view text) { return AccessFileParser().parse(text); }

Result<AccessTable> AccessTable::load(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::of(Code::kStreamMisconfigured,
                      {{"field", "auth.token_file"}, {"path", path}, {"reason", std::strerror(errno)}});
  }
  struct stat st {};
  std::string text;
  Status status;
  if (::fstat(fd, &st) != 0) {
    status = bad_line(std::strerror(errno));
  } else if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    status = bad_line("group or others may read or write the file; chmod 600 it");
  } else {
    char buf[4096];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        status = bad_line(std::strerror(errno));
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

}  // namespace streamd::auth
