#include "client/streamctl/auth_command.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include "client/streamctl/chosen_command.h"
#include "client/streamctl/commands.h"
#include "client/streamctl/json_writer.h"

namespace streamd::streamctl {

using client::Error;
using client::ErrorCode;
using client::Status;

namespace {

struct AuthArgs {
  std::string name;  // token
  bool from_stdin = false;
  bool scram = false;
  std::string file;  // migrate
  bool in_place = false;
};

constexpr int kScramIterations = 4096;  // RFC 7677's minimum, what the broker accepts at the least
constexpr size_t kTokenBytes = 32;

Error misconfigured(std::string message, std::string field) {
  return Error(ErrorCode::kStreamMisconfigured, std::move(message), {{"field", std::move(field)}});
}

std::string random_bytes(size_t n) {
  std::string out(n, '\0');
  RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n));
  return out;
}

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string digest(const EVP_MD* md, std::string_view data) {
  std::string out(static_cast<size_t>(EVP_MD_get_size(md)), '\0');
  EVP_Digest(data.data(), data.size(), reinterpret_cast<unsigned char*>(out.data()), nullptr, md, nullptr);
  return out;
}

std::string hmac(const EVP_MD* md, std::string_view key, std::string_view data) {
  std::string out(static_cast<size_t>(EVP_MD_get_size(md)), '\0');
  HMAC(md, key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()), data.size(),
       reinterpret_cast<unsigned char*>(out.data()), nullptr);
  return out;
}

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    out += kDigits[static_cast<unsigned char>(c) >> 4];
    out += kDigits[static_cast<unsigned char>(c) & 0xf];
  }
  return out;
}

std::string token_line(const std::string& name, std::string_view token) {
  return "token " + name + " sha256:" + hex(digest(EVP_sha256(), token));
}

// RFC 5802 §3: SaltedPassword = Hi(password, salt, i); StoredKey = H(HMAC(SaltedPassword, "Client
// Key")); ServerKey = HMAC(SaltedPassword, "Server Key").
std::string scram_line(const std::string& name, const char* mechanism, const EVP_MD* md, std::string_view password) {
  const std::string salt = random_bytes(16);
  std::string salted(static_cast<size_t>(EVP_MD_get_size(md)), '\0');
  PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                    reinterpret_cast<const unsigned char*>(salt.data()), static_cast<int>(salt.size()),
                    kScramIterations, md, static_cast<int>(salted.size()),
                    reinterpret_cast<unsigned char*>(salted.data()));
  const std::string stored = digest(md, hmac(md, salted, "Client Key"));
  const std::string server = hmac(md, salted, "Server Key");
  return "scram " + name + " " + mechanism + " " + std::to_string(kScramIterations) + " " + base64(salt) + " " +
         base64(stored) + " " + base64(server);
}

// The names the broker accepts for principals: 1-200 of [A-Za-z0-9._@-].
bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 200) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-' && c != '@') return false;
  }
  return true;
}

Status token_command(Context& ctx, const AuthArgs& args) {
  if (!valid_name(args.name)) {
    return misconfigured("a principal's name is 1-200 characters of [A-Za-z0-9._@-]", "name");
  }
  std::string token;
  if (args.from_stdin) {
    std::getline(ctx.in, token);
    if (!token.empty() && token.back() == '\r') token.pop_back();
    if (token.empty()) return misconfigured("--stdin read no token", "token");
  } else {
    // URL-safe base64 of 32 random bytes: 256 bits, and no character a shell or a URL would mangle.
    token = base64(random_bytes(kTokenBytes));
    for (char& c : token) c = c == '+' ? '-' : c == '/' ? '_' : c;
    while (!token.empty() && token.back() == '=') token.pop_back();
  }
  std::vector<std::string> lines{token_line(args.name, token)};
  if (args.scram) {
    lines.push_back(scram_line(args.name, "SCRAM-SHA-256", EVP_sha256(), token));
    lines.push_back(scram_line(args.name, "SCRAM-SHA-512", EVP_sha512(), token));
  }
  if (ctx.json) {
    JsonWriter w;
    w.begin_object().field("name", args.name).field("token", token).key("lines").begin_array();
    for (const std::string& line : lines) w.string(line);
    w.end_array().end_object();
    ctx.out << w.str() << '\n';
    return Status();
  }
  for (const std::string& line : lines) ctx.out << line << '\n';
  if (!args.from_stdin) {
    ctx.err << "streamctl: the token of " << args.name << " (give it to the client; the file keeps only its digest): "
            << token << '\n';
  }
  return Status();
}

// One line of the old format ("read|write|admin TOKEN") as the new lines, or nullopt for any other.
std::optional<std::vector<std::string>> migrated(const std::string& line, size_t line_no) {
  std::istringstream words(line);
  std::string access, token, extra;
  if (!(words >> access >> token) || (words >> extra)) return std::nullopt;
  const char* rights = access == "read" ? "read" : access == "write" ? "read,write" : access == "admin" ? "all" : nullptr;
  if (rights == nullptr) return std::nullopt;
  // Named as the broker names such a line's principal, so that logs and errors still match.
  const std::string name = "line-" + std::to_string(line_no);
  return std::vector<std::string>{"# was: " + access + " <token>", token_line(name, token),
                                  "grant " + name + " " + rights + " *"};
}

Status write_in_place(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".migrating";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  auto io_error = [&](const char* op) {
    return Error(ErrorCode::kStreamBackendFailed, std::string(op) + " failed: " + std::strerror(errno),
                 {{"path", tmp}});
  };
  if (fd < 0) return io_error("open");
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  if (!ok) return io_error("write");
  if (::rename(tmp.c_str(), path.c_str()) != 0) return io_error("rename");
  return Status();
}

Status migrate_command(Context& ctx, const AuthArgs& args) {
  std::ifstream in(args.file);
  if (!in) return misconfigured("cannot read " + args.file, "file");
  std::string text, line;
  size_t line_no = 0, changed = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (auto lines = migrated(line, line_no)) {
      for (const std::string& l : *lines) text += l + "\n";
      ++changed;
    } else {
      text += line + "\n";
    }
  }
  if (args.in_place) {
    if (Status s = write_in_place(args.file, text); !s.ok()) return s;
    ctx.err << "streamctl: " << changed << " tokens of " << args.file << " rewritten as digests; send the broker SIGHUP\n";
    return Status();
  }
  ctx.out << text;
  return Status();
}

}  // namespace

void add_auth_command(CLI::App& app, ChosenCommand& chosen) {
  auto args = std::make_shared<AuthArgs>();
  CLI::App* auth = app.add_subcommand("auth", "make lines of the broker's access file (no broker is asked)");
  auth->require_subcommand(1);
  CLI::App* token = auth->add_subcommand("token", "a token for a principal, as the access file keeps it");
  token->add_option("name", args->name, "the principal")->required();
  token->add_flag("--stdin", args->from_stdin,
                  "take the token from the first line of stdin instead of making one");
  token->add_flag("--scram", args->scram,
                  "also the SCRAM-SHA-256 and -512 credentials of it, for Kafka clients");
  token->footer("Example:\n  streamctl auth token billing --scram >> /etc/streamd/access");
  when_chosen(*token, chosen, [args](Context& ctx) { return token_command(ctx, *args); });
  CLI::App* migrate = auth->add_subcommand("migrate", "rewrite \"read|write|admin TOKEN\" lines as digests and grants");
  migrate->add_option("file", args->file, "the token file")->required();
  migrate->add_flag("--in-place", args->in_place, "replace the file (mode 600) instead of printing");
  migrate->footer("Example:\n  streamctl auth migrate /etc/streamd/tokens --in-place && systemctl reload streamd");
  when_chosen(*migrate, chosen, [args](Context& ctx) { return migrate_command(ctx, *args); });
}

}  // namespace streamd::streamctl
