#include "server/daemon.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <future>
#include <optional>
#include <thread>

#include "server/broker/broker.h"
#include "server/broker/file_engine.h"
#include "server/broker/memory/memory_engine.h"
#include "server/broker/pg/pg_schema.h"
#include "server/file_system_metrics.h"
#include "server/stream_metrics.h"
#include "server/kafka/kafka_server.h"
#include "server/logging.h"
#include "server/metrics/metrics.h"
#include "server/auth/authenticator.h"
#include "server/http_api/http_api.h"
#include "server/net/http_server.h"
#include "server/net/loop_batched_executor.h"
#include "server/net/loop_scheduler.h"
#include "server/net/server.h"
#include "server/net/tls_context.h"
#include "server/open_file_limit.h"
#include "server/postgres_engine.h"
#include "server/storage/clock.h"
#include "server/systemd/systemd_notify.h"

namespace streamd {
namespace {

// Threads for the broker calls that sync files on behalf of a request (create, delete, trim,
// compact). Separate from the storage threads, which they may wait on.
constexpr unsigned kBlockingThreads = 2;
// Threads that read logs for Read, Peek and OffsetAt: a read of records no longer in the page cache
// waits for the disk on one of them, not on the loop.
constexpr unsigned kReaderThreads = 2;
constexpr int kExitCantCreate = 73;  // EX_CANTCREAT

constexpr auto kAsTuple = asio::experimental::as_tuple(asio::use_awaitable);

enum class Phase { kRecovering, kReady, kStopping };

// The loop's thread: joined on every way out of run_daemon.
class LoopThread {
 public:
  explicit LoopThread(asio::io_context& io) : io_(io), thread_([&io] { io.run(); }) {}
  ~LoopThread() { stop(); }
  void stop() {
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }
  // Runs fn on the loop and waits for it.
  void run_on_loop(std::function<void()> fn) {
    std::promise<void> done;
    asio::post(io_, [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  }

 private:
  asio::io_context& io_;
  std::thread thread_;
};

// The ports each listener bound; 0 for one that is not configured.
struct BoundPorts {
  uint16_t listen = 0;
  uint16_t tls = 0;
  uint16_t http = 0;
  uint16_t http_tls = 0;
  uint16_t kafka = 0;
  uint16_t kafka_tls = 0;
};

// {"listen_port":N,"http_port":M,"kafka_port":K,"tls_port":T,"http_tls_port":H,"kafka_tls_port":S,
// "pid":P} (0 for a listener not configured), written to a temporary name and renamed so a reader
// never sees half of it.
bool write_ready_file(const std::string& path, const BoundPorts& ports) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return false;
  const int n = std::fprintf(f,
                             "{\"listen_port\":%u,\"http_port\":%u,\"kafka_port\":%u,\"tls_port\":%u,"
                             "\"http_tls_port\":%u,\"kafka_tls_port\":%u,\"pid\":%ld}\n",
                             unsigned{ports.listen}, unsigned{ports.http}, unsigned{ports.kafka}, unsigned{ports.tls},
                             unsigned{ports.http_tls}, unsigned{ports.kafka_tls}, static_cast<long>(getpid()));
  const bool ok = n > 0 && std::fclose(f) == 0;
  return ok && std::rename(tmp.c_str(), path.c_str()) == 0;
}

// "STREAM/PARTITION" of every partition fenced after a failed write or sync.
std::vector<std::string> failed_partitions(const Broker& broker) {
  std::vector<std::string> out;
  for (const StreamSummary& s : broker.list_streams()) {
    auto d = broker.describe_stream(s.name);
    if (!d.ok()) continue;  // deleted since it was listed
    for (const PartitionDescription& p : d->partitions) {
      if (p.failed) out.push_back(s.name + "/" + std::to_string(p.partition.value));
    }
  }
  return out;
}

// What the start-up log and /healthz say of where streams are kept.
std::string storage_summary(const Config& config) {
  if (config.storage.engine == EngineKind::kMemory) {
    return "storage.engine memory (ephemeral: every stream is lost when streamd stops; at most " +
           std::to_string(config.storage.memory_max_bytes) + " bytes)";
  }
  if (config.storage.engine == EngineKind::kPostgres) {
    return "storage.engine postgres (" + postgres_summary(config.storage) + ")";
  }
  return "data_dir " + config.data_dir;
}

// With auth.http_require_token, everything but the probes wants a bearer token of a principal that
// may read every stream (what /metrics shows). Nothing about the token is logged or echoed.
std::optional<HttpResponse> refuse_bearer(const HttpRequest& request, const auth::Authenticator& auth) {
  const auth::PrincipalEntry* entry =
      request.bearer && auth.table() ? auth.table()->find_token(*request.bearer) : nullptr;
  if (entry == nullptr) {
    return HttpResponse{401, "text/plain; charset=utf-8", "a bearer token is required\n",
                        {{"WWW-Authenticate", "Bearer realm=\"streamd\""}}};
  }
  const auth::Principal principal = auth::Principal::of(auth.table(), entry->name, entry);
  if (!principal.holds_everywhere(auth::Right::kRead)) {
    return HttpResponse{403, "text/plain; charset=utf-8", "the token's principal is not granted read on *\n", {}};
  }
  return std::nullopt;
}

// `broker` is set before the phase turns kReady, and read only then.
HttpResponse answer_http(const HttpRequest& request, const std::atomic<Phase>& phase,
                         const std::unique_ptr<Broker>& broker, const MetricsRegistry& metrics,
                         const auth::Authenticator& auth, const Config& config) {
  if (request.path == "/healthz") {
    // An operator probing a broker that keeps nothing across restarts should not have to read its log.
    if (config.storage.engine == EngineKind::kMemory) {
      return {200, "text/plain; charset=utf-8", "ok\n" + storage_summary(config) + "\n", {}};
    }
    return {200, "text/plain; charset=utf-8", "ok\n", {}};
  }
  if (request.path == "/readyz") {
    switch (phase.load()) {
      case Phase::kReady: {
        // Not ready while a partition is fenced: its appends fail until a restart recovers it.
        const auto failed = failed_partitions(*broker);
        if (failed.empty()) {
          // A part of the storage out of reach (a postgres shard down) is every broker's: taking this
          // one out of a load balancer would help no client, and it still serves every other stream.
          std::string body = "ready\n";
          for (const std::string& part : broker->unreachable_storage()) body += "degraded: " + part + "\n";
          return {200, "text/plain; charset=utf-8", body, {}};
        }
        std::string body = "degraded: a write or sync failed; these partitions refuse appends until a restart:";
        for (const auto& p : failed) body += " " + p;
        return {503, "text/plain; charset=utf-8", body + "\n", {}};
      }
      case Phase::kRecovering:
        return {503, "text/plain; charset=utf-8", "recovering\n", {}};
      case Phase::kStopping:
        return {503, "text/plain; charset=utf-8", "stopping\n", {}};
    }
  }
  if (config.auth_http_require_token) {
    if (auto refused = refuse_bearer(request, auth)) return *refused;
  }
  if (request.path == "/metrics") return {200, "text/plain; version=0.0.4; charset=utf-8", metrics.render(), {}};
  return {404, "text/plain; charset=utf-8", "not found\n", {}};
}

// Loads the access file at `path` into `auth`; nothing to do without one. On failure `auth` keeps the
// table it had.
Status load_access_file(const std::string& path, auth::Authenticator& auth) {
  if (path.empty()) return Status();
  auto table = auth::AccessTable::load(path);
  if (!table.ok()) return table.status();
  spdlog::info("access file: {} principals loaded from {}", table->size(), path);
  if (table->clear_text_tokens() > 0) {
    spdlog::warn("access file {}: {} tokens are written in clear (the \"read|write|admin TOKEN\" lines); "
                 "`streamctl auth migrate {}` rewrites them as digests (docs/SECURITY.md)",
                 path, table->clear_text_tokens(), path);
  }
  auth.replace(std::make_shared<const auth::AccessTable>(std::move(*table)));
  return Status();
}

void log_certificate(const char* when, const TlsContext& tls) {
  if (tls.expired()) {
    spdlog::error("{}: TLS certificate {} HAS EXPIRED: clients will refuse it", when, tls.describe());
  } else {
    spdlog::info("{}: TLS certificate {}", when, tls.describe());
  }
}

// The process's parts, built phase by phase and destroyed in reverse: the pools after the server,
// whose queued tasks (a connection closed by force at the shutdown timeout) must find a live handler;
// the broker after the server; the loop thread after everything it runs.
class Daemon {
 public:
  explicit Daemon(const StartupOptions& options) : options_(options), config_(options.config) {}
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Every phase, then the wait for a stop; the process exit code.
  int run();

 private:
  // Start-up phases, in order; each returns the exit code that ends start-up, or 0.
  int start_operations();  // metrics, the access file, TLS, the HTTP listeners, signals, the watchdog, the loop thread
  int open_broker();       // the storage threads and the data directory's recovery
  int start_listening();   // the Kafka listeners (when configured) and the protocol listeners; /readyz turns 200
  int start_console();     // the HTTP API and the console on the HTTP listeners (console.enabled)
  int announce_ready();    // the summary line, systemd, the ready file
  // The orderly stop: the broker, then the loop's own listeners and timers, then the loop thread.
  void stop();

  // On the loop: stop accepting, answer what is in flight, then release run().
  void begin_shutdown();
  asio::awaitable<void> handle_signals();
  asio::awaitable<void> ping_watchdog(std::chrono::steady_clock::duration period);

  const StartupOptions& options_;
  const Config& config_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();

  asio::io_context io_{1};
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(io_);
  MetricsRegistry metrics_;
  std::atomic<Phase> phase_{Phase::kRecovering};
  auth::Authenticator auth_;
  std::shared_ptr<TlsContext> tls_;  // null without a TLS listener
  std::unique_ptr<HttpServer> http_;
  std::optional<asio::signal_set> signals_;
  asio::steady_timer watchdog_{io_};
  std::optional<LoopThread> loop_;

  // Loop-thread state: the protocol and Kafka servers once they listen, and the shutdown in progress.
  Server* server_ = nullptr;
  kafka::KafkaServer* kafka_server_ = nullptr;
  std::promise<void> drained_;
  bool shutting_down_ = false;

  std::optional<LoopScheduler> scheduler_;
  std::optional<ThreadPool> storage_;
  std::optional<LoopBatchedExecutor> storage_from_loop_;
  std::unique_ptr<FileSystem> fs_;
  std::unique_ptr<Broker> broker_;
  int64_t recovery_ms_ = 0;
  std::unique_ptr<Server> server_owner_;
  std::unique_ptr<kafka::KafkaServer> kafka_owner_;
  std::unique_ptr<http_api::HttpApi> api_owner_;
  http_api::HttpApi* api_ = nullptr;  // the loop thread's: set once the API serves, cleared before it stops
  std::optional<ThreadPool> blocking_;
  std::optional<ThreadPool> readers_;
};

int Daemon::run() {
  if (int code = start_operations(); code != 0) return code;
  if (int code = open_broker(); code != 0) {
    stop();
    return code;
  }
  int exit_code = start_listening();
  if (exit_code == 0 && server_owner_) exit_code = start_console();
  if (exit_code == 0 && server_owner_) {
    exit_code = announce_ready();
    drained_.get_future().wait();
  } else if (exit_code == 0) {
    spdlog::info("stop requested during recovery");
  }
  stop();
  spdlog::info(
      "streamd stopped after {} s",
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_).count());
  return exit_code;
}

int Daemon::start_operations() {
  metrics_
      .gauge("streamd_build_info", "Always 1; the label carries the version", {{"version", STREAMD_VERSION}})
      .set(1);
  // The access file and the certificate: loaded before anything listens; SIGHUP reloads both on the
  // loop thread.
  if (Status s = load_access_file(config_.auth_token_file, auth_); !s.ok()) {
    spdlog::critical("{}", s.to_string());
    return s.exit_code();
  }
  if (config_.tls_listen || config_.http_tls_listen || config_.kafka.tls_listen) {
    auto tls = TlsContext::load(config_.tls);
    if (!tls.ok()) {
      spdlog::critical("{}", tls.status().to_string());
      return tls.status().exit_code();
    }
    tls_ = std::move(*tls);
    log_certificate("start", *tls_);
  }
  std::vector<ListenSpec> http_listen{{config_.http_listen, nullptr}};
  if (config_.http_tls_listen) http_listen.push_back({*config_.http_tls_listen, tls_});
  HttpServerOptions http_options;
  http_options.max_body_bytes = config_.console.max_body_bytes;
  http_options.connections = &metrics_.gauge("streamd_http_connections", "HTTP connections open");
  auto http = HttpServer::start(
      io_, http_listen,
      HttpServer::Handler([this](HttpRequest request, HttpServer::Reply reply) {
        // The API and console once the broker serves (start_console); the operations endpoints always.
        if (config_.console.enabled && http_api::HttpApi::serves(request.path)) {
          if (api_ != nullptr) return api_->handle(std::move(request), std::move(reply));
          return reply(HttpResponse(503, "text/plain; charset=utf-8", "the broker is not serving yet\n"));
        }
        if (request.method != "GET" && request.method != "HEAD") {
          return reply(HttpResponse(405, "text/plain; charset=utf-8", "only GET and HEAD\n"));
        }
        reply(answer_http(request, phase_, broker_, metrics_, auth_, config_));
      }),
      http_options);
  if (!http.ok()) {
    spdlog::critical("{}", http.status().to_string());
    return http.status().exit_code();
  }
  http_ = std::move(*http);
  signals_.emplace(io_, SIGINT, SIGTERM, SIGHUP);
  asio::co_spawn(io_, handle_signals(), asio::detached);
  // systemd's watchdog is pinged from the loop itself, so a wedged loop stops the pings.
  if (auto interval = systemd::watchdog_interval()) {
    asio::co_spawn(io_, ping_watchdog(std::chrono::duration_cast<std::chrono::steady_clock::duration>(*interval / 2)),
                   asio::detached);
  }
  loop_.emplace(io_);
  return 0;
}

asio::awaitable<void> Daemon::handle_signals() {
  for (;;) {
    auto [ec, signo] = co_await signals_->async_wait(kAsTuple);
    if (ec) co_return;
    if (signo == SIGHUP) {
      if (reopen_log_file()) spdlog::info("SIGHUP: log file reopened");
      if (Status s = load_access_file(config_.auth_token_file, auth_); !s.ok()) {
        spdlog::error("SIGHUP: access file not reloaded, the previous one stays: {}", s.to_string());
      }
      if (tls_) {
        if (Status s = tls_->reload(); s.ok()) {
          log_certificate("SIGHUP: reloaded", *tls_);
        } else {
          spdlog::error("SIGHUP: TLS certificate not reloaded, the previous one stays: {}", s.to_string());
        }
      }
    } else {
      spdlog::info("{} received", signo == SIGTERM ? "SIGTERM" : "SIGINT");
      begin_shutdown();
    }
  }
}

asio::awaitable<void> Daemon::ping_watchdog(std::chrono::steady_clock::duration period) {
  for (;;) {
    if (Status s = systemd::notify_watchdog(); !s.ok()) spdlog::warn("systemd notify: {}", s.to_string());
    watchdog_.expires_after(period);
    auto [ec] = co_await watchdog_.async_wait(kAsTuple);
    if (ec) co_return;
  }
}

int Daemon::open_broker() {
  scheduler_.emplace(io_);
  storage_.emplace(config_.storage_threads, kStorageRunningLimit);
  storage_from_loop_.emplace(io_, *storage_);
  fs_ = metered_file_system(posix_file_system(), metrics_);
  BrokerOptions broker_options;
  broker_options.auto_create_streams = config_.auto_create_streams;
  broker_options.default_policy = config_.default_policy;
  broker_options.max_partitions = config_.limits.max_partitions;
  broker_options.retention_check_period = config_.retention_check_period;
  broker_options.compaction_period = config_.compaction_period;
  broker_options.transactions.max_timeout = config_.limits.max_transaction_timeout;
  broker_options.transactions.max_ids = config_.limits.max_transactional_ids;
  broker_options.transactions.id_expiry = config_.limits.transactional_id_expiry;

  const ProducerBounds producers{config_.limits.max_producers,
                                  std::chrono::duration_cast<std::chrono::microseconds>(config_.limits.producer_idle_expiry)};

  const auto recovery_start = std::chrono::steady_clock::now();
  auto opened = [&] {
    if (config_.storage.engine == EngineKind::kMemory) {
      spdlog::warn("{}: data_dir is not used", storage_summary(config_));
      return Broker::open(std::make_unique<MemoryEngine>(config_.storage.memory_max_bytes, *storage_from_loop_,
                                                         SystemClock::instance(), producers),
                          broker_options, *storage_from_loop_, SystemClock::instance(), *scheduler_);
    }
    if (config_.storage.engine == EngineKind::kPostgres) {
      spdlog::info("{}: data_dir is not used", storage_summary(config_));
      auto engine = open_postgres_engine(config_.storage, producers, SystemClock::instance());
      if (!engine.ok()) return Result<std::unique_ptr<Broker>>(engine.status());
      return Broker::open(std::move(engine).value(), broker_options, *storage_from_loop_, SystemClock::instance(),
                          *scheduler_);
    }
    PartitionOptions partition_options = broker_options.partition_options;
    partition_options.journal_group_bytes = config_.storage.journal_group_bytes;
    auto engine = FileEngine::open(*fs_, config_.data_dir, *storage_from_loop_, SystemClock::instance(),
                                   partition_options, config_.storage.max_open_files,
                                   config_.storage.journal_file_bytes, producers);
    if (!engine.ok()) return Result<std::unique_ptr<Broker>>(engine.status());
    return Broker::open(std::move(engine).value(), broker_options, *storage_from_loop_, SystemClock::instance(),
                        *scheduler_);
  }();
  if (!opened.ok()) {
    if (config_.storage.engine == EngineKind::kPostgres) {
      spdlog::critical("cannot open the postgres engine: {}", opened.status().to_string());
      return opened.status().exit_code();
    }
    spdlog::critical("cannot open data_dir {}: {}", config_.data_dir, opened.status().to_string());
    return opened.status().exit_code();
  }
  broker_ = std::move(*opened);
  recovery_ms_ =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - recovery_start)
          .count();
  blocking_.emplace(kBlockingThreads);
  readers_.emplace(kReaderThreads);
  register_stream_metrics(metrics_, *broker_, config_.metrics_per_partition);
  return 0;
}

int Daemon::start_listening() {
  Status listen_status;
  loop_->run_on_loop([&] {
    if (phase_ == Phase::kStopping) return;
    // The Kafka listener first: a server that failed to start must not be destroyed on the loop.
    if (config_.kafka.listen || config_.kafka.tls_listen) {
      kafka::ListenerOptions kafka_options;
      if (config_.kafka.listen) {
        kafka_options.listeners.push_back({{*config_.kafka.listen, nullptr}, config_.kafka.advertised_listener});
      }
      if (config_.kafka.tls_listen) {
        kafka_options.listeners.push_back({{*config_.kafka.tls_listen, tls_}, config_.kafka.advertised_tls_listener});
      }
      kafka_options.sasl_mechanisms = config_.kafka.sasl_mechanisms;
      kafka_options.node_id = config_.kafka.node_id;
      kafka_options.enforce_placement = config_.kafka.enforce_placement;
      kafka_options.auto_create_topics = config_.auto_create_streams;
      kafka_options.default_policy = config_.default_policy;
      kafka_options.limits = config_.limits;
      kafka_options.log_dir_on_disk = config_.storage.engine == EngineKind::kFile;
      kafka_options.log_dir = kafka_options.log_dir_on_disk ? config_.data_dir
                              : config_.storage.engine == EngineKind::kMemory ? std::string("memory")
                                                                              : std::string("postgres");
      auto kafka_started = kafka::KafkaServer::start(io_, *broker_, *blocking_, *readers_, *scheduler_, metrics_,
                                                     kafka_options, auth_);
      if (!kafka_started.ok()) {
        listen_status = kafka_started.status();
        return;
      }
      kafka_owner_ = std::move(*kafka_started);
      kafka_server_ = kafka_owner_.get();
    }
    std::vector<ListenSpec> listen{{config_.listen, nullptr}};
    if (config_.tls_listen) listen.push_back({*config_.tls_listen, tls_});
    auto started = Server::start(io_, *broker_, *blocking_, *readers_, metrics_, listen, config_.limits, auth_);
    if (!started.ok()) {
      listen_status = started.status();
      return;
    }
    server_owner_ = std::move(*started);
    server_ = server_owner_.get();
    phase_ = Phase::kReady;
  });
  if (listen_status.ok()) return 0;
  spdlog::critical("{}", listen_status.to_string());
  return listen_status.exit_code();
}

int Daemon::start_console() {
  if (!config_.console.enabled) return 0;
  http_api::ApiOptions options;
  options.export_enabled = config_.console.export_enabled;
  options.allowed_hosts = config_.console.allowed_hosts;
  options.max_body_bytes = config_.console.max_body_bytes;
  options.engine = config_.storage.engine == EngineKind::kMemory     ? "memory"
                   : config_.storage.engine == EngineKind::kPostgres ? "postgres"
                                                                      : "file";
  // After the listeners: the history sums the counters they registered.
  api_owner_ = std::make_unique<http_api::HttpApi>(*broker_, *blocking_, *scheduler_, metrics_, auth_,
                                                   std::move(options), started_);
  loop_->run_on_loop([this] { api_ = api_owner_.get(); });
  const bool open_listener = !is_loopback_host(config_.http_listen.host) ||
                             (config_.http_tls_listen && !is_loopback_host(config_.http_tls_listen->host));
  if (open_listener && config_.auth_token_file.empty()) {
    spdlog::warn("the HTTP API and the console are off on HTTP listeners that are not loopback: no access file "
                 "(auth.token_file) is set (docs/CONSOLE.md)");
  }
  return 0;
}

int Daemon::announce_ready() {
  size_t partitions = 0;
  const auto streams = broker_->list_streams();
  for (const auto& s : streams) partitions += static_cast<size_t>(s.partitions);
  BoundPorts ports;
  std::string summary;
  loop_->run_on_loop([&] {
    ports.listen = server_->port(0);
    summary = "listen " + config_.listen.host + ":" + std::to_string(ports.listen);
    if (config_.tls_listen) {
      ports.tls = server_->port(1);
      summary += ", tls " + config_.tls_listen->host + ":" + std::to_string(ports.tls);
    }
    ports.http = http_->port(0);
    summary += ", http " + config_.http_listen.host + ":" + std::to_string(ports.http);
    if (config_.http_tls_listen) {
      ports.http_tls = http_->port(1);
      summary += ", https " + config_.http_tls_listen->host + ":" + std::to_string(ports.http_tls);
    }
    size_t k = 0;
    if (config_.kafka.listen) {
      ports.kafka = kafka_server_->port(k);
      summary += ", kafka " + config_.kafka.listen->host + ":" + std::to_string(ports.kafka) + " (advertised " +
                 kafka_server_->advertised(k) + ")";
      ++k;
    }
    if (config_.kafka.tls_listen) {
      ports.kafka_tls = kafka_server_->port(k);
      summary += ", kafka tls " + config_.kafka.tls_listen->host + ":" + std::to_string(ports.kafka_tls) +
                 " (advertised " + kafka_server_->advertised(k) + ")";
    }
  });
  spdlog::info("streamd {} ready: {}, {}, {} streams / {} partitions opened, recovery took {} ms",
               STREAMD_VERSION, summary, storage_summary(config_), streams.size(), partitions, recovery_ms_);
  if (Status s = systemd::notify_ready(); !s.ok()) spdlog::warn("systemd notify: {}", s.to_string());
  if (!options_.ready_file.empty() && !write_ready_file(options_.ready_file, ports)) {
    spdlog::critical("cannot write ready file {}", options_.ready_file);
    loop_->run_on_loop([this] { begin_shutdown(); });
    return kExitCantCreate;
  }
  return 0;
}

void Daemon::begin_shutdown() {
  if (shutting_down_) return;
  shutting_down_ = true;
  phase_ = Phase::kStopping;
  if (server_ == nullptr) return;  // still recovering: start-up sees `phase_` and stops
  spdlog::info("shutting down: no new connections; answering what is in flight");
  if (Status s = systemd::notify_stopping(); !s.ok()) spdlog::warn("systemd notify: {}", s.to_string());
  // Both listeners drain at once; run() goes on once both have.
  auto left = std::make_shared<int>(kafka_server_ != nullptr ? 2 : 1);
  auto one_drained = [this, left] {
    if (--*left == 0) drained_.set_value();
  };
  server_->shutdown(config_.shutdown_timeout, one_drained);
  if (kafka_server_ != nullptr) kafka_server_->shutdown(config_.shutdown_timeout, one_drained);
}

void Daemon::stop() {
  // The API first: its tails, searches and workers use the broker. It is destroyed with the daemon,
  // after the blocking pool whose queued tasks (a create, a trim) still answer through it.
  if (api_owner_) {
    loop_->run_on_loop([this] {
      api_ = nullptr;
      api_owner_->stop();
    });
  }
  if (broker_) broker_->close();
  loop_->run_on_loop([this] {
    http_->close();
    std::error_code ignored;
    signals_->cancel(ignored);
    watchdog_.cancel();
  });
  work_.reset();
  loop_->stop();
}

}  // namespace

int run_daemon(const StartupOptions& options) {
  if (auto error = setup_logging(options.config)) {
    std::fprintf(stderr, "streamd: %s\n", error->c_str());
    return kExitConfig;
  }
  if (options.init_postgres) {
    const Status s = init_postgres(options.config.storage);
    if (!s.ok()) {
      spdlog::critical("cannot prepare the postgres engine's schema: {}", s.to_string());
      return s.exit_code();
    }
    spdlog::info("the postgres engine's schema (version {}) is in place", kPgSchemaVersion);
    return 0;
  }
  spdlog::info("streamd {} starting (pid {})", STREAMD_VERSION, static_cast<long>(getpid()));
  const OpenFileLimit limit = raise_open_file_limit(options.config.limits.max_connections);
  if (options.config.storage.max_open_files != 0) return Daemon(options).run();
  StartupOptions derived = options;
  derived.config.storage.max_open_files = auto_max_open_files(limit.now);
  spdlog::info("storage.max_open_files: {} (auto)", derived.config.storage.max_open_files);
  return Daemon(derived).run();
}

}  // namespace streamd
