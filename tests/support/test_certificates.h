// TestCertificates: a certificate authority and the certificates TLS tests need, made with the
// `openssl` command in a temp dir (P-256 keys): the server's, for localhost and 127.0.0.1, a client's
// (subject CN=alice,O=streamd tests), and on request others — expired, for another name, or signed by
// a CA nobody trusts. Not thread-safe.
#pragma once

#include <memory>
#include <string>

namespace streamd::testing {

class TempDir;

class TestCertificates {
 public:
  struct Pair {
    std::string cert;
    std::string key;
  };

  TestCertificates();
  ~TestCertificates();
  TestCertificates(const TestCertificates&) = delete;
  TestCertificates& operator=(const TestCertificates&) = delete;

  // False when openssl failed (it is not installed, say); error() then says what failed.
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  const std::string& ca() const { return ca_.cert; }
  const Pair& server() const { return server_; }
  const Pair& client() const { return client_; }

  // A certificate the CA signs: `subject` as openssl takes it ("/O=x/CN=bob", which RFC 2253 writes
  // "CN=bob,O=x"), `san` its
  // subjectAltName ("DNS:localhost,IP:127.0.0.1", or empty), valid `days` from now (negative: it
  // expired before it was made). Files named after `name`.
  Pair issue(const std::string& name, const std::string& subject, const std::string& san, int days);
  // The same from a second CA, made on first use, which nothing trusts.
  Pair issue_by_stranger(const std::string& name, const std::string& subject, const std::string& san);
  // The PEM of a CA nobody else uses, for a client that trusts the wrong one.
  std::string stranger_ca();

  std::string file(const std::string& name) const;

 private:
  bool run(const std::string& what, std::initializer_list<std::string> args);
  Pair issue_with(const Pair& ca, const std::string& name, const std::string& subject, const std::string& san,
                  int days);
  bool make_ca(const std::string& name, const std::string& subject, Pair& out);

  std::unique_ptr<TempDir> dir_;
  std::string error_;
  Pair ca_;
  Pair stranger_;
  Pair server_;
  Pair client_;
};

}  // namespace streamd::testing
