// TLS for the client's connections (docs/CLIENT.md §TLS, docs/SECURITY.md): a TlsClientContext holds
// what every connection of a client trusts and presents — the CAs (tls.ca_file, else the system's),
// an optional client certificate for mTLS, TLS 1.2 at the least — and a TlsSession is one socket's
// TLS state over OpenSSL's memory BIOs, so that the Connection keeps its own socket handling: it
// writes ciphertext with its blocking writes and feeds what the reactor receives to open().
//
// The broker's certificate is always verified, against the CAs and against the name the client
// connects to (tls.server_name, else the broker's host); every failure is told in words — an expired
// certificate, a name mismatch, an unknown CA, a plaintext port — and is definite (retrying the same
// handshake gives the same answer).
//
// Thread-safety: a TlsClientContext is immutable once made and shared by any number of sessions. A
// TlsSession's seal() (the writer, one at a time) and open() (the reactor thread) may run at once:
// an internal mutex serialises their use of the SSL object, and neither holds it while blocking.
#pragma once

#include <sys/uio.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "client/error.h"
#include "client/frame_codec.h"

struct ssl_ctx_st;
struct ssl_st;
struct bio_st;

namespace streamd::client {

struct TlsOptions {
  bool enabled = false;
  std::string ca_file;      // PEM CAs the broker's certificate must chain to; empty: the system's
  std::string cert_file;    // PEM client certificate (mTLS), with key_file; empty: none
  std::string key_file;
  std::string server_name;  // the name the certificate must carry (and SNI); empty: the broker's host
};

class TlsClientContext {
 public:
  // STREAM_MISCONFIGURED naming the option (field ca_file, cert_file or key_file) when a file cannot
  // be used.
  static Result<std::shared_ptr<const TlsClientContext>> make(const TlsOptions& options);
  ~TlsClientContext();
  TlsClientContext(const TlsClientContext&) = delete;
  TlsClientContext& operator=(const TlsClientContext&) = delete;

  ssl_ctx_st* native() const { return ctx_; }
  const TlsOptions& options() const { return options_; }

 private:
  TlsClientContext(ssl_ctx_st* ctx, TlsOptions options) : ctx_(ctx), options_(std::move(options)) {}
  ssl_ctx_st* ctx_;
  const TlsOptions options_;
};

class TlsSession {
 public:
  using Clock = std::chrono::steady_clock;

  // Runs the client handshake on the connected, blocking socket `fd`, verifying the broker's
  // certificate for `host` (unless the context names a server_name). An error's reason says why the
  // handshake failed; the caller adds the broker's address.
  static Result<std::unique_ptr<TlsSession>> handshake(std::shared_ptr<const TlsClientContext> context, int fd,
                                                       const std::string& host, Clock::time_point deadline);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Encrypts the buffers laid end to end into `*ciphertext` (replacing what it held), ready to be
  // written in order before any later seal()'s. False when the session has failed.
  bool seal(std::span<const iovec> plaintext, std::string* ciphertext);

  enum class Opened { kMore, kClosed, kFailed };
  // Feeds `n` received bytes and appends the plaintext they complete to `decoder`. kClosed when the
  // broker said close_notify; kFailed (reason()) when the bytes are not a valid TLS stream or carry
  // an alert.
  Opened open(const char* data, size_t n, FrameDecoder& decoder);
  // Why open() or seal() failed, for the error.
  const std::string& reason() const { return reason_; }

 private:
  TlsSession(std::shared_ptr<const TlsClientContext> context, ssl_st* ssl, bio_st* in, bio_st* out);

  const std::shared_ptr<const TlsClientContext> context_;
  std::mutex mutex_;  // the SSL object and its BIOs
  ssl_st* ssl_;
  bio_st* in_;   // ciphertext received, read by OpenSSL
  bio_st* out_;  // ciphertext OpenSSL made, to be sent
  std::string plain_;  // seal()'s buffers gathered into one, so they go out in as few records as fit
  std::string reason_;
};

}  // namespace streamd::client
