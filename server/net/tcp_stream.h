// TcpStream: ByteStream over a plain TCP socket. Internal to server/net and server/kafka (includes Asio).
#pragma once

#include <asio/ip/tcp.hpp>
#include <memory>

#include "server/net/byte_stream.h"

namespace streamd {

std::unique_ptr<ByteStream> make_tcp_stream(asio::ip::tcp::socket socket);

// "address:port" of a socket's peer, or "unknown".
std::string peer_of(const asio::ip::tcp::socket& socket);

}  // namespace streamd
