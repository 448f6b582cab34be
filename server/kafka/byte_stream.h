// ByteStream: the seam between a Kafka connection and its transport. The connection only ever reads
// some bytes and writes whole buffers through it, so a TLS stream can replace the plain TCP one
// (tcp_stream.h) without the connection changing. Completions run on the network loop.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace streamd::kafka {

class ByteStream {
 public:
  using Done = std::function<void(const std::error_code& ec, size_t bytes)>;
  virtual ~ByteStream() = default;
  // Reads at least one byte into [data, data + size); EOF is an error code.
  virtual void read_some(char* data, size_t size, Done done) = 0;
  // Writes every byte of `buffers`, which stay alive and unchanged until `done` runs.
  virtual void write(const std::vector<std::string_view>& buffers, Done done) = 0;
  // Cancels pending operations (their completions see an error) and closes the transport.
  virtual void close() = 0;
  // "address:port" of the peer, for logs.
  virtual std::string peer() const = 0;
};

}  // namespace streamd::kafka
