// The server's side of TLS on an accepted socket: the handshake, bounded in time, then a ByteStream
// that encrypts and decrypts through OpenSSL (Asio's ssl::stream). Internal to server/net and
// server/kafka (includes Asio's TCP header, not its SSL ones).
//
// A handshake that fails is told in words an operator can act on — a plaintext client on the TLS
// port, a TLS version below tls.min_version, a missing or unverifiable client certificate, a client
// that refused the broker's certificate — and the socket is closed.
#pragma once

#include <asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "server/net/byte_stream.h"

namespace streamd {

class TlsContext;

// How long a client gets from connecting to finishing its handshake.
inline constexpr std::chrono::seconds kTlsHandshakeTimeout{10};

// `stream` once the handshake succeeded, or null and the reason it failed. Runs on the loop.
using TlsAccepted = std::function<void(std::unique_ptr<ByteStream> stream, const std::string& error)>;

// Starts the server handshake with `tls`'s current context, which the stream keeps for its life.
void accept_tls(asio::ip::tcp::socket socket, const TlsContext& tls, TlsAccepted done);

// True when `bytes` (what a plaintext listener read first) start a TLS handshake record: a client
// that wanted the TLS port.
bool looks_like_tls_hello(std::string_view bytes);

}  // namespace streamd
