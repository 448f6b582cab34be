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
#include "server/net/listener.h"
#include "server/net/tls_context.h"

namespace streamd::kafka {
namespace {

class LoopExecutor final : public Executor {
 public:
  explicit LoopExecutor(asio::io_context& io) : io_(io) {}
  void post(std::function<void()> task) override { asio::post(io_, std::move(task)); }

 private:
  asio::io_context& io_;
};

std::string advertised_host(const Endpoint& listen) {
  const std::string& host = listen.host;
  if (host != "0.0.0.0" && host != "::" && !host.empty()) return host;
  // A wildcard listen address is no address to connect to: this host's name is.
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0 && name[0] != '\0') return name;
  return "localhost";
}

// What clients of `listen`, bound on `bound`, are told: the configured HOST:PORT (port 0 meaning the
// bound one), or the listen host and the bound port.
Advertised advertise(const KafkaListen& listen, uint16_t bound) {
  Advertised a;
  const std::string& configured = listen.advertised_listener;
  if (configured.empty()) {
    a.host = advertised_host(listen.listen.at);
    a.port = bound;
    return a;
  }
  const size_t colon = configured.rfind(':');
  a.host = configured.substr(0, colon);
  if (a.host.size() > 2 && a.host.front() == '[') a.host = a.host.substr(1, a.host.size() - 2);
  a.port = std::stoi(configured.substr(colon + 1));
  if (a.port == 0) a.port = bound;
  return a;
}

}  // namespace

struct KafkaServer::Impl {
  struct Listening {
    asio::ip::tcp::acceptor acceptor;
    std::shared_ptr<TlsContext> tls;
    Advertised advertised;
  };

  Impl(asio::io_context& io_context, Broker& broker, Executor& blocking, Executor& readers, Scheduler& timers,
       MetricsRegistry& registry, std::vector<Listening> listeners, const ListenerOptions& listener_options,
       const auth::Authenticator& authenticator)
      : io(io_context),
        listening(std::move(listeners)),
        limits(listener_options.limits),
        loop(io_context),
        metrics(registry),
        groups(timers),
        services{broker, blocking, readers, loop, timers, groups, metrics, options, authenticator},
        shutdown_timer(io_context) {}

  void accept(Listening& on);
  void admit(std::unique_ptr<ByteStream> stream, const Listening& on);
  void on_closed(uint64_t id);

  asio::io_context& io;
  std::vector<Listening> listening;
  const Limits limits;
  LoopExecutor loop;
  KafkaMetrics metrics;
  GroupCoordinator groups;
  KafkaOptions options;
  Services services;
  std::unordered_map<uint64_t, std::shared_ptr<KafkaConnection>> connections;
  size_t handshaking = 0;  // TLS handshakes in progress
  uint64_t next_id = 1;
  bool shutting_down = false;
  asio::steady_timer shutdown_timer;
  std::function<void()> shutdown_done;
};

void KafkaServer::Impl::accept(Listening& on) {
  on.acceptor.async_accept([this, &on](const std::error_code& ec, asio::ip::tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !on.acceptor.is_open()) return;
    if (ec) {
      spdlog::warn("kafka accept failed: {}", ec.message());
      auto pause = std::make_shared<asio::steady_timer>(io, std::chrono::milliseconds(100));
      pause->async_wait([this, &on, pause](const std::error_code&) { accept(on); });
      return;
    }
    if (connections.size() + handshaking >= limits.max_connections) {
      metrics.connections_refused.inc();
      spdlog::warn("refused a kafka connection: {} open (limits.max_connections)", connections.size());
      std::error_code ignored;
      socket.close(ignored);
    } else {
      metrics.connections_accepted.inc();
      if (on.tls) ++handshaking;
      open_stream(std::move(socket), on.tls.get(), "kafka.tls_listen", [this, &on](std::unique_ptr<ByteStream> stream) {
        if (on.tls) --handshaking;
        if (stream && !shutting_down) admit(std::move(stream), on);
      });
    }
    accept(on);
  });
}

void KafkaServer::Impl::admit(std::unique_ptr<ByteStream> stream, const Listening& on) {
  const uint64_t id = next_id++;
  auto conn = std::make_shared<KafkaConnection>(
      std::move(stream), id,
      KafkaConnection::Context{services, limits, on.advertised, on.tls != nullptr,
                               [this](uint64_t closed) { on_closed(closed); }});
  connections.emplace(id, conn);
  conn->start();
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
                                                        MetricsRegistry& metrics, const ListenerOptions& options,
                                                        const auth::Authenticator& auth) {
  std::vector<Impl::Listening> listening;
  for (const KafkaListen& l : options.listeners) {
    auto acceptor = open_acceptor(io, l.listen.at);
    if (!acceptor.ok()) return acceptor.status();
    std::error_code ec;
    const uint16_t bound = acceptor->local_endpoint(ec).port();
    listening.push_back(Impl::Listening{std::move(*acceptor), l.listen.tls, advertise(l, bound)});
  }
  auto impl = std::make_unique<Impl>(io, broker, blocking, readers, timers, metrics, std::move(listening), options,
                                     auth);
  KafkaOptions& o = impl->options;
  o.node_id = options.node_id;
  o.enforce_placement = options.enforce_placement;
  o.auto_create_topics = options.auto_create_topics;
  o.default_policy = options.default_policy;
  o.max_frame_bytes = options.limits.max_frame_bytes;
  o.sasl_mechanisms = options.sasl_mechanisms;
  o.log_dir = options.log_dir;
  o.log_dir_on_disk = options.log_dir_on_disk;
  for (Impl::Listening& on : impl->listening) impl->accept(on);
  return std::unique_ptr<KafkaServer>(new KafkaServer(std::move(impl)));
}

KafkaServer::KafkaServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

KafkaServer::~KafkaServer() {
  impl_->groups.close();
}

uint16_t KafkaServer::port(size_t i) const {
  std::error_code ec;
  return impl_->listening.at(i).acceptor.local_endpoint(ec).port();
}

std::string KafkaServer::advertised(size_t i) const {
  const Advertised& a = impl_->listening.at(i).advertised;
  return a.host + ":" + std::to_string(a.port);
}

void KafkaServer::shutdown(std::chrono::milliseconds timeout, std::function<void()> done) {
  Impl& s = *impl_;
  s.shutting_down = true;
  std::error_code ec;
  for (Impl::Listening& on : s.listening) on.acceptor.close(ec);
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
