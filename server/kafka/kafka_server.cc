#include "server/kafka/kafka_server.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <unordered_map>

#include "server/kafka/connection.h"
#include "server/kafka/group_coordinator.h"
#include "server/kafka/kafka_metrics.h"
#include "server/kafka/tcp_stream.h"
#include "server/net/listener.h"

namespace streamd::kafka {
namespace {

class LoopExecutor final : public Executor {
 public:
  explicit LoopExecutor(asio::io_context& io) : io_(io) {}
  void post(std::function<void()> task) override { asio::post(io_, std::move(task)); }

 private:
  asio::io_context& io_;
};

std::string advertised_host(const ListenerOptions& options) {
  const std::string& host = options.listen.host;
  if (host != "0.0.0.0" && host != "::" && !host.empty()) return host;
  // A wildcard listen address is no address to connect to: this host's name is.
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0 && name[0] != '\0') return name;
  return "localhost";
}

}  // namespace

struct KafkaServer::Impl {
  Impl(asio::io_context& io_context, Broker& broker, Executor& blocking, Executor& readers, Scheduler& timers,
       MetricsRegistry& registry, asio::ip::tcp::acceptor listener, const ListenerOptions& listener_options)
      : io(io_context),
        acceptor(std::move(listener)),
        limits(listener_options.limits),
        loop(io_context),
        metrics(registry),
        groups(timers),
        services{broker, blocking, readers, loop, timers, groups, metrics, options},
        shutdown_timer(io_context) {}

  void accept();
  void on_closed(uint64_t id);

  asio::io_context& io;
  asio::ip::tcp::acceptor acceptor;
  const Limits limits;
  LoopExecutor loop;
  KafkaMetrics metrics;
  GroupCoordinator groups;
  KafkaOptions options;
  Services services;
  std::unordered_map<uint64_t, std::shared_ptr<KafkaConnection>> connections;
  uint64_t next_id = 1;
  bool shutting_down = false;
  asio::steady_timer shutdown_timer;
  std::function<void()> shutdown_done;
};

void KafkaServer::Impl::accept() {
  acceptor.async_accept([this](const std::error_code& ec, asio::ip::tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (ec) {
      spdlog::warn("kafka accept failed: {}", ec.message());
      auto pause = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(100));
      pause->async_wait([this, pause](const std::error_code&) { accept(); });
      return;
    }
    if (connections.size() >= limits.max_connections) {
      metrics.connections_refused.inc();
      spdlog::warn("refused a kafka connection: {} open (limits.max_connections)", connections.size());
      std::error_code ignored;
      socket.close(ignored);
    } else {
      metrics.connections_accepted.inc();
      const uint64_t id = next_id++;
      auto conn = std::make_shared<KafkaConnection>(
          make_tcp_stream(std::move(socket)), id,
          KafkaConnection::Context{services, limits, [this](uint64_t closed) { on_closed(closed); }});
      connections.emplace(id, conn);
      conn->start();
    }
    accept();
  });
}

void KafkaServer::Impl::on_closed(uint64_t id) {
  connections.erase(id);
  if (shutting_down && connections.empty() && shutdown_done) {
    shutdown_timer.cancel();
    auto done = std::move(shutdown_done);
    shutdown_done = nullptr;
    done();
  }
}

Result<std::unique_ptr<KafkaServer>> KafkaServer::start(asio::io_context& io, Broker& broker, Executor& blocking,
                                                        Executor& readers, Scheduler& timers,
                                                        MetricsRegistry& metrics, const ListenerOptions& options) {
  auto acceptor = open_acceptor(io, options.listen);
  if (!acceptor.ok()) return acceptor.status();
  auto impl = std::make_unique<Impl>(io, broker, blocking, readers, timers, metrics, std::move(*acceptor), options);
  KafkaOptions& o = impl->options;
  o.node_id = options.node_id;
  o.enforce_placement = options.enforce_placement;
  o.auto_create_topics = options.auto_create_topics;
  o.default_policy = options.default_policy;
  o.max_frame_bytes = options.limits.max_frame_bytes;
  std::error_code ec;
  const uint16_t bound = impl->acceptor.local_endpoint(ec).port();
  if (!options.advertised_listener.empty()) {
    const size_t colon = options.advertised_listener.rfind(':');
    o.advertised_host = options.advertised_listener.substr(0, colon);
    if (o.advertised_host.size() > 2 && o.advertised_host.front() == '[') {
      o.advertised_host = o.advertised_host.substr(1, o.advertised_host.size() - 2);
    }
    o.advertised_port = std::stoi(options.advertised_listener.substr(colon + 1));
    if (o.advertised_port == 0) o.advertised_port = bound;
  } else {
    o.advertised_host = advertised_host(options);
    o.advertised_port = bound;
  }
  impl->accept();
  return std::unique_ptr<KafkaServer>(new KafkaServer(std::move(impl)));
}

KafkaServer::KafkaServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

KafkaServer::~KafkaServer() {
  impl_->groups.close();
}

uint16_t KafkaServer::port() const {
  std::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

std::string KafkaServer::advertised() const {
  const KafkaOptions& o = impl_->options;
  return o.advertised_host + ":" + std::to_string(o.advertised_port);
}

void KafkaServer::shutdown(std::chrono::milliseconds timeout, std::function<void()> done) {
  Impl& s = *impl_;
  s.shutting_down = true;
  std::error_code ec;
  s.acceptor.close(ec);
  s.groups.close();
  if (s.connections.empty()) {
    done();
    return;
  }
  s.shutdown_done = std::move(done);
  auto open = s.connections;
  for (auto& [id, conn] : open) conn->drain();
  if (s.connections.empty()) return;
  s.shutdown_timer.expires_after(timeout);
  s.shutdown_timer.async_wait([impl = impl_.get()](const std::error_code& wait_ec) {
    if (wait_ec) return;
    spdlog::warn("shutdown: {} kafka connections still owed answers after the timeout; closing them",
                 impl->connections.size());
    auto left = impl->connections;
    for (auto& [id, conn] : left) conn->close();
  });
}

}  // namespace streamd::kafka
