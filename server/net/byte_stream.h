// ByteStream: the seam between a connection and its transport, plain TCP (tcp_stream.h) or TLS
// (tls_stream.h). The native protocol's, the Kafka listener's and the HTTP listener's connections only
// ever read some bytes, write whole buffers and close through it, so each runs unchanged over either.
// Completions run on the network loop; every member is called there.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace streamd {

class ByteStream {
 public:
  using Done = std::function<void(const std::error_code& ec, size_t bytes)>;
  virtual ~ByteStream() = default;
  // Reads at least one byte into [data, data + size); EOF is an error code.
  virtual void read_some(char* data, size_t size, Done done) = 0;
  // Writes every byte of `buffers`, which stay alive and unchanged until `done` runs. One write at
  // a time; a read may be in flight beside it.
  virtual void write(const std::vector<std::string_view>& buffers, Done done) = 0;
  // Writes what the transport takes at once, without waiting, and returns how much that was; with no
  // write in flight only. would_block when it takes nothing — always, over TLS, whose records are
  // written whole by write().
  virtual size_t write_now(std::string_view bytes, std::error_code& ec) = 0;
  // Cancels pending operations (their completions see an error) and closes the transport; TLS says
  // close_notify first when it can.
  virtual void close() = 0;
  // "address:port" of the peer, for logs.
  virtual std::string peer() const = 0;
  // The subject of the client certificate the handshake verified, in RFC 2253 form
  // ("CN=ops,O=Example"); empty without one (and always over plain TCP).
  virtual std::string peer_subject() const { return {}; }
};

}  // namespace streamd
