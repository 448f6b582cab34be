#include "server/net/long_poll.h"

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <optional>

#include "server/broker/broker.h"
#include "server/net/net_metrics.h"
#include "server/net/read_response.h"

namespace streamd {
namespace {

// Per partition, when the request leaves max_bytes at 0.
constexpr uint64_t kDefaultReadMaxBytes = 1 << 20;

// What one read came to, computed on a reader thread.
struct ReadOutcome {
  bool answer = false;  // false: nothing to say yet (and the read was not final)
  Status error;         // a stream-level refusal, answered as the error
  std::string frame;    // the encoded answer otherwise
  ReadStats stats;
};

class PendingRead final : public Waiter, public std::enable_shared_from_this<PendingRead> {
 public:
  PendingRead(asio::io_context& io, Broker& broker, Executor& readers, NetMetrics& metrics,
              std::shared_ptr<Connection> conn, const Ticket& ticket, const v1::ReadRequest& request)
      : io_(io),
        broker_(broker),
        readers_(readers),
        metrics_(metrics),
        conn_(std::move(conn)),
        ticket_(ticket),
        stream_(request.stream()),
        max_records_(request.max_records()),
        isolation_(request.isolation() == v1::READ_UNCOMMITTED ? Isolation::kReadUncommitted
                                                               : Isolation::kReadCommitted),
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
    deadline_ = std::chrono::steady_clock::now() + wait_;
    key_ = reinterpret_cast<uintptr_t>(this);
    conn_->add_waiter(key_, shared_from_this());
    read(wait_.count() == 0);
  }

  // Shutdown, or the client finished sending: answer with what there is now.
  void finish_now() override {
    switch (state_) {
      case State::kWaiting:
        stop_waiting();
        read(true);
        break;
      case State::kReading:
        final_requested_ = true;  // the read in flight answers, or reads once more, finally
        break;
      case State::kDone:
        break;
    }
  }

  // The connection closed: drop without answering.
  void cancel() override {
    if (state_ == State::kWaiting) stop_waiting();
    if (state_ != State::kDone) finish();
  }

 private:
  enum class State { kReading, kWaiting, kDone };

  // Reads (and encodes) on a reader thread, and the outcome comes back to the loop; a read of the
  // active segments only (every wake of a caught-up reader) runs here, sparing it two thread hops.
  void read(bool final) {
    state_ = State::kReading;
    if (broker_.reads_tail(stream_, cursors_)) {
      on_read(read_now(final));
      return;
    }
    readers_.post([self = shared_from_this(), final] {
      ReadOutcome outcome = self->read_now(final);
      asio::post(self->io_, [self, outcome = std::move(outcome)]() mutable { self->on_read(std::move(outcome)); });
    });
  }

  // Reader thread: touches only what does not change after construction, and the thread-safe broker.
  ReadOutcome read_now(bool final) const {
    ReadOutcome out;
    auto result = broker_.read(stream_, cursors_, max_records_, max_bytes_, isolation_);
    if (!result.ok()) {
      out.answer = true;
      out.error = result.status();
      return out;
    }
    bool any = false;
    for (size_t i = 0; i < result->size() && !any; ++i) {
      const PartitionRead& p = (*result)[i];
      any = !p.status.ok() || !p.result.entries.empty() || p.result.next_from != cursors_[i].from;
    }
    if (!any && !final) return out;
    out.answer = true;
    out.frame = encode_read_frame(ticket_.id, *result, &out.stats);
    return out;
  }

  void on_read(ReadOutcome outcome) {
    if (state_ == State::kDone) return;  // cancelled while reading
    if (outcome.answer) {
      finish();
      if (!outcome.error.ok()) {
        conn_->reply_error(ticket_, outcome.error);
        return;
      }
      metrics_.read_records.inc(outcome.stats.records);
      metrics_.read_bytes.inc(outcome.stats.bytes);
      conn_->reply_frame(ticket_, std::move(outcome.frame), {});
      return;
    }
    if (final_requested_ || std::chrono::steady_clock::now() >= deadline_) {
      read(true);
      return;
    }
    wait();
  }

  // Watches the cursors and arms the deadline; a wake or the deadline reads again.
  void wait() {
    if (!counted_waiting_ && !conn_->start_waiting()) {
      // Each waiting read holds memory and a timer while its frame counted only its few bytes:
      // the connection's share is bounded, and the client told so at once.
      finish();
      conn_->reply_error(ticket_, Status(Code::kUnavailable, "Too many long-poll reads wait on this connection",
                                         {{"reason", "limits.max_waiting_reads reads already wait"},
                                          {"max_waiting_reads", std::to_string(conn_->max_waiting_reads())}}));
      return;
    }
    std::weak_ptr<PendingRead> weak = shared_from_this();
    asio::io_context* io = &io_;
    auto watch = broker_.watch(
        stream_, cursors_,
        [weak, io] {
          asio::post(*io, [weak] {
            if (auto woken = weak.lock(); woken && woken->state_ == State::kWaiting) woken->timer_.cancel();
          });
        },
        isolation_);
    if (!counted_waiting_) {
      metrics_.waiting_reads.add(1);
      counted_waiting_ = true;
    }
    if (!watch.ok()) {
      read(true);  // the stream went away between the read and the watch: the re-read says so
      return;
    }
    watch_id_ = *watch;
    state_ = State::kWaiting;
    timer_.expires_at(deadline_);
    // Ends at the deadline, or early when a wake cancels it; a wake is a hint, so the re-read may find
    // nothing yet and wait again until the deadline.
    timer_.async_wait([self = shared_from_this()](const std::error_code&) {
      if (self->state_ != State::kWaiting) return;  // finished or cancelled meanwhile
      self->stop_waiting();
      self->read(std::chrono::steady_clock::now() >= self->deadline_);
    });
  }

  void stop_waiting() {
    if (watch_id_) broker_.unwatch(*watch_id_);
    watch_id_.reset();
    state_ = State::kReading;
    timer_.cancel();
  }

  void finish() {
    state_ = State::kDone;
    if (counted_waiting_) {
      metrics_.waiting_reads.add(-1);
      conn_->stop_waiting();
    }
    counted_waiting_ = false;
    conn_->remove_waiter(key_);
  }

  asio::io_context& io_;
  Broker& broker_;
  Executor& readers_;
  NetMetrics& metrics_;
  std::shared_ptr<Connection> conn_;
  const Ticket ticket_;
  const std::string stream_;
  std::vector<ReadCursor> cursors_;
  const int32_t max_records_;
  const Isolation isolation_;
  uint64_t max_bytes_ = 0;
  const std::chrono::milliseconds wait_;
  std::chrono::steady_clock::time_point deadline_;
  asio::steady_timer timer_;
  std::optional<WatchId> watch_id_;
  uint64_t key_ = 0;
  State state_ = State::kReading;
  bool final_requested_ = false;
  bool counted_waiting_ = false;
};

}  // namespace

void LongPollRead::start(asio::io_context& io, Broker& broker, Executor& readers, NetMetrics& metrics,
                         const std::shared_ptr<Connection>& conn, const Ticket& ticket,
                         const v1::ReadRequest& request) {
  std::make_shared<PendingRead>(io, broker, readers, metrics, conn, ticket, request)->start();
}

}  // namespace streamd
