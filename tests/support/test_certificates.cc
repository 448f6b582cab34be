#include "tests/support/test_certificates.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <vector>

#include "tests/support/temp_dir.h"

extern char** environ;

namespace streamd::testing {
namespace {

// Runs argv (openssl) with its output discarded; true when it exits 0.
bool run_quietly(const std::vector<std::string>& argv) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return false;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

TestCertificates::TestCertificates() : dir_(std::make_unique<TempDir>()) {
  if (!make_ca("ca", "/CN=streamd test CA", ca_)) return;
  server_ = issue("server", "/CN=localhost", "DNS:localhost,IP:127.0.0.1", 30);
  if (!ok()) return;
  client_ = issue("client", "/O=streamd tests/CN=alice", "", 30);
}

TestCertificates::~TestCertificates() = default;

std::string TestCertificates::file(const std::string& name) const { return dir_->file(name); }

bool TestCertificates::run(const std::string& what, std::initializer_list<std::string> args) {
  if (!ok()) return false;
  std::vector<std::string> argv{"openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  if (run_quietly(argv)) return true;
  error_ = "openssl failed to " + what + " (is openssl installed? scripts/setup installs it)";
  return false;
}

bool TestCertificates::make_ca(const std::string& name, const std::string& subject, Pair& out) {
  out = {file(name + ".crt"), file(name + ".key")};
  return run("make the CA " + name, {"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                     "-keyout", out.key, "-out", out.cert, "-days", "30", "-subj", subject});
}

TestCertificates::Pair TestCertificates::issue(const std::string& name, const std::string& subject,
                                               const std::string& san, int days) {
  return issue_with(ca_, name, subject, san, days);
}

TestCertificates::Pair TestCertificates::issue_by_stranger(const std::string& name, const std::string& subject,
                                                           const std::string& san) {
  stranger_ca();
  return issue_with(stranger_, name, subject, san, 30);
}

std::string TestCertificates::stranger_ca() {
  if (stranger_.cert.empty()) make_ca("stranger-ca", "/CN=stranger CA", stranger_);
  return stranger_.cert;
}

TestCertificates::Pair TestCertificates::issue_with(const Pair& ca, const std::string& name,
                                                    const std::string& subject, const std::string& san, int days) {
  Pair out{file(name + ".crt"), file(name + ".key")};
  const std::string csr = file(name + ".csr");
  const std::string ext = file(name + ".ext");
  std::ofstream(ext) << (san.empty() ? std::string("basicConstraints=CA:FALSE\n")
                                     : "basicConstraints=CA:FALSE\nsubjectAltName=" + san + "\n");
  run("make the key of " + name, {"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                                  out.key, "-out", csr, "-subj", subject});
  run("sign " + name, {"x509", "-req", "-in", csr, "-CA", ca.cert, "-CAkey", ca.key, "-CAcreateserial", "-out",
                       out.cert, "-days", std::to_string(days), "-extfile", ext});
  return out;
}

}  // namespace streamd::testing
