// Opening a listening TCP socket for a configured Endpoint (numeric address or host name), shared by
// the protocol, Kafka and HTTP listeners, and turning what it accepts into a connection's ByteStream.
// A failure to listen names the address and the reason (UNAVAILABLE: the daemon exits with 69). Call
// before or on the loop thread.
#pragma once

#include <asio/ip/tcp.hpp>
#include <functional>
#include <memory>
#include <string_view>

#include "server/config/config.h"
#include "server/net/byte_stream.h"
#include "server/storage/status.h"

namespace streamd {

class TlsContext;

Result<asio::ip::tcp::acceptor> open_acceptor(asio::io_context& io, const Endpoint& at);

// The accepted socket as a ByteStream: at once over plain TCP (`tls` null); over TLS once the
// handshake is done. A failed handshake is logged once, naming `listener` and the peer, and `ready`
// gets null. `ready` runs on the loop.
void open_stream(asio::ip::tcp::socket socket, const TlsContext* tls, std::string_view listener,
                 std::function<void(std::unique_ptr<ByteStream> stream)> ready);

}  // namespace streamd
