#include "server/net/tls_stream.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <asio/buffer.hpp>
#include <asio/ssl/error.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>

#include "server/net/tcp_stream.h"
#include "server/net/tls_context.h"

namespace streamd {
namespace {

// How long close() waits for close_notify to go out before closing the socket anyway.
constexpr auto kCloseNotifyWait = std::chrono::milliseconds(200);

using SslStream = asio::ssl::stream<asio::ip::tcp::socket>;

// Shared by the stream and its handlers, which may outlive it (a close_notify still being sent).
struct State {
  State(asio::ip::tcp::socket socket, std::shared_ptr<asio::ssl::context> ctx)
      : context(std::move(ctx)), stream(std::move(socket), *context), timer(stream.get_executor()) {}

  void close_socket() {
    std::error_code ec;
    stream.next_layer().close(ec);
  }

  std::shared_ptr<asio::ssl::context> context;  // before `stream`, which it must outlive
  SslStream stream;
  asio::steady_timer timer;
  std::string peer;
  std::string subject;
  int in_flight = 0;  // reads and writes not yet completed
  bool closing = false;
};

std::string subject_of(SSL* ssl) {
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return {};
  BIO* bio = BIO_new(BIO_s_mem());
  X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

// The handshake's failure, said for an operator.
std::string explain(const std::error_code& ec, SSL* ssl) {
  if (ec == asio::error::operation_aborted) {
    return "no handshake within " + std::to_string(kTlsHandshakeTimeout.count()) + "s";
  }
  if (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated) {
    return "the client closed the connection during the handshake";
  }
  if (ec.category() != asio::error::get_ssl_category()) return ec.message();
  const int reason = ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
  switch (reason) {
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_HTTP_REQUEST:
    case SSL_R_HTTPS_PROXY_REQUEST:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
      return "not a TLS handshake (" + ec.message() + "): a plaintext client on the TLS port?";
    case SSL_R_UNSUPPORTED_PROTOCOL:
      return "the client offers no TLS version the broker accepts (tls.min_version)";
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
      return "the client sent no certificate, and tls.client_auth requires one";
    case SSL_R_CERTIFICATE_VERIFY_FAILED:
      return std::string("the client's certificate does not verify: ") +
             X509_verify_cert_error_string(SSL_get_verify_result(ssl));
    default:
      break;
  }
  const std::string message = ec.message();
  if (message.find("alert") != std::string::npos) return "the client refused the handshake (" + message + ")";
  return message;
}

class TlsStream final : public ByteStream {
 public:
  explicit TlsStream(std::shared_ptr<State> state) : state_(std::move(state)) {}
  ~TlsStream() override { close(); }

  void read_some(char* data, size_t size, Done done) override {
    ++state_->in_flight;
    state_->stream.async_read_some(asio::buffer(data, size),
                                   [state = state_, done = std::move(done)](const std::error_code& ec, size_t n) {
                                     --state->in_flight;
                                     // A client that closes without close_notify has closed all the
                                     // same: every protocol here frames its own messages, so a cut
                                     // one is caught there, as over plain TCP.
                                     done(ec == asio::ssl::error::stream_truncated ? asio::error::eof : ec, n);
                                   });
  }

  void write(const std::vector<std::string_view>& buffers, Done done) override {
    // One contiguous buffer: Asio's TLS stream writes one buffer per record, and many small answers
    // each in a record (and a send) of their own would cost far more than this copy.
    std::string_view out;
    if (buffers.size() == 1) {
      out = buffers.front();
    } else {
      coalesced_.clear();
      for (std::string_view b : buffers) coalesced_.append(b);
      out = coalesced_;
    }
    ++state_->in_flight;
    asio::async_write(state_->stream, asio::buffer(out.data(), out.size()),
                      [state = state_, done = std::move(done)](const std::error_code& ec, size_t n) {
                        --state->in_flight;
                        done(ec, n);
                      });
  }

  size_t write_now(std::string_view, std::error_code& ec) override {
    ec = asio::error::would_block;
    return 0;
  }

  void close() override {
    State& s = *state_;
    if (s.closing) return;
    s.closing = true;
    if (s.in_flight > 0) {
      // An operation still holds the TLS engine: close_notify cannot be interleaved with it.
      s.close_socket();
      return;
    }
    s.timer.expires_after(kCloseNotifyWait);
    s.timer.async_wait([state = state_](const std::error_code&) { state->close_socket(); });
    s.stream.async_shutdown([state = state_](const std::error_code&) {
      state->timer.cancel();
      state->close_socket();
    });
  }

  std::string peer() const override { return state_->peer; }
  std::string peer_subject() const override { return state_->subject; }

 private:
  std::shared_ptr<State> state_;
  std::string coalesced_;
};

}  // namespace

void accept_tls(asio::ip::tcp::socket socket, const TlsContext& tls, TlsAccepted done) {
  std::error_code ec;
  socket.set_option(asio::ip::tcp::no_delay(true), ec);
  const std::string peer = peer_of(socket);
  auto state = std::make_shared<State>(std::move(socket), tls.current());
  state->peer = peer;
  state->timer.expires_after(kTlsHandshakeTimeout);
  state->timer.async_wait([state](const std::error_code& wait_ec) {
    if (!wait_ec) state->close_socket();  // the handshake then fails with operation_aborted
  });
  state->stream.async_handshake(asio::ssl::stream_base::server,
                                [state, done = std::move(done)](const std::error_code& hs_ec) {
                                  state->timer.cancel();
                                  if (hs_ec) {
                                    const std::string why = explain(hs_ec, state->stream.native_handle());
                                    state->close_socket();
                                    done(nullptr, why);
                                    return;
                                  }
                                  state->subject = subject_of(state->stream.native_handle());
                                  done(std::make_unique<TlsStream>(state), std::string());
                                });
}

bool looks_like_tls_hello(std::string_view bytes) {
  // A handshake record (22) of TLS 1.0-1.3's record version 3.x.
  return bytes.size() >= 3 && bytes[0] == 0x16 && bytes[1] == 0x03 && static_cast<unsigned char>(bytes[2]) <= 0x04;
}

}  // namespace streamd
