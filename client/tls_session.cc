#include "client/tls_session.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "client/poll_timeout.h"

namespace streamd::client {
namespace {

constexpr size_t kPlainChunk = 64 * 1024;

// OpenSSL's reason for the last failure, emptied from its queue.
std::string openssl_reason() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(e);
    if (!out.empty()) out += "; ";
    out += reason != nullptr ? reason : "unknown OpenSSL error";
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

Error misconfigured(const std::string& what, const std::string& field, const std::string& path) {
  return Error(ErrorCode::kStreamMisconfigured, what + ": " + openssl_reason(), {{"field", field}, {"path", path}});
}

bool is_ip_address(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 || ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// Why a handshake or a read failed, for someone who has to fix it.
std::string explain(SSL* ssl, int ssl_error, const std::string& name) {
  const unsigned long e = ERR_peek_last_error();
  const int reason = ERR_GET_REASON(e);
  if (ssl_error == SSL_ERROR_SYSCALL && e == 0) {
    ERR_clear_error();
    return errno != 0 ? std::strerror(errno) : "the broker closed the connection";
  }
  std::string out;
  const long verify = SSL_get_verify_result(ssl);
  if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED && verify != X509_V_OK) {
    out = std::string("the broker's certificate does not verify: ") + X509_verify_cert_error_string(verify);
    if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH) {
      out += " (it is not for " + name + "; --server-name names the one it is for)";
    } else if (verify == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY ||
               verify == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT || verify == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN) {
      out += " (--ca-file names the CA that signed it)";
    }
  } else if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG) {
    out = std::string("the broker does not answer in TLS (") + ERR_reason_error_string(e) +
          "): is this a plaintext port?";
  } else if (reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED) {
    out = "the broker requires a client certificate (--cert and --key)";
  } else if (reason == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE || reason == SSL_R_TLSV1_ALERT_UNKNOWN_CA ||
             reason == SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED || reason == SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN) {
    out = std::string("the broker refused the client certificate (") + ERR_reason_error_string(e) + ")";
  } else if (reason == SSL_R_UNSUPPORTED_PROTOCOL || reason == SSL_R_TLSV1_ALERT_PROTOCOL_VERSION) {
    out = "the broker and the client share no TLS version";
  } else {
    out = openssl_reason();
  }
  ERR_clear_error();
  return out;
}

// Blocking send of every byte; false with errno set.
bool send_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// What OpenSSL has made for the peer, taken out of `out`.
std::string drain(BIO* out) {
  std::string bytes(BIO_ctrl_pending(out), '\0');
  if (!bytes.empty()) BIO_read(out, bytes.data(), static_cast<int>(bytes.size()));
  return bytes;
}

}  // namespace

Result<std::shared_ptr<const TlsClientContext>> TlsClientContext::make(const TlsOptions& options) {
  if (options.cert_file.empty() != options.key_file.empty()) {
    return Error(ErrorCode::kStreamMisconfigured, "a client certificate needs both --cert and --key",
                 {{"field", options.cert_file.empty() ? "cert" : "key"}});
  }
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return Error(ErrorCode::kStreamMisconfigured, "TLS unavailable: " + openssl_reason());
  std::shared_ptr<const TlsClientContext> context(new TlsClientContext(ctx, options));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (options.ca_file.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx) != 1)
      return misconfigured("cannot load the system's CA certificates", "ca_file", "");
  } else if (SSL_CTX_load_verify_locations(ctx, options.ca_file.c_str(), nullptr) != 1) {
    return misconfigured("cannot use the CA file", "ca_file", options.ca_file);
  }
  if (!options.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) != 1)
      return misconfigured("cannot use the client certificate", "cert", options.cert_file);
    if (SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      // OpenSSL checks the key against the certificate loaded before it, and says "key values mismatch".
      const bool mismatch = ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
      return misconfigured(mismatch ? "the key does not match the client certificate" : "cannot use the client key",
                           "key", options.key_file);
    }
    if (SSL_CTX_check_private_key(ctx) != 1)
      return misconfigured("the key does not match the client certificate", "key", options.key_file);
  }
  return context;
}

TlsClientContext::~TlsClientContext() { SSL_CTX_free(ctx_); }

TlsSession::TlsSession(std::shared_ptr<const TlsClientContext> context, SSL* ssl, BIO* in, BIO* out)
    : context_(std::move(context)), ssl_(ssl), in_(in), out_(out) {}

TlsSession::~TlsSession() { SSL_free(ssl_); }  // and the BIOs it owns

Result<std::unique_ptr<TlsSession>> TlsSession::handshake(std::shared_ptr<const TlsClientContext> context, int fd,
                                                          const std::string& host, Clock::time_point deadline) {
  auto failed = [](std::string reason) {
    return Error(ErrorCode::kUnavailable, {{"reason", "TLS handshake failed: " + std::move(reason)}}).definite();
  };
  ERR_clear_error();
  SSL* ssl = SSL_new(context->native());
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  if (ssl == nullptr || in == nullptr || out == nullptr) {
    SSL_free(ssl);
    BIO_free(in);
    BIO_free(out);
    return failed(openssl_reason());
  }
  SSL_set_bio(ssl, in, out);
  std::unique_ptr<TlsSession> session(new TlsSession(std::move(context), ssl, in, out));
  const std::string& name = session->context_->options().server_name.empty()
                                ? host
                                : session->context_->options().server_name;
  if (is_ip_address(name)) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
  } else {
    // SSL_set_tlsext_host_name, without the macro's C cast.
    SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, const_cast<char*>(name.c_str()));
    SSL_set1_host(ssl, name.c_str());
  }
  SSL_set_connect_state(ssl);

  char buf[16 * 1024];
  while (true) {
    ERR_clear_error();
    const int r = SSL_do_handshake(ssl);
    const int ssl_error = r == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl, r);
    // Whatever OpenSSL made goes out first, a failure's alert included.
    const std::string bytes = drain(out);
    if (!send_all(fd, bytes.data(), bytes.size()) && ssl_error == SSL_ERROR_NONE)
      return failed(std::strerror(errno));
    if (ssl_error == SSL_ERROR_NONE) return session;
    if (ssl_error != SSL_ERROR_WANT_READ) return failed(explain(ssl, ssl_error, name));
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, poll_timeout_until(deadline));
    if (ready == 0) return failed("no answer from the broker before the deadline");
    if (ready < 0) return failed(std::strerror(errno));
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) return failed("the broker closed the connection (is this a TLS port?)");
    if (n < 0) {
      if (errno == EINTR) continue;
      return failed(std::strerror(errno));
    }
    BIO_write(in, buf, static_cast<int>(n));
  }
}

bool TlsSession::seal(std::span<const iovec> plaintext, std::string* ciphertext) {
  std::lock_guard lock(mutex_);
  std::string_view bytes;
  if (plaintext.size() == 1) {
    bytes = {static_cast<const char*>(plaintext.front().iov_base), plaintext.front().iov_len};
  } else {
    plain_.clear();
    for (const iovec& piece : plaintext) plain_.append(static_cast<const char*>(piece.iov_base), piece.iov_len);
    bytes = plain_;
  }
  ERR_clear_error();
  while (!bytes.empty()) {
    const int n = SSL_write(ssl_, bytes.data(), static_cast<int>(std::min<size_t>(bytes.size(), INT_MAX)));
    if (n <= 0) {
      reason_ = explain(ssl_, SSL_get_error(ssl_, n), {});
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  // All of it: records an open() made (a KeyUpdate's answer) wait here for the next write, in order.
  ciphertext->resize(BIO_ctrl_pending(out_));
  if (!ciphertext->empty()) BIO_read(out_, ciphertext->data(), static_cast<int>(ciphertext->size()));
  return true;
}

TlsSession::Opened TlsSession::open(const char* data, size_t n, FrameDecoder& decoder) {
  std::lock_guard lock(mutex_);
  if (n > 0) BIO_write(in_, data, static_cast<int>(n));
  while (true) {
    ERR_clear_error();
    const int r = SSL_read(ssl_, decoder.prepare(kPlainChunk), static_cast<int>(kPlainChunk));
    if (r > 0) {
      decoder.commit(static_cast<size_t>(r));
      continue;
    }
    const int ssl_error = SSL_get_error(ssl_, r);
    if (ssl_error == SSL_ERROR_WANT_READ) return Opened::kMore;
    if (ssl_error == SSL_ERROR_ZERO_RETURN) return Opened::kClosed;
    reason_ = explain(ssl_, ssl_error, {});
    return Opened::kFailed;
  }
}

}  // namespace streamd::client
