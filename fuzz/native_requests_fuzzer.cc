// The native protocol from the first byte a client sends to the broker's answer: the input is what one
// client writes on its connection. It goes through the real Connection (frame reader, Request parsing,
// Hello, flow control), RequestHandler and wire_convert into a real Broker over a scratch data
// directory, with the threads the daemon has: the loop, storage, blocking and reader pools.
//
// Whatever the bytes, the broker must not crash, hang, leak or read out of bounds; every frame it
// writes back must parse as a Response; and once the client has finished sending, the connection must
// close once everything is answered. A request the client is still owed an answer for after a quiet
// spell (an append waiting out a full stream's block_timeout) is cut off by closing the connection, as
// the client would by going away.
#include <sys/socket.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/io_context.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/post.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "server/auth/authenticator.h"
#include "server/broker/broker.h"
#include "server/net/connection.h"
#include "server/net/frame.h"
#include "server/net/loop_scheduler.h"
#include "server/metrics/metrics.h"
#include "server/net/net_metrics.h"
#include "server/net/request_handler.h"
#include "server/net/tcp_stream.h"
#include "server/storage/clock.h"
#include "server/storage/executor.h"
#include "streamd.pb.h"
#include "tests/support/temp_dir.h"

using namespace streamd;

namespace {

constexpr auto kAsTuple = asio::experimental::as_tuple(asio::use_awaitable);
// How long the broker may stay silent, after the client finished sending, before the client gives up.
constexpr auto kQuiet = std::chrono::milliseconds(100);

Limits fuzz_limits() {
  Limits l;
  l.max_frame_bytes = 64 << 10;
  l.max_inflight_bytes = 8 << 10;  // small, so pipelined input exercises pausing and resuming
  l.idle_timeout = std::chrono::milliseconds(0);
  return l;
}

BrokerOptions broker_options() {
  BrokerOptions o;
  o.max_partitions = 64;  // a create of millions would spend the run making directories
  o.retention_check_period = std::chrono::milliseconds(0);
  o.partition_options.index_interval_bytes = 128;
  o.partition_options.preallocate_bytes = 4096;
  return o;
}

// The client's side: writes the input, ends its sending side, and reads until the broker closes.
struct Client {
  Client(asio::io_context& io, std::string bytes) : socket(io), input(std::move(bytes)) {}

  asio::local::stream_protocol::socket socket;
  std::string input;
  std::string received;
  std::atomic<int64_t> last_progress_ns{0};
  std::atomic<bool> sent{false};
  std::promise<void> closed;

  void progress() { last_progress_ns = std::chrono::steady_clock::now().time_since_epoch().count(); }

  static asio::awaitable<void> send(Client* c) {
    co_await asio::async_write(c->socket, asio::buffer(c->input), kAsTuple);  // fails once the broker closes
    std::error_code ec;
    c->socket.shutdown(asio::socket_base::shutdown_send, ec);
    c->progress();
    c->sent = true;
  }

  static asio::awaitable<void> receive(Client* c) {
    char buf[16 << 10];
    for (;;) {
      auto [ec, n] = co_await c->socket.async_read_some(asio::buffer(buf), kAsTuple);
      if (ec) break;
      c->received.append(buf, n);
      c->progress();
      c->check_frames();
    }
    c->check_frames();
    c->closed.set_value();
  }

  // Every whole frame the broker sent must be a Response.
  void check_frames() {
    size_t pos = 0;
    while (received.size() - pos >= kFrameHeaderBytes) {
      const uint32_t length = read_frame_length(received.data() + pos);
      if (received.size() - pos - kFrameHeaderBytes < length) break;
      v1::Response response;
      if (!response.ParseFromArray(received.data() + pos + kFrameHeaderBytes, static_cast<int>(length))) std::abort();
      pos += kFrameHeaderBytes + length;
    }
    received.erase(0, pos);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  testing::TempDir dir;
  asio::io_context io(1);
  auto work = asio::make_work_guard(io);
  std::thread loop([&io] { io.run(); });

  MetricsRegistry registry;
  NetMetrics metrics(registry);
  auth::Authenticator auth;  // no access file: every connection may do everything
  const Limits limits = fuzz_limits();
  LoopScheduler scheduler(io);
  auto storage = std::make_unique<ThreadPool>(1);
  auto opened = Broker::open(posix_file_system(), dir.file("data"), broker_options(), *storage,
                             SystemClock::instance(), scheduler);
  if (!opened.ok()) std::abort();
  std::unique_ptr<Broker> broker = std::move(*opened);
  auto blocking = std::make_unique<ThreadPool>(1);
  auto readers = std::make_unique<ThreadPool>(1);
  auto handler = std::make_unique<RequestHandler>(io, *broker, *blocking, *readers, metrics);

  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) std::abort();
  Client client(io, std::string(reinterpret_cast<const char*>(data), size));
  client.socket.assign(asio::local::stream_protocol(), fds[1]);
  client.progress();
  std::future<void> client_closed = client.closed.get_future();

  std::shared_ptr<Connection> conn;
  std::promise<void> started;
  asio::post(io, [&] {
    asio::ip::tcp::socket server_side(io);
    server_side.assign(asio::ip::tcp::v4(), fds[0]);
    conn = std::make_shared<Connection>(io, make_tcp_stream(std::move(server_side)), 1,
                                        Connection::Context{*handler, metrics, limits, auth, false, nullptr});
    conn->start();
    asio::co_spawn(io, Client::send(&client), asio::detached);
    asio::co_spawn(io, Client::receive(&client), asio::detached);
    started.set_value();
  });
  started.get_future().wait();

  // Until the broker closes the connection, or stays quiet too long after the client has sent all.
  while (client_closed.wait_for(std::chrono::milliseconds(5)) != std::future_status::ready) {
    const auto quiet = std::chrono::steady_clock::now().time_since_epoch() -
                       std::chrono::steady_clock::duration(client.last_progress_ns.load());
    if (client.sent && quiet > kQuiet) {
      asio::post(io, [&] {
        conn->close();
        std::error_code ec;
        client.socket.close(ec);
      });
      client_closed.wait();
      break;
    }
  }

  // The daemon's order: the broker finishes what it queued, the pools drain, then the loop stops.
  broker->close();
  blocking.reset();
  readers.reset();
  storage.reset();
  std::promise<void> flushed;
  asio::post(io, [&] {
    conn.reset();
    flushed.set_value();
  });
  flushed.get_future().wait();
  work.reset();
  io.stop();
  loop.join();
  handler.reset();
  broker.reset();
  return 0;
}
