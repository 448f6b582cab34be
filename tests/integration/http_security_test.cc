// The HTTP listeners' security against the real daemon, through curl: /healthz, /readyz and
// /metrics over HTTPS (http_tls_listen) with the broker's certificate, and auth.http_require_token
// putting /metrics behind a bearer token of a principal granted read on * — 401 without one or with
// an unknown one, 403 for a principal without that grant — while the probes stay open.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "tests/integration/streamctl_runner.h"
#include "tests/support/daemon_fixture.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_certificates.h"

namespace streamd::testing {
namespace {

// `curl -s -o BODY -w '%{http_code}' ARGS`: the status code, then the body, bounded in time.
std::string curl(const std::string& args) {
  std::string out;
  FILE* pipe = ::popen(("timeout 20 curl -s -w '\\n%{http_code}' " + args + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  ::pclose(pipe);
  return out;
}

int status_of(const std::string& reply) {
  const size_t nl = reply.rfind('\n');
  return nl == std::string::npos ? -1 : std::atoi(reply.c_str() + nl + 1);
}

std::string token_line(const std::string& name, const std::string& token) {
  CtlResult r = run_streamctl(free_port(), {"auth", "token", name, "--stdin"}, token + "\n");
  REQUIRE(r.code == 0);
  return r.out;
}

TEST_CASE("HTTPS serves the probes and /metrics, a bearer token guards /metrics, not the probes", "[http][tls]") {
  TestCertificates certs;
  INFO(certs.error());
  REQUIRE(certs.ok());
  TempDir dir;
  const std::string access = dir.file("access");
  std::ofstream(access) << token_line("prometheus", "t-prom") << "grant prometheus read *\n"
                        << token_line("ingest", "t-ingest") << "grant ingest read,write orders.*\n";
  REQUIRE(::chmod(access.c_str(), 0600) == 0);
  DaemonProcess daemon({"--http-tls-listen", "127.0.0.1:0", "--tls.cert-file", certs.server().cert,
                        "--tls.key-file", certs.server().key, "--auth.token-file", access,
                        "--auth.http-require-token", "true"});
  REQUIRE(daemon.start());
  REQUIRE(daemon.http_tls_port() != 0);
  const std::string https = "--cacert " + certs.ca() + " https://localhost:" + std::to_string(daemon.http_tls_port());

  CHECK(status_of(curl(https + "/healthz")) == 200);
  CHECK(status_of(curl(https + "/readyz")) == 200);
  const std::string anonymous = curl("-D - " + https + "/metrics");
  CHECK(status_of(anonymous) == 401);
  CHECK(anonymous.find("WWW-Authenticate: Bearer") != std::string::npos);
  CHECK(status_of(curl("-H 'Authorization: Bearer t-guess' " + https + "/metrics")) == 401);
  CHECK(status_of(curl("-H 'Authorization: Bearer t-ingest' " + https + "/metrics")) == 403);
  const std::string metrics = curl("-H 'Authorization: Bearer t-prom' " + https + "/metrics");
  CHECK(status_of(metrics) == 200);
  CHECK(metrics.find("streamd_") != std::string::npos);
  // The plaintext listener asks the same.
  const std::string plain = "http://127.0.0.1:" + std::to_string(daemon.http_port());
  CHECK(status_of(curl(plain + "/healthz")) == 200);
  CHECK(status_of(curl(plain + "/metrics")) == 401);
  CHECK(status_of(curl("-H 'Authorization: Bearer t-prom' " + plain + "/metrics")) == 200);
  // A client that does not trust the CA, or speaks plaintext to the HTTPS port, gets nothing.
  CHECK(status_of(curl("https://localhost:" + std::to_string(daemon.http_tls_port()) + "/healthz")) == 0);
  CHECK(status_of(curl("http://127.0.0.1:" + std::to_string(daemon.http_tls_port()) + "/healthz")) == 0);
  CHECK(status_of(curl(https + "/healthz")) == 200);
  const std::string log = daemon.log();
  CHECK(log.find("t-prom") == std::string::npos);
  CHECK(log.find("t-guess") == std::string::npos);
  CHECK(daemon.stop() == 0);
}

}  // namespace
}  // namespace streamd::testing
