// Access tokens in the format from before digests ("read|write|admin TOKEN") against the real daemon:
// such a file still loads (with a warning), Hello without a known token is UNAUTHENTICATED (exit 77),
// each access level is held to its operations on every stream (PERMISSION_DENIED, exit 77), a token
// file others can read stops start-up, SIGHUP reloads the file for new and already open connections
// alike, and `streamctl auth migrate` rewrites it as digests that the broker takes as before.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <thread>

#include "client/admin.h"
#include "tests/integration/streamctl_runner.h"
#include "tests/support/daemon_fixture.h"
#include "tests/support/temp_dir.h"

namespace streamd::testing {
namespace {

using namespace std::chrono_literals;

size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

void write_tokens(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
}

struct SecuredBroker {
  SecuredBroker() : daemon({"--auth.token-file", tokens.file("tokens")}) {
    write_tokens(tokens.file("tokens"), "admin root\nwrite producer\nread reader\n");
    REQUIRE(daemon.start());
  }
  ~SecuredBroker() { CHECK(daemon.stop() == 0); }
  CtlResult ctl(const std::string& token, std::vector<std::string> args, const std::string& input = "") {
    if (!token.empty()) args.insert(args.begin(), {"--token", token});
    return run_streamctl(daemon.port(), args, input);
  }
  TempDir tokens;
  DaemonProcess daemon;
};

TEST_CASE("a Hello without a known token is refused UNAUTHENTICATED, exit 77", "[auth]") {
  SecuredBroker b;
  for (const std::string token : {"", "guess", "roo", "root "}) {
    INFO("token '" << token << "'");
    CtlResult r = b.ctl(token, {"list"});
    CHECK(r.code == 77);
    CHECK(r.err.rfind("streamctl: UNAUTHENTICATED: ", 0) == 0);
  }
  // The token never reaches the log.
  CHECK(b.daemon.log().find("guess") == std::string::npos);
  CHECK(b.ctl("root", {"list"}).code == 0);
}

TEST_CASE("each access level does its own operations and is denied the rest, exit 77", "[auth]") {
  SecuredBroker b;
  CHECK(b.ctl("root", {"create", "orders", "--partitions", "2"}).code == 0);

  CtlResult denied = b.ctl("producer", {"create", "other"});
  CHECK(denied.code == 77);
  CHECK(denied.err.rfind("streamctl: PERMISSION_DENIED: ", 0) == 0);
  CHECK(denied.err.find("operation=create_stream") != std::string::npos);
  CHECK(denied.err.find("stream=other") != std::string::npos);
  CHECK(denied.err.find("right=admin") != std::string::npos);
  CHECK(denied.err.find("principal=line-2") != std::string::npos);
  CHECK(b.ctl("producer", {"produce", "orders"}, "one\ntwo\n").code == 0);

  CHECK(b.ctl("reader", {"produce", "orders"}, "three\n").code == 77);
  CHECK(b.ctl("reader", {"delete", "orders"}).code == 77);
  CHECK(b.ctl("reader", {"trim", "orders", "--partition", "0", "--before", "1"}).code == 77);
  CtlResult consumed = b.ctl("reader", {"consume", "orders", "--from", "earliest", "--group", "g"});
  CHECK(consumed.code == 0);
  CHECK(consumed.lines().size() == 2);
  CHECK(b.ctl("reader", {"describe", "orders"}).code == 0);

  CHECK(b.ctl("root", {"delete", "orders"}).code == 0);
  // Nothing a refused request asked for happened.
  CtlResult list = b.ctl("root", {"list", "--json"});
  CHECK(list.out.find("other") == std::string::npos);
}

TEST_CASE("a token file group or others can read stops start-up with exit 78", "[auth]") {
  TempDir tokens;
  const std::string path = tokens.file("tokens");
  std::ofstream(path) << "admin root\n";
  REQUIRE(::chmod(path.c_str(), 0644) == 0);
  DaemonProcess daemon({"--auth.token-file", path});
  CHECK_FALSE(daemon.start());
  CHECK(daemon.exit_code() == 78);
  CHECK(daemon.log().find("chmod 600") != std::string::npos);
}

TEST_CASE("SIGHUP reloads the tokens, a removed token stops working on open connections", "[auth]") {
  SecuredBroker b;
  client::ConnectionOptions options;
  options.broker = {"127.0.0.1", b.daemon.port()};
  options.request_timeout = 5s;
  options.token = "reader";
  client::Connection connection(options);
  client::Admin admin(connection);
  REQUIRE(admin.list_streams().ok());

  write_tokens(b.tokens.file("tokens"), "admin root\nread new-reader\n");
  b.daemon.signal(SIGHUP);
  // The reload runs on the loop; the new token is taken once it has.
  bool reloaded = false;
  for (int i = 0; i < 100 && !reloaded; ++i) {
    reloaded = b.ctl("new-reader", {"list"}).code == 0;
    if (!reloaded) std::this_thread::sleep_for(50ms);
  }
  REQUIRE(reloaded);
  auto refused = admin.list_streams();
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().name() == "UNAUTHENTICATED");
  CHECK(b.ctl("reader", {"list"}).code == 77);

  // A file broken by the edit keeps the tokens loaded before it.
  write_tokens(b.tokens.file("tokens"), "superuser root\n");
  b.daemon.signal(SIGHUP);
  std::this_thread::sleep_for(200ms);
  CHECK(b.ctl("new-reader", {"list"}).code == 0);
  CHECK(b.daemon.log().find("access file not reloaded") != std::string::npos);
}

TEST_CASE("a token file in clear loads with a warning, and auth migrate rewrites it as digests", "[auth]") {
  SecuredBroker b;
  CHECK(b.daemon.log().find("3 tokens are written in clear") != std::string::npos);
  CHECK(b.ctl("root", {"create", "orders"}).code == 0);

  const std::string path = b.tokens.file("tokens");
  CtlResult printed = run_streamctl(b.daemon.port(), {"auth", "migrate", path});
  REQUIRE(printed.code == 0);
  CHECK(printed.out.find("root") == std::string::npos);  // no token in clear is left
  CHECK(printed.out.find("token line-1 sha256:") != std::string::npos);
  CHECK(printed.out.find("grant line-1 all *") != std::string::npos);
  CHECK(printed.out.find("grant line-2 read,write *") != std::string::npos);
  CHECK(printed.out.find("grant line-3 read *") != std::string::npos);

  CtlResult migrated = run_streamctl(b.daemon.port(), {"auth", "migrate", path, "--in-place"});
  REQUIRE(migrated.code == 0);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  b.daemon.signal(SIGHUP);
  // Reloaded once the file has been loaded a second time, and without the warning this time; the same
  // tokens do what they did before.
  bool reloaded = false;
  for (int i = 0; i < 100 && !reloaded; ++i) {
    reloaded = occurrences(b.daemon.log(), "3 principals loaded from") == 2;
    if (!reloaded) std::this_thread::sleep_for(50ms);
  }
  REQUIRE(reloaded);
  CHECK(occurrences(b.daemon.log(), "written in clear") == 1);
  CHECK(b.ctl("producer", {"produce", "orders"}, "one\n").code == 0);
  CHECK(b.ctl("reader", {"produce", "orders"}, "two\n").code == 77);
  CHECK(b.ctl("reader", {"consume", "orders"}).lines().size() == 1);
  CHECK(b.ctl("guess", {"list"}).code == 77);
}

}  // namespace
}  // namespace streamd::testing
