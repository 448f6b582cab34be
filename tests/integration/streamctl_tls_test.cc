// TLS on the native listener against the real daemon, with certificates the tests make (openssl):
// streamctl and client/ move records over tls_listen beside the plaintext listener; a broker
// certificate from an unknown CA, an expired one or one for another name fails at once, saying which;
// plaintext to the TLS port and TLS to the plaintext port fail clearly while the broker goes on
// serving; TLS 1.1 is refused; client certificates are required, refused when unknown, and name the
// principal the access file grants to; SIGHUP serves a renewed certificate without dropping an open
// connection.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <functional>
#include <filesystem>
#include <fstream>
#include <thread>

#include "client/admin.h"
#include "client/connection.h"
#include "tests/integration/streamctl_runner.h"
#include "tests/support/daemon_fixture.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_certificates.h"

namespace streamd::testing {
namespace {

using namespace std::chrono_literals;

// stdout and stderr of a shell command, bounded in time.
std::string shell(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(("timeout 20 " + command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  ::pclose(pipe);
  return out;
}

bool eventually(const std::function<bool()>& condition) {
  for (int i = 0; i < 100; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return condition();
}

struct TlsBroker {
  explicit TlsBroker(const TestCertificates::Pair& served, std::vector<std::string> extra = {})
      : daemon([&] {
          std::vector<std::string> args{"--tls-listen", "127.0.0.1:0", "--tls.cert-file", served.cert,
                                        "--tls.key-file", served.key};
          args.insert(args.end(), extra.begin(), extra.end());
          return args;
        }()) {
    REQUIRE(daemon.start());
    REQUIRE(daemon.tls_port() != 0);
  }
  ~TlsBroker() { CHECK(daemon.stop() == 0); }

  // streamctl against the TLS port; `tls` are its TLS flags.
  CtlResult tls(const std::vector<std::string>& flags, std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), flags.begin(), flags.end());
    return run_streamctl(daemon.tls_port(), args, input, 30s);
  }

  DaemonProcess daemon;
};

// openssl is part of scripts/setup: without it the tests fail, saying so.
#define REQUIRE_CERTIFICATES(certs) \
  INFO((certs).error());            \
  REQUIRE((certs).ok())

TEST_CASE("streamctl and client/ move records over TLS, beside the plaintext listener", "[tls]") {
  TestCertificates certs;
  REQUIRE_CERTIFICATES(certs);
  TlsBroker b(certs.server());
  const std::vector<std::string> trust{"--ca-file", certs.ca()};
  CHECK(b.tls(trust, {"create", "orders", "--partitions", "2"}).code == 0);
  CHECK(b.tls(trust, {"produce", "orders", "--key", "k"}, "one\ntwo\nthree\n").code == 0);
  CtlResult consumed = b.tls(trust, {"consume", "orders"});
  CHECK(consumed.code == 0);
  CHECK(consumed.lines() == std::vector<std::string>{"one", "two", "three"});
  // The name streamctl connects to is checked too: "localhost" is in the certificate.
  CtlResult by_name = run_streamctl("localhost:" + std::to_string(b.daemon.tls_port()),
                                    {"--ca-file", certs.ca(), "list"}, "", 30s);
  INFO(by_name.err);
  CHECK(by_name.code == 0);
  CHECK(by_name.out.find("orders") != std::string::npos);
  // The plaintext listener serves the same streams.
  CHECK(run_streamctl(b.daemon.port(), {"consume", "orders"}).lines().size() == 3);

  // client/ directly, with a frame larger than one TLS record.
  client::ConnectionOptions options;
  options.broker = {"127.0.0.1", b.daemon.tls_port()};
  options.tls.enabled = true;
  options.tls.ca_file = certs.ca();
  client::Connection connection(options);
  client::Admin admin(connection);
  REQUIRE(admin.create_stream("big", {}).ok());
  const std::string payload(100'000, 'x');
  CHECK(b.tls(trust, {"produce", "big", "--value", payload}).code == 0);
  CtlResult big = b.tls(trust, {"consume", "big"});
  REQUIRE(big.lines().size() == 1);
  CHECK(big.lines()[0] == payload);
  auto streams = admin.list_streams();
  REQUIRE(streams.ok());
  CHECK(streams->size() == 2);
}

TEST_CASE("a broker certificate that does not verify fails at once, saying why", "[tls]") {
  TestCertificates certs;
  REQUIRE_CERTIFICATES(certs);
  const TestCertificates::Pair expired = certs.issue("expired", "/CN=localhost", "DNS:localhost,IP:127.0.0.1", -1);
  REQUIRE(certs.ok());

  TlsBroker b(certs.server());
  auto refused = [](const CtlResult& r, const std::string& reason) {
    INFO(r.err);
    CHECK(r.code == 69);
    CHECK(r.err.find("UNAVAILABLE") != std::string::npos);
    CHECK(r.err.find(reason) != std::string::npos);
  };
  const auto started = std::chrono::steady_clock::now();
  refused(b.tls({"--ca-file", certs.stranger_ca()}, {"list"}), "unable to get local issuer certificate");
  refused(b.tls({"--tls"}, {"list"}), "the broker's certificate does not verify");  // the system's CAs
  refused(b.tls({"--ca-file", certs.ca(), "--server-name", "broker.example.net"}, {"list"}), "hostname mismatch");
  // Definite: none of them waited out the request timeout.
  CHECK(std::chrono::steady_clock::now() - started < 5s);

  TlsBroker old(expired);
  CHECK(old.daemon.log().find("HAS EXPIRED") != std::string::npos);
  refused(old.tls({"--ca-file", certs.ca()}, {"list"}), "certificate has expired");
  CHECK(b.tls({"--ca-file", certs.ca()}, {"list"}).code == 0);
}

TEST_CASE("plaintext to the TLS port and TLS to the plaintext port fail clearly, and the broker serves on",
          "[tls]") {
  TestCertificates certs;
  REQUIRE_CERTIFICATES(certs);
  TlsBroker b(certs.server());
  const auto started = std::chrono::steady_clock::now();
  CtlResult plain_to_tls = b.tls({}, {"list"});
  INFO(plain_to_tls.err);
  CHECK(plain_to_tls.code == 69);
  CHECK(plain_to_tls.err.find("is this a TLS port (--tls)?") != std::string::npos);

  CtlResult tls_to_plain = run_streamctl(b.daemon.port(), {"--ca-file", certs.ca(), "list"});
  INFO(tls_to_plain.err);
  CHECK(tls_to_plain.code == 69);
  CHECK(tls_to_plain.err.find("does not answer in TLS") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - started < 5s);

  const std::string log = b.daemon.log();
  CHECK(log.find("a plaintext client on the TLS port?") != std::string::npos);
  CHECK(log.find("a TLS handshake on the plaintext listener") != std::string::npos);
  CHECK(b.tls({"--ca-file", certs.ca()}, {"create", "still"}).code == 0);
  CHECK(run_streamctl(b.daemon.port(), {"list"}).out.find("still") != std::string::npos);
}

TEST_CASE("TLS 1.0 and 1.1 are refused, 1.2 and 1.3 accepted", "[tls]") {
  TestCertificates certs;
  REQUIRE_CERTIFICATES(certs);
  TlsBroker b(certs.server());
  const std::string connect = "openssl s_client -connect 127.0.0.1:" + std::to_string(b.daemon.tls_port()) +
                              " -CAfile " + certs.ca() + " -servername localhost";
  // The client's own floor is lowered (SECLEVEL=0), so that what refuses TLS 1.1 is the broker.
  for (const char* old : {"-tls1", "-tls1_1"}) {
    INFO(old);
    const std::string out = shell(connect + " " + old + " -cipher DEFAULT@SECLEVEL=0 </dev/null");
    INFO(out);
    CHECK(out.find("Cipher is (NONE)") != std::string::npos);
    CHECK(out.find("alert protocol version") != std::string::npos);
  }
  CHECK(eventually([&] {
    return b.daemon.log().find("the client offers no TLS version the broker accepts") != std::string::npos;
  }));
  for (const auto& [flag, version] : {std::pair{"-tls1_2", "TLSv1.2"}, std::pair{"-tls1_3", "TLSv1.3"}}) {
    INFO(flag);
    const std::string out = shell(connect + " " + flag + " </dev/null");
    INFO(out);
    CHECK(out.find(std::string("New, ") + version + ", Cipher is ") != std::string::npos);
    CHECK(out.find("Verify return code: 0 (ok)") != std::string::npos);
  }
}

TEST_CASE("client certificates: required, refused when unknown, and the subject is the principal", "[tls]") {
  TestCertificates certs;
  REQUIRE_CERTIFICATES(certs);
  const TestCertificates::Pair stranger = certs.issue_by_stranger("mallory", "/CN=mallory", "");
  const TestCertificates::Pair bob = certs.issue("bob", "/O=streamd tests/CN=bob", "", 30);
  REQUIRE(certs.ok());
  TempDir dir;
  const std::string access = dir.file("access");
  std::ofstream(access) << "grant \"CN=alice,O=streamd tests\" read,write orders\n"
                           "grant \"CN=alice,O=streamd tests\" admin orders\n";
  REQUIRE(::chmod(access.c_str(), 0600) == 0);
  TlsBroker b(certs.server(), {"--tls.client-ca-file", certs.ca(), "--tls.client-auth", "required",
                               "--auth.token-file", access});
  const std::vector<std::string> alice{"--ca-file", certs.ca(), "--cert", certs.client().cert, "--key",
                                       certs.client().key};
  CHECK(b.tls(alice, {"create", "orders"}).code == 0);
  CHECK(b.tls(alice, {"produce", "orders"}, "a\n").code == 0);
  CHECK(b.tls(alice, {"consume", "orders"}).lines() == std::vector<std::string>{"a"});
  CtlResult other = b.tls(alice, {"create", "other"});
  INFO(other.err);
  CHECK(other.code == 77);
  CHECK(other.err.find("PERMISSION_DENIED") != std::string::npos);
  CHECK(other.err.find("principal=CN=alice,O=streamd tests") != std::string::npos);
  CHECK(other.err.find("right=admin") != std::string::npos);

  // A certificate the CA signed for a subject the file grants nothing may do nothing.
  CtlResult nobody = b.tls({"--ca-file", certs.ca(), "--cert", bob.cert, "--key", bob.key}, {"consume", "orders"});
  CHECK(nobody.code == 77);
  CHECK(nobody.err.find("principal=CN=bob,O=streamd tests") != std::string::npos);

  CtlResult without = b.tls({"--ca-file", certs.ca()}, {"list"});
  INFO(without.err);
  CHECK(without.code == 69);
  CHECK(without.err.find("requires a client certificate") != std::string::npos);
  CtlResult unknown = b.tls({"--ca-file", certs.ca(), "--cert", stranger.cert, "--key", stranger.key}, {"list"});
  INFO(unknown.err);
  CHECK(unknown.code == 69);
  CHECK(unknown.err.find("refused the client certificate") != std::string::npos);
  CHECK(eventually([&] {
    const std::string log = b.daemon.log();
    return log.find("sent no certificate") != std::string::npos &&
           log.find("the client's certificate does not verify") != std::string::npos;
  }));
  CtlResult mismatched = b.tls({"--ca-file", certs.ca(), "--cert", bob.cert, "--key", certs.client().key}, {"list"});
  CHECK(mismatched.code != 0);
  CHECK(mismatched.err.find("does not match") != std::string::npos);
  CHECK(b.tls(alice, {"list"}).code == 0);
}

TEST_CASE("SIGHUP serves a renewed certificate, and open TLS connections go on", "[tls]") {
  TestCertificates certs;
  REQUIRE_CERTIFICATES(certs);
  TempDir dir;
  const std::string cert = dir.file("broker.crt");
  const std::string key = dir.file("broker.key");
  std::filesystem::copy_file(certs.server().cert, cert);
  std::filesystem::copy_file(certs.server().key, key);
  TlsBroker b({cert, key});
  const std::vector<std::string> trust{"--ca-file", certs.ca()};
  REQUIRE(b.tls(trust, {"create", "events"}).code == 0);
  std::vector<std::string> follow{"--ca-file", certs.ca(), "consume", "events", "--follow"};
  StreamctlProcess consumer(b.daemon.tls_port(), follow);
  REQUIRE(b.tls(trust, {"produce", "events"}, "before\n").code == 0);
  REQUIRE(consumer.wait_for_lines(1, 10s).size() == 1);

  const TestCertificates::Pair renewed =
      certs.issue("renewed", "/O=renewed/CN=localhost", "DNS:localhost,IP:127.0.0.1", 30);
  REQUIRE(certs.ok());
  std::filesystem::copy_file(renewed.cert, cert, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(renewed.key, key, std::filesystem::copy_options::overwrite_existing);
  b.daemon.signal(SIGHUP);
  REQUIRE(eventually([&] { return b.daemon.log().find("SIGHUP: reloaded") != std::string::npos; }));
  CHECK(b.daemon.log().find("O=renewed") != std::string::npos);

  // The open connection still follows; new ones get the renewed certificate.
  REQUIRE(b.tls(trust, {"produce", "events"}, "after\n").code == 0);
  CHECK(consumer.wait_for_lines(2, 10s) == std::vector<std::string>{"before", "after"});
  const std::string served = shell("openssl s_client -connect 127.0.0.1:" + std::to_string(b.daemon.tls_port()) +
                                   " -CAfile " + certs.ca() + " </dev/null");
  CHECK(served.find("O = renewed") != std::string::npos);

  // A broken renewal (the key of another certificate) keeps the one served.
  std::filesystem::copy_file(certs.client().key, key, std::filesystem::copy_options::overwrite_existing);
  b.daemon.signal(SIGHUP);
  REQUIRE(eventually([&] { return b.daemon.log().find("TLS certificate not reloaded") != std::string::npos; }));
  CHECK(b.tls(trust, {"list"}).code == 0);
  consumer.signal(SIGINT);
  CHECK(consumer.wait().code == 0);
}

}  // namespace
}  // namespace streamd::testing
