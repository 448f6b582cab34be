// Access tokens against the real daemon: Hello without a known token is UNAUTHENTICATED (exit 77),
// each access level is held to its operations (PERMISSION_DENIED, exit 77), a token file others can
// read stops start-up, and SIGHUP reloads the file for new and already open connections alike.
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
  CHECK(denied.err.find("access=write") != std::string::npos);
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

TEST_CASE("SIGHUP reloads the tokens; a removed token stops working on open connections", "[auth]") {
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
  CHECK(b.daemon.log().find("access tokens not reloaded") != std::string::npos);
}

}  // namespace
}  // namespace streamd::testing
