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
#include <thread>

#include "server/broker/broker.h"
#include "server/file_system_metrics.h"
#include "server/logging.h"
#include "server/net/auth.h"
#include "server/net/http_server.h"
#include "server/net/loop_batched_executor.h"
#include "server/net/loop_scheduler.h"
#include "server/metrics/metrics.h"
#include "server/net/server.h"
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

// {"listen_port":N,"http_port":M,"pid":P}, written to a temporary name and renamed so a reader never
// sees half of it.
bool write_ready_file(const std::string& path, uint16_t listen_port, uint16_t http_port) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return false;
  const int n = std::fprintf(f, "{\"listen_port\":%u,\"http_port\":%u,\"pid\":%ld}\n", unsigned{listen_port},
                             unsigned{http_port}, static_cast<long>(getpid()));
  const bool ok = n > 0 && std::fclose(f) == 0;
  return ok && std::rename(tmp.c_str(), path.c_str()) == 0;
}

void register_partition_metrics(MetricsRegistry& registry, Broker& broker) {
  registry.add_collector([&broker](MetricsWriter& w) {
    w.gauge("streamd_streams", "Streams open", {}, static_cast<double>(broker.stream_count()));
    for (const StreamSummary& s : broker.list_streams()) {
      auto d = broker.describe_stream(s.name);
      if (!d.ok()) continue;  // deleted since it was listed
      for (const PartitionDescription& p : d->partitions) {
        const Labels labels{{"stream", s.name}, {"partition", std::to_string(p.partition.value)}};
        w.gauge("streamd_partition_next_offset", "Offset the partition's next record takes", labels,
                static_cast<double>(p.bounds.next.value));
        w.gauge("streamd_partition_first_offset", "Lowest offset the partition still retains", labels,
                static_cast<double>(p.bounds.first.value));
        w.gauge("streamd_partition_retained_bytes", "Bytes of log the partition retains", labels,
                static_cast<double>(p.bytes));
        w.gauge("streamd_partition_segments", "Segment files of the partition", labels,
                static_cast<double>(p.segments));
      }
    }
  });
}

HttpResponse answer_http(const HttpRequestLine& request, const std::atomic<Phase>& phase,
                         const MetricsRegistry& metrics) {
  if (request.path == "/healthz") return {200, "text/plain; charset=utf-8", "ok\n"};
  if (request.path == "/readyz") {
    switch (phase.load()) {
      case Phase::kReady:
        return {200, "text/plain; charset=utf-8", "ready\n"};
      case Phase::kRecovering:
        return {503, "text/plain; charset=utf-8", "recovering\n"};
      case Phase::kStopping:
        return {503, "text/plain; charset=utf-8", "stopping\n"};
    }
  }
  if (request.path == "/metrics") return {200, "text/plain; version=0.0.4; charset=utf-8", metrics.render()};
  return {404, "text/plain; charset=utf-8", "not found\n"};
}

// Loads the token file at `path` into `auth`; nothing to do without one. On failure `auth` keeps the
// tokens it had.
Status load_tokens(const std::string& path, Authenticator& auth) {
  if (path.empty()) return Status();
  auto tokens = TokenTable::load(path);
  if (!tokens.ok()) return tokens.status();
  spdlog::info("access tokens: {} loaded from {}", tokens->size(), path);
  auth.replace(std::make_shared<const TokenTable>(std::move(*tokens)));
  return Status();
}

}  // namespace

int run_daemon(const StartupOptions& options) {
  const Config& config = options.config;
  if (auto error = setup_logging(config)) {
    std::fprintf(stderr, "streamd: %s\n", error->c_str());
    return kExitConfig;
  }
  const auto started = std::chrono::steady_clock::now();
  spdlog::info("streamd {} starting (pid {})", STREAMD_VERSION, static_cast<long>(getpid()));

  asio::io_context io(1);
  auto work = asio::make_work_guard(io);
  MetricsRegistry metrics;
  metrics
      .gauge("streamd_build_info", "Always 1; the label carries the version", {{"version", STREAMD_VERSION}})
      .set(1);
  std::atomic<Phase> phase{Phase::kRecovering};

  // Access tokens: loaded before anything listens; SIGHUP reloads them on the loop thread.
  Authenticator auth;
  if (Status s = load_tokens(config.auth_token_file, auth); !s.ok()) {
    spdlog::critical("{}", s.to_string());
    return s.exit_code();
  }
  auto http = HttpServer::start(io, config.http_listen, [&phase, &metrics](const HttpRequestLine& request) {
    return answer_http(request, phase, metrics);
  });
  if (!http.ok()) {
    spdlog::critical("{}", http.status().to_string());
    return http.status().exit_code();
  }

  // Loop-thread state: the protocol server once it listens, and the shutdown in progress.
  Server* server = nullptr;
  std::promise<void> drained;
  bool shutting_down = false;
  auto begin_shutdown = [&] {
    if (shutting_down) return;
    shutting_down = true;
    phase = Phase::kStopping;
    if (server == nullptr) return;  // still recovering: start-up sees `phase` and stops
    spdlog::info("shutting down: no new connections; answering what is in flight");
    if (Status s = systemd::notify_stopping(); !s.ok()) spdlog::warn("systemd notify: {}", s.to_string());
    server->shutdown(config.shutdown_timeout, [&drained] { drained.set_value(); });
  };

  asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        for (;;) {
          auto [ec, signo] = co_await signals.async_wait(kAsTuple);
          if (ec) co_return;
          if (signo == SIGHUP) {
            if (reopen_log_file()) spdlog::info("SIGHUP: log file reopened");
            if (Status s = load_tokens(config.auth_token_file, auth); !s.ok()) {
              spdlog::error("SIGHUP: access tokens not reloaded, the previous ones stay: {}", s.to_string());
            }
          } else {
            spdlog::info("{} received", signo == SIGTERM ? "SIGTERM" : "SIGINT");
            begin_shutdown();
          }
        }
      },
      asio::detached);

  // systemd's watchdog is pinged from the loop itself, so a wedged loop stops the pings.
  asio::steady_timer watchdog(io);
  if (auto interval = systemd::watchdog_interval()) {
    const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(*interval / 2);
    asio::co_spawn(
        io,
        [&watchdog, period]() -> asio::awaitable<void> {
          for (;;) {
            if (Status s = systemd::notify_watchdog(); !s.ok())
              spdlog::warn("systemd notify: {}", s.to_string());
            watchdog.expires_after(period);
            auto [ec] = co_await watchdog.async_wait(kAsTuple);
            if (ec) co_return;
          }
        },
        asio::detached);
  }

  LoopThread loop(io);
  auto stop_loop = [&] {
    loop.run_on_loop([&] {
      (*http)->close();
      std::error_code ignored;
      signals.cancel(ignored);
      watchdog.cancel();
    });
    work.reset();
    loop.stop();
  };

  LoopScheduler scheduler(io);
  ThreadPool storage(config.storage_threads);
  LoopBatchedExecutor storage_from_loop(io, storage);
  auto fs = metered_file_system(posix_file_system(), metrics);
  BrokerOptions broker_options;
  broker_options.auto_create_streams = config.auto_create_streams;
  broker_options.default_policy = config.default_policy;
  broker_options.retention_check_period = config.retention_check_period;
  broker_options.compaction_period = config.compaction_period;

  const auto recovery_start = std::chrono::steady_clock::now();
  auto opened =
      Broker::open(*fs, config.data_dir, broker_options, storage_from_loop, SystemClock::instance(), scheduler);
  if (!opened.ok()) {
    spdlog::critical("cannot open data_dir {}: {}", config.data_dir, opened.status().to_string());
    stop_loop();
    return opened.status().exit_code();
  }
  std::unique_ptr<Broker> broker = std::move(*opened);
  const auto recovery_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - recovery_start)
          .count();
  // Declared before the pools, so it is destroyed after them: tasks still queued when they are
  // destroyed (a connection closed by force at the shutdown timeout) run against a live handler.
  std::unique_ptr<Server> server_owner;
  ThreadPool blocking(kBlockingThreads);
  ThreadPool readers(kReaderThreads);
  register_partition_metrics(metrics, *broker);

  Status listen_status;
  loop.run_on_loop([&] {
    if (phase == Phase::kStopping) return;
    auto started_server = Server::start(io, *broker, blocking, readers, metrics, config.listen, config.limits, auth);
    if (!started_server.ok()) {
      listen_status = started_server.status();
      return;
    }
    server_owner = std::move(*started_server);
    server = server_owner.get();
    phase = Phase::kReady;
  });

  int exit_code = 0;
  if (!listen_status.ok()) {
    spdlog::critical("{}", listen_status.to_string());
    exit_code = listen_status.exit_code();
  } else if (server_owner) {
    size_t partitions = 0;
    const auto streams = broker->list_streams();
    for (const auto& s : streams) partitions += static_cast<size_t>(s.partitions);
    uint16_t listen_port = 0;
    uint16_t http_port = 0;
    loop.run_on_loop([&] {
      listen_port = server->port();
      http_port = (*http)->port();
    });
    spdlog::info(
        "streamd {} ready: listen {}:{}, http {}:{}, data_dir {}, {} streams / {} partitions opened, "
        "recovery took "
        "{} ms",
        STREAMD_VERSION, config.listen.host, listen_port, config.http_listen.host, http_port, config.data_dir,
        streams.size(), partitions, recovery_ms);
    if (Status s = systemd::notify_ready(); !s.ok()) spdlog::warn("systemd notify: {}", s.to_string());
    if (!options.ready_file.empty() && !write_ready_file(options.ready_file, listen_port, http_port)) {
      spdlog::critical("cannot write ready file {}", options.ready_file);
      exit_code = kExitCantCreate;
      loop.run_on_loop(begin_shutdown);
    }
    drained.get_future().wait();
  } else {
    spdlog::info("stop requested during recovery");
  }

  broker->close();
  stop_loop();
  spdlog::info(
      "streamd stopped after {} s",
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count());
  return exit_code;
}

}  // namespace streamd
