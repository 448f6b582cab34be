// TcpStream: ByteStream over a plain TCP socket. Internal to server/kafka (includes Asio).
#pragma once

#include <asio/ip/tcp.hpp>
#include <memory>

#include "server/kafka/byte_stream.h"

namespace streamd::kafka {

std::unique_ptr<ByteStream> make_tcp_stream(asio::ip::tcp::socket socket);

}  // namespace streamd::kafka
