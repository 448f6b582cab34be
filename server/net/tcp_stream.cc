#include "server/net/tcp_stream.h"

#include <asio/buffer.hpp>
#include <asio/write.hpp>

namespace streamd {
namespace {

class TcpStream final : public ByteStream {
 public:
  explicit TcpStream(asio::ip::tcp::socket socket) : socket_(std::move(socket)), peer_(peer_of(socket_)) {
    std::error_code ec;
    socket_.set_option(asio::ip::tcp::no_delay(true), ec);
    // write_now() must answer would_block on a full socket buffer, not block.
    socket_.non_blocking(true, ec);
  }

  void read_some(char* data, size_t size, Done done) override {
    socket_.async_read_some(asio::buffer(data, size), std::move(done));
  }

  void write(const std::vector<std::string_view>& buffers, Done done) override {
    gather_.clear();
    gather_.reserve(buffers.size());
    for (std::string_view b : buffers) gather_.emplace_back(b.data(), b.size());
    asio::async_write(socket_, gather_, std::move(done));
  }

  size_t write_now(std::string_view bytes, std::error_code& ec) override {
    return socket_.write_some(asio::buffer(bytes.data(), bytes.size()), ec);
  }

  void close() override {
    std::error_code ec;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

  std::string peer() const override { return peer_; }

 private:
  asio::ip::tcp::socket socket_;
  std::vector<asio::const_buffer> gather_;
  std::string peer_;
};

}  // namespace

std::string peer_of(const asio::ip::tcp::socket& socket) {
  std::error_code ec;
  auto endpoint = socket.remote_endpoint(ec);
  if (ec) return "unknown";
  const auto address = endpoint.address();
  const std::string host = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return host + ":" + std::to_string(endpoint.port());
}

std::unique_ptr<ByteStream> make_tcp_stream(asio::ip::tcp::socket socket) {
  return std::make_unique<TcpStream>(std::move(socket));
}

}  // namespace streamd
