#include "server/net/listener.h"

#include <spdlog/spdlog.h>

#include "server/net/tcp_stream.h"
#include "server/net/tls_stream.h"

namespace streamd {

Result<asio::ip::tcp::acceptor> open_acceptor(asio::io_context& io, const Endpoint& at) {
  auto fail = [&at](const std::string& what, const std::error_code& ec) {
    return Status(Code::kUnavailable, "cannot listen on " + at.str() + ": " + what + ": " + ec.message(),
                  {{"address", at.str()}});
  };
  std::error_code ec;
  asio::ip::tcp::resolver resolver(io);
  auto results =
      resolver.resolve(at.host, std::to_string(at.port),
                       asio::ip::tcp::resolver::passive | asio::ip::tcp::resolver::numeric_service, ec);
  if (ec) return fail("resolve", ec);
  std::error_code last;
  for (const auto& entry : results) {
    asio::ip::tcp::acceptor acceptor(io);
    const auto endpoint = entry.endpoint();
    acceptor.open(endpoint.protocol(), last);
    if (last) continue;
    acceptor.set_option(asio::ip::tcp::acceptor::reuse_address(true), last);
    acceptor.bind(endpoint, last);
    if (last) continue;
    acceptor.listen(asio::socket_base::max_listen_connections, last);
    if (last) continue;
    return acceptor;
  }
  return fail("bind", last ? last : asio::error::host_not_found);
}

}  // namespace streamd

namespace streamd {

void open_stream(asio::ip::tcp::socket socket, const TlsContext* tls, std::string_view listener,
                 std::function<void(std::unique_ptr<ByteStream> stream)> ready) {
  if (tls == nullptr) {
    ready(make_tcp_stream(std::move(socket)));
    return;
  }
  const std::string peer = peer_of(socket);
  accept_tls(std::move(socket), *tls,
             [peer, listener = std::string(listener), ready = std::move(ready)](std::unique_ptr<ByteStream> stream,
                                                                               const std::string& error) {
               if (!stream) spdlog::warn("{}: TLS handshake with {} failed: {}; closed", listener, peer, error);
               ready(std::move(stream));
             });
}

}  // namespace streamd
