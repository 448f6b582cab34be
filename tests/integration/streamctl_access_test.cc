// Per-stream access control against the real daemon, through streamctl: an access file of token
// digests (made by `streamctl auth token`) and grants on stream patterns; every operation allowed
// where a grant covers it and refused PERMISSION_DENIED (exit 77, fields stream and right) where
// none does; listings show only what the principal may read; no token reaches the log.
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>

#include "tests/integration/streamctl_runner.h"
#include "tests/support/daemon_fixture.h"
#include "tests/support/temp_dir.h"

namespace streamd::testing {
namespace {

// The "token NAME sha256:…" line streamctl makes for `token`.
std::string checked_token_line(const std::string& name, const std::string& token) {
  CtlResult r = run_streamctl(free_port(), {"auth", "token", name, "--stdin"}, token + "\n");
  REQUIRE(r.code == 0);
  REQUIRE(r.out.starts_with("token " + name + " sha256:"));
  return r.out;
}

struct GrantedBroker {
  // `engine`: storage.engine; the rights are checked above the engines, so both are held to them.
  explicit GrantedBroker(const std::string& engine = "file")
      : daemon({"--auth.token-file", dir.file("access"), "--auto-create-streams", "true", "--storage.engine", engine}) {
    const std::string text = checked_token_line("root", "t-root") + "grant root all *\n" +        //
                             checked_token_line("ingest", "t-ingest") + "grant ingest write orders.*\n" +  //
                             checked_token_line("reader", "t-reader") + "grant reader read orders.* audit\n" +
                             checked_token_line("ops", "t-ops") + "grant ops admin scratch\n";
    std::ofstream(dir.file("access")) << text;
    REQUIRE(::chmod(dir.file("access").c_str(), 0600) == 0);
    REQUIRE(daemon.start());
    REQUIRE(ctl("t-root", {"create", "orders.eu", "--partitions", "2"}).code == 0);
    REQUIRE(ctl("t-root", {"create", "audit"}).code == 0);
    REQUIRE(ctl("t-root", {"create", "payroll"}).code == 0);
    REQUIRE(ctl("t-root", {"produce", "orders.eu", "--key", "k"}, "a\nb\n").code == 0);
  }
  ~GrantedBroker() { CHECK(daemon.stop() == 0); }

  CtlResult ctl(const std::string& token, std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {"--token", token});
    return run_streamctl(daemon.port(), args, input);
  }
  // Refused PERMISSION_DENIED naming `stream` and `right`. A producer or consumer describes the stream
  // first, which takes any right: a principal with none on it is refused there, with right=any
  // (no_right below); one with another right is refused at the operation itself.
  void denied(const std::string& token, const std::vector<std::string>& args, const std::string& stream,
              const std::string& right, const std::string& input = "") {
    INFO(token << " " << args[0] << " " << stream);
    CtlResult r = ctl(token, args, input);
    INFO(r.err);
    CHECK(r.code == 77);
    CHECK(r.err.find("PERMISSION_DENIED") != std::string::npos);
    CHECK(r.err.find("stream=" + stream) != std::string::npos);
    CHECK(r.err.find("right=" + right) != std::string::npos);
    CHECK(r.err.find("operation=" + std::string(right == "any" ? "describe_stream" : "")) != std::string::npos);
  }
  void no_right(const std::string& token, const std::vector<std::string>& args, const std::string& stream,
                const std::string& input = "") {
    denied(token, args, stream, "any", input);
  }
  void allowed(const std::string& token, const std::vector<std::string>& args, const std::string& input = "") {
    INFO(token << " " << args[0]);
    CtlResult r = ctl(token, args, input);
    INFO(r.err);
    CHECK(r.code == 0);
  }

  TempDir dir;
  DaemonProcess daemon;
};

TEST_CASE("appends take write on the stream, auto-created ones included", "[access]") {
  GrantedBroker b;
  b.allowed("t-ingest", {"produce", "orders.eu"}, "c\n");
  b.allowed("t-ingest", {"produce", "orders.new"}, "auto-created\n");
  b.no_right("t-ingest", {"produce", "payroll"}, "payroll", "x\n");
  b.no_right("t-ingest", {"produce", "elsewhere"}, "elsewhere", "x\n");  // nor is its existence told
  b.denied("t-reader", {"produce", "orders.eu"}, "orders.eu", "write", "x\n");
  b.denied("t-ops", {"produce", "scratch"}, "scratch", "write", "x\n");
  // Nothing a refused append asked for happened.
  CHECK(b.ctl("t-root", {"list"}).out.find("elsewhere") == std::string::npos);
}

TEST_CASE("the memory engine is held to the same rights", "[access]") {
  GrantedBroker b("memory");
  b.allowed("t-ingest", {"produce", "orders.eu"}, "c\n");
  b.denied("t-reader", {"produce", "orders.eu"}, "orders.eu", "write", "x\n");
  b.no_right("t-ingest", {"produce", "payroll"}, "payroll", "x\n");
  b.denied("t-ingest", {"consume", "orders.eu"}, "orders.eu", "read");
  b.denied("t-reader", {"delete", "orders.eu"}, "orders.eu", "admin");
  std::vector<std::string> consumed = b.ctl("t-reader", {"consume", "orders.eu"}).lines();
  std::sort(consumed.begin(), consumed.end());  // two partitions: no order between them
  CHECK(consumed == std::vector<std::string>{"a", "b", "c"});
  CHECK(b.ctl("t-reader", {"list"}).out.find("payroll") == std::string::npos);
}

TEST_CASE("reads, bounds, peek, seek, committed offsets, groups and commits take read", "[access]") {
  GrantedBroker b;
  CtlResult consumed = b.ctl("t-reader", {"consume", "orders.eu", "--group", "g"});
  CHECK(consumed.code == 0);
  CHECK(consumed.lines().size() == 2);
  b.allowed("t-reader", {"bounds", "orders.eu"});
  b.allowed("t-reader", {"peek", "orders.eu", "--partition", "0"});
  b.allowed("t-reader", {"seek", "orders.eu", "--partition", "0", "--time=-1h"});
  b.allowed("t-reader", {"committed", "orders.eu", "--group", "g"});
  b.allowed("t-reader", {"groups", "orders.eu"});
  b.allowed("t-reader", {"commit", "orders.eu", "--group", "g", "--partition", "0", "--offset", "0"});
  b.allowed("t-reader", {"bounds", "audit"});

  b.denied("t-ingest", {"consume", "orders.eu"}, "orders.eu", "read");
  b.denied("t-ingest", {"bounds", "orders.eu", "--partition", "0"}, "orders.eu", "read");
  b.denied("t-ingest", {"peek", "orders.eu", "--partition", "0"}, "orders.eu", "read");
  b.denied("t-ingest", {"seek", "orders.eu", "--partition", "0", "--time=-1h"}, "orders.eu", "read");
  b.denied("t-ingest", {"committed", "orders.eu", "--group", "g", "--partition", "0"}, "orders.eu", "read");
  b.denied("t-ingest", {"groups", "orders.eu"}, "orders.eu", "read");
  b.denied("t-ingest", {"commit", "orders.eu", "--group", "g", "--partition", "0", "--offset", "1"}, "orders.eu",
           "read");
  b.no_right("t-reader", {"consume", "payroll"}, "payroll");
  b.denied("t-ops", {"bounds", "scratch", "--partition", "0"}, "scratch", "read");
}

TEST_CASE("create, delete, trim and compact take admin", "[access]") {
  GrantedBroker b;
  b.allowed("t-ops", {"create", "scratch"});
  b.allowed("t-ops", {"trim", "scratch", "--partition", "0", "--before", "0"});
  b.allowed("t-ops", {"compact", "scratch"});
  b.allowed("t-ops", {"delete", "scratch"});
  b.denied("t-ops", {"create", "other"}, "other", "admin");
  b.denied("t-ingest", {"create", "orders.x"}, "orders.x", "admin");
  b.denied("t-reader", {"trim", "orders.eu", "--partition", "0", "--before", "1"}, "orders.eu", "admin");
  b.denied("t-reader", {"compact", "orders.eu", "--partition", "0"}, "orders.eu", "admin");
  b.denied("t-ingest", {"delete", "orders.eu"}, "orders.eu", "admin");
  CHECK(b.ctl("t-root", {"describe", "orders.eu"}).code == 0);  // still there
}

TEST_CASE("describe takes any right, list shows what the principal may read, health needs none", "[access]") {
  GrantedBroker b;
  b.allowed("t-ingest", {"describe", "orders.eu"});
  b.allowed("t-reader", {"describe", "orders.eu"});
  b.no_right("t-ops", {"describe", "orders.eu"}, "orders.eu");
  b.no_right("t-reader", {"describe", "payroll"}, "payroll");

  CtlResult reader = b.ctl("t-reader", {"list"});
  REQUIRE(reader.code == 0);
  CHECK(reader.out.find("orders.eu") != std::string::npos);
  CHECK(reader.out.find("audit") != std::string::npos);
  CHECK(reader.out.find("payroll") == std::string::npos);
  CtlResult ingest = b.ctl("t-ingest", {"list"});
  REQUIRE(ingest.code == 0);
  CHECK(ingest.out.find("orders.eu") == std::string::npos);  // write is not read
  CtlResult root = b.ctl("t-root", {"list"});
  CHECK(root.out.find("payroll") != std::string::npos);
  b.allowed("t-ops", {"health"});
}

TEST_CASE("a transactional id takes write somewhere, the operator's txn commands admin everywhere", "[access]") {
  GrantedBroker b;
  CtlResult reader = b.ctl("t-reader", {"produce", "orders.eu", "--transactional-id", "r", "--value", "x"});
  CHECK(reader.code == 77);
  CHECK(reader.err.find("operation=init_producer") != std::string::npos);
  CHECK(reader.err.find("scope=some stream") != std::string::npos);
  CHECK(b.ctl("t-ingest", {"produce", "orders.eu", "--transactional-id", "i", "--value", "x"}).code == 0);
  // Writing somewhere is not writing here: the append itself takes write on its stream.
  CtlResult elsewhere = b.ctl("t-ingest", {"produce", "payroll", "--transactional-id", "i", "--value", "x"});
  CHECK(elsewhere.code == 77);
  for (const std::string token : {"t-ingest", "t-ops"}) {
    CtlResult listed = b.ctl(token, {"txn", "list"});
    CHECK(listed.code == 77);
    CHECK(listed.err.find("scope=every stream") != std::string::npos);
    CHECK(listed.err.find("right=admin") != std::string::npos);
    CHECK(b.ctl(token, {"txn", "abort", "i"}).code == 77);
  }
  CtlResult root = b.ctl("t-root", {"txn", "list"});
  CHECK(root.code == 0);
  REQUIRE(root.lines().size() == 2);
  CHECK(root.lines()[1].starts_with("i "));
}

TEST_CASE("unknown tokens are refused and logged once per connection, never the token", "[access]") {
  GrantedBroker b;
  CtlResult r = b.ctl("t-wrong-guess", {"list"});
  CHECK(r.code == 77);
  CHECK(r.err.find("UNAUTHENTICATED") != std::string::npos);
  const std::string log = b.daemon.log();
  for (const char* token : {"t-wrong-guess", "t-root", "t-ingest", "t-reader", "t-ops"}) {
    INFO(token);
    CHECK(log.find(token) == std::string::npos);
  }
  size_t refusals = 0;
  for (size_t at = log.find("UNAUTHENTICATED"); at != std::string::npos; at = log.find("UNAUTHENTICATED", at + 1))
    ++refusals;
  CHECK(refusals == 1);
  CHECK(log.find("from 127.0.0.1:") != std::string::npos);
}

}  // namespace
}  // namespace streamd::testing
