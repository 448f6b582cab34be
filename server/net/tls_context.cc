#include "server/net/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <asio/ssl/context.hpp>

namespace streamd {
namespace {

// Session ids are scoped to this broker's listeners (required once client certificates are verified).
constexpr unsigned char kSessionContext[] = "streamd";

// OpenSSL's reasons for the last failure, oldest first, and the error queue emptied.
std::string openssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

Status bad(const std::string& key, const std::string& path, std::string reason) {
  Fields fields{{"field", key}, {"reason", std::move(reason)}};
  if (!path.empty()) fields["path"] = path;
  return Status::of(Code::kStreamMisconfigured, std::move(fields));
}

std::string name_of(const X509_NAME* name) {
  BIO* bio = BIO_new(BIO_s_mem());
  X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

std::string time_of(const ASN1_TIME* t) {
  BIO* bio = BIO_new(BIO_s_mem());
  ASN1_TIME_print(bio, t);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

}  // namespace

Result<std::shared_ptr<TlsContext>> TlsContext::load(const TlsConfig& config) {
  std::shared_ptr<TlsContext> tls(new TlsContext(config));
  if (Status s = tls->build(); !s.ok()) return s;
  return tls;
}

Status TlsContext::reload() { return build(); }

Status TlsContext::build() {
  ERR_clear_error();
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  SSL_CTX* native = ctx->native_handle();
  const int min_version = config_.min_version == "1.3" ? TLS1_3_VERSION : TLS1_2_VERSION;
  if (SSL_CTX_set_min_proto_version(native, min_version) != 1)
    return bad("tls.min_version", "", openssl_errors());
  // No compression (CRIME), no renegotiation (it is only ever an attack surface here), and the
  // server's order of suites, which puts the strong ones first.
  SSL_CTX_set_options(native, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_set_cipher_list(native, config_.ciphers.c_str()) != 1)
    return bad("tls.ciphers", "", "no cipher suite in the list is known: " + openssl_errors());
  if (SSL_CTX_use_certificate_chain_file(native, config_.cert_file.c_str()) != 1)
    return bad("tls.cert_file", config_.cert_file, openssl_errors());
  if (SSL_CTX_use_PrivateKey_file(native, config_.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
    return bad("tls.key_file", config_.key_file, openssl_errors());
  if (SSL_CTX_check_private_key(native) != 1)
    return bad("tls.key_file", config_.key_file, "the key does not match the certificate: " + openssl_errors());
  if (config_.client_auth != ClientAuth::kNone) {
    if (SSL_CTX_load_verify_locations(native, config_.client_ca_file.c_str(), nullptr) != 1)
      return bad("tls.client_ca_file", config_.client_ca_file, openssl_errors());
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(config_.client_ca_file.c_str());
    if (names == nullptr)
      return bad("tls.client_ca_file", config_.client_ca_file, "no CA certificate in the file: " + openssl_errors());
    SSL_CTX_set_client_CA_list(native, names);
    int mode = SSL_VERIFY_PEER;
    if (config_.client_auth == ClientAuth::kRequired) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_CTX_set_verify(native, mode, nullptr);
  }
  SSL_CTX_set_session_id_context(native, kSessionContext, sizeof kSessionContext - 1);

  const X509* cert = SSL_CTX_get0_certificate(native);
  description_ = "subject " + name_of(X509_get_subject_name(cert)) + ", issuer " +
                 name_of(X509_get_issuer_name(cert)) + ", valid until " + time_of(X509_get0_notAfter(cert));
  expired_ = X509_cmp_current_time(X509_get0_notAfter(cert)) < 0;
  current_ = std::move(ctx);
  return Status();
}

}  // namespace streamd
