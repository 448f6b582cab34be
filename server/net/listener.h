// Opening a listening TCP socket for a configured Endpoint (numeric address or host name), shared by
// the protocol and HTTP listeners. A failure names the address and the reason (UNAVAILABLE: the
// daemon exits with 69). Call before or on the loop thread.
#pragma once

#include <asio/ip/tcp.hpp>

#include "server/config/config.h"
#include "server/storage/status.h"

namespace streamd {

Result<asio::ip::tcp::acceptor> open_acceptor(asio::io_context& io, const Endpoint& at);

}  // namespace streamd
