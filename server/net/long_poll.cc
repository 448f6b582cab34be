#include "server/net/long_poll.h"

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <optional>

#include "server/broker/broker.h"
#include "server/net/net_metrics.h"
#include "server/net/read_response.h"

namespace streamd {
namespace {

// Per partition, when the request leaves max_bytes at 0.
constexpr uint64_t kDefaultReadMaxBytes = 1 << 20;

class PendingRead final : public Waiter, public std::enable_shared_from_this<PendingRead> {
 public:
  PendingRead(asio::io_context& io, Broker& broker, NetMetrics& metrics, std::shared_ptr<Connection> conn,
              const Ticket& ticket, const v1::ReadRequest& request)
      : io_(io),
        broker_(broker),
        metrics_(metrics),
        conn_(std::move(conn)),
        ticket_(ticket),
        stream_(request.stream()),
        max_records_(request.max_records()),
        wait_(request.wait_ms()),
        timer_(io) {
    cursors_.reserve(static_cast<size_t>(request.cursors_size()));
    for (const v1::Cursor& c : request.cursors())
      cursors_.push_back({PartitionId(c.partition()), Offset(c.from())});
    // Keep the whole answer well inside one frame whatever the number of cursors.
    const uint64_t per_partition_cap =
        std::max<uint64_t>(4096, conn_->max_frame_bytes() / 2 / static_cast<uint64_t>(cursors_.size()));
    max_bytes_ =
        std::min(request.max_bytes() == 0 ? kDefaultReadMaxBytes : request.max_bytes(), per_partition_cap);
  }

  void start() {
    if (answer_if_any(wait_.count() == 0)) return;
    deadline_ = std::chrono::steady_clock::now() + wait_;
    key_ = reinterpret_cast<uintptr_t>(this);
    conn_->add_waiter(key_, shared_from_this());
    metrics_.waiting_reads.add(1);
    waiting_ = true;
    asio::co_spawn(io_, wait(shared_from_this()), asio::detached);
  }

  void finish_now() override {
    if (!waiting_) return;
    answer_if_any(true);
    stop_waiting();
  }

  void cancel() override {
    if (!waiting_) return;
    stop_waiting();
  }

 private:
  // Reads; answers when there is something to say or `final`. True when answered.
  bool answer_if_any(bool final) {
    auto result = broker_.read(stream_, cursors_, max_records_, max_bytes_);
    if (!result.ok()) {
      conn_->reply_error(ticket_, result.status());
      return true;
    }
    bool any = false;
    for (size_t i = 0; i < result->size() && !any; ++i) {
      const PartitionRead& p = (*result)[i];
      any = !p.status.ok() || !p.result.entries.empty() || p.result.next_from != cursors_[i].from;
    }
    if (!any && !final) return false;
    ReadStats stats;
    std::string frame = encode_read_frame(ticket_.id, *result, &stats);
    metrics_.read_records.inc(stats.records);
    metrics_.read_bytes.inc(stats.bytes);
    conn_->reply_frame(ticket_, std::move(frame), {});
    return true;
  }

  // Watches the cursors and sleeps until the deadline or a wake, re-reading after each wake.
  static asio::awaitable<void> wait(std::shared_ptr<PendingRead> self) {
    while (self->waiting_) {
      std::weak_ptr<PendingRead> weak = self;
      asio::io_context* io = &self->io_;
      auto watch = self->broker_.watch(self->stream_, self->cursors_, [weak, io] {
        asio::post(*io, [weak] {
          if (auto woken = weak.lock(); woken && woken->waiting_) woken->timer_.cancel();
        });
      });
      if (!watch.ok()) {
        // The stream went away between the read and the watch: the re-read says so.
        self->answer_if_any(true);
        self->stop_waiting();
        co_return;
      }
      self->watch_id_ = *watch;
      self->timer_.expires_at(self->deadline_);
      // Ends at the deadline, or early when a wake or stop_waiting() cancels it.
      co_await self->timer_.async_wait(asio::experimental::as_tuple(asio::use_awaitable));
      self->unwatch();
      if (!self->waiting_) co_return;
      if (self->answer_if_any(std::chrono::steady_clock::now() >= self->deadline_)) {
        self->stop_waiting();
        co_return;
      }
      // A wake is a hint: nothing readable yet, so wait out the rest of the deadline.
    }
  }

  void unwatch() {
    if (watch_id_) broker_.unwatch(*watch_id_);
    watch_id_.reset();
  }

  void stop_waiting() {
    waiting_ = false;
    unwatch();
    timer_.cancel();
    metrics_.waiting_reads.add(-1);
    conn_->remove_waiter(key_);
  }

  asio::io_context& io_;
  Broker& broker_;
  NetMetrics& metrics_;
  std::shared_ptr<Connection> conn_;
  const Ticket ticket_;
  const std::string stream_;
  std::vector<ReadCursor> cursors_;
  const int32_t max_records_;
  uint64_t max_bytes_ = 0;
  const std::chrono::milliseconds wait_;
  std::chrono::steady_clock::time_point deadline_;
  asio::steady_timer timer_;
  std::optional<WatchId> watch_id_;
  uint64_t key_ = 0;
  bool waiting_ = false;
};

}  // namespace

void LongPollRead::start(asio::io_context& io, Broker& broker, NetMetrics& metrics,
                         const std::shared_ptr<Connection>& conn, const Ticket& ticket,
                         const v1::ReadRequest& request) {
  std::make_shared<PendingRead>(io, broker, metrics, conn, ticket, request)->start();
}

}  // namespace streamd
