#include "server/kafka/tcp_stream.h"

#include <asio/buffer.hpp>
#include <asio/write.hpp>

namespace streamd::kafka {
namespace {

class TcpStream final : public ByteStream {
 public:
  explicit TcpStream(asio::ip::tcp::socket socket) : socket_(std::move(socket)) {
    std::error_code ec;
    socket_.set_option(asio::ip::tcp::no_delay(true), ec);
    auto endpoint = socket_.remote_endpoint(ec);
    peer_ = ec ? std::string("unknown") : endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
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

std::unique_ptr<ByteStream> make_tcp_stream(asio::ip::tcp::socket socket) {
  return std::make_unique<TcpStream>(std::move(socket));
}

}  // namespace streamd::kafka
