// Fetch 4-11 (docs/KAFKA.md §Fetch): reads each partition from its fetch offset and answers with v2
// batches, one per stored batch (fetch_batch.h), timestamps as the topic's message.timestamp.type says.
// The first batch starts at or before the offset asked for even when that offset is a compaction hole,
// and the last one's offset range reaches where the read stopped, so a consumer never re-asks for
// skipped offsets. Limits as KIP-74: whole batches within max_bytes and each partition's max_bytes, but
// the first batch of the first partition with data whatever its size.
// Isolation as the request asks (Broker::read, docs/TRANSACTIONS.md): markers are never sent, and at
// read_committed neither are aborted records nor anything from the last stable offset on, so
// aborted_transactions is always empty and no client filters. The fetch session id is always 0 (every
// fetch is a full one); the record set is never null.
//
// Long-poll: with less than min_bytes found and max_wait_ms > 0, the request watches every partition
// it names (Broker::watch) and a timer (Services::timers) for the deadline, and reads again on a wake.
// Reads of closed segments, and their encoding, run on the readers executor; reads of active
// segments only run on the loop.
//
// A topic the principal may not read is TOPIC_AUTHORIZATION_FAILED for each of its partitions (and
// answers at once, as every error does).
#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/broker/broker.h"
#include "server/kafka/fetch_batch.h"
#include "server/kafka/handlers.h"
#include "server/kafka/kafka_metrics.h"

namespace streamd::kafka {
namespace {

constexpr int32_t kMaxRecordsPerPartition = 1 << 20;
// A stored batch's record region this long or longer is sent from the read's buffer rather than
// copied into the answer; a shorter one costs less to copy than a piece of a gathered write.
constexpr size_t kSpliceFrom = 8192;

struct FetchPartition {
  int32_t index = 0;
  int64_t offset = 0;
  int32_t max_bytes = 0;
};

struct FetchTopic {
  std::string name;
  std::vector<FetchPartition> partitions;
  bool denied = false;  // the principal may not read it
};

struct FetchRequest {
  int32_t max_wait_ms = 0;
  int32_t min_bytes = 0;
  int32_t max_bytes = 0;
  Isolation isolation = Isolation::kReadUncommitted;
  std::vector<FetchTopic> topics;
};

bool decode(Reader& r, int16_t version, FetchRequest& out) {
  r.i32();  // replica id
  out.max_wait_ms = r.i32();
  out.min_bytes = r.i32();
  out.max_bytes = r.i32();
  out.isolation = r.i8() == 1 ? Isolation::kReadCommitted : Isolation::kReadUncommitted;
  if (version >= 7) {
    r.i32();  // session id
    r.i32();  // session epoch: answered with session 0, every fetch is full
  }
  const int32_t topics = r.count(6);
  out.topics.resize(static_cast<size_t>(topics));
  for (FetchTopic& t : out.topics) {
    t.name = std::string(r.string());
    const int32_t partitions = r.count(16);
    if (r.failed()) return false;
    t.partitions.resize(static_cast<size_t>(partitions));
    for (FetchPartition& p : t.partitions) {
      p.index = r.i32();
      if (version >= 9) r.i32();  // current leader epoch
      p.offset = r.i64();
      if (version >= 5) r.i64();  // the follower's log start offset
      p.max_bytes = r.i32();
    }
    if (r.failed()) return false;
  }
  if (version >= 7) {
    const int32_t forgotten = r.count(6);
    for (int32_t i = 0; i < forgotten && !r.failed(); ++i) {
      r.string();
      const int32_t n = r.count(4);
      for (int32_t j = 0; j < n && !r.failed(); ++j) r.i32();
    }
  }
  if (version >= 11) r.string();  // rack id
  return !r.failed();
}

// One partition's share of an answer.
struct PartitionOut {
  Error error = Error::kNone;
  int64_t high_watermark = -1;
  int64_t last_stable = -1;
  int64_t log_start = -1;
  int64_t fetch_offset = 0;
  TimestampType timestamp_type = TimestampType::kCreateTime;  // the topic's, as the read found it
  ReadResult read;
  // The Kafka batches answered, over read's entries, each with its size.
  std::vector<FetchBatch> batches;
  std::vector<size_t> sizes;
};

struct Outcome {
  bool answer = false;
  Answer frame;
  uint64_t records = 0;
  uint64_t bytes = 0;
};

class PendingFetch final : public Waiter, public std::enable_shared_from_this<PendingFetch> {
 public:
  PendingFetch(Services& services, Responder responder, int16_t version, FetchRequest request)
      : services_(services), responder_(std::move(responder)), version_(version), req_(std::move(request)) {}

  void start() {
    deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(0, req_.max_wait_ms));
    responder_.add_waiter(shared_from_this());
    read(req_.max_wait_ms <= 0);
  }

  void finish_now() override {
    if (state_ == State::kWaiting) {
      stop_waiting();
      read(true);
    } else if (state_ == State::kReading) {
      final_requested_ = true;
    }
  }

  void cancel() override {
    if (state_ == State::kWaiting) stop_waiting();
    state_ = State::kDone;
  }

 private:
  enum class State { kReading, kWaiting, kDone };

  bool reads_tail() const {
    for (const FetchTopic& t : req_.topics) {
      if (t.denied) continue;
      std::vector<ReadCursor> cursors;
      for (const FetchPartition& p : t.partitions) {
        if (p.offset >= 0) cursors.push_back({PartitionId(p.index), Offset(static_cast<uint64_t>(p.offset))});
      }
      if (!services_.broker.reads_tail(t.name, cursors)) return false;
    }
    return true;
  }

  void read(bool final) {
    state_ = State::kReading;
    if (reads_tail()) {
      on_read(read_now(final));
      return;
    }
    services_.readers.post([self = shared_from_this(), final] {
      Outcome outcome = self->read_now(final);
      self->services_.loop.post([self, outcome = std::move(outcome)]() mutable { self->on_read(std::move(outcome)); });
    });
  }

  // Any thread: reads only what does not change after construction, and the thread-safe broker.
  Outcome read_now(bool final) const {
    Broker& broker = services_.broker;
    std::vector<std::vector<PartitionOut>> parts(req_.topics.size());
    int64_t budget = std::max(1, req_.max_bytes);
    bool first_data = true;
    bool any_error = false;
    uint64_t found = 0;    // bytes of the batches answered
    uint64_t records = 0;  // records among them: none means only holes were skipped
    for (size_t t = 0; t < req_.topics.size(); ++t) {
      const FetchTopic& topic = req_.topics[t];
      parts[t].resize(topic.partitions.size());
      // Read each time: a topic's timestamp type may change while a fetch waits.
      auto policy = topic.denied ? Result<Policy>(Policy{}) : broker.policy(topic.name);
      const TimestampType timestamp_type = policy.ok() ? policy->timestamp_type : TimestampType::kCreateTime;
      for (size_t i = 0; i < topic.partitions.size(); ++i) {
        const FetchPartition& fp = topic.partitions[i];
        PartitionOut& out = parts[t][i];
        out.fetch_offset = fp.offset;
        out.timestamp_type = timestamp_type;
        if (topic.denied) {
          out.error = Error::kTopicAuthorizationFailed;
          any_error = true;
          continue;
        }
        auto ends = broker.ends(topic.name, PartitionId(fp.index));
        if (!ends.ok()) {
          out.error = from_status(ends.status());
          any_error = true;
          continue;
        }
        out.high_watermark = static_cast<int64_t>(ends->bounds.next.value);
        out.last_stable = static_cast<int64_t>(ends->last_stable.value);
        out.log_start = static_cast<int64_t>(ends->bounds.first.value);
        if (fp.offset < out.log_start || fp.offset > out.high_watermark) {
          out.error = Error::kOffsetOutOfRange;
          any_error = true;
          continue;
        }
        // Between the last stable offset and the end, a read_committed consumer waits for a marker.
        const int64_t readable_end =
            req_.isolation == Isolation::kReadCommitted ? out.last_stable : out.high_watermark;
        if (fp.offset >= readable_end || (budget <= 0 && !first_data)) continue;
        // KIP-74: the first batch of the first partition with data goes out whatever the limits, so that
        // a consumer always progresses; every other batch only within them.
        const int64_t limit = std::min<int64_t>(fp.max_bytes, budget);
        if (limit <= 0 && !first_data) continue;
        // Record bytes never exceed a batch's encoded bytes: a read to the limit holds every batch that fits.
        // Stored batches go out as they are, so the read takes them whole without decoding their records.
        auto result =
            broker.read(topic.name, {{PartitionId(fp.index), Offset(static_cast<uint64_t>(fp.offset))}},
                        kMaxRecordsPerPartition, static_cast<uint64_t>(std::max<int64_t>(1, limit)),
                        req_.isolation, ReadShape::kBatches);
        if (!result.ok() || !(*result)[0].status.ok()) {
          out.error = from_status(result.ok() ? (*result)[0].status : result.status());
          any_error = true;
          continue;
        }
        out.read = std::move((*result)[0].result);
        if (!expand_moved_start(out.read, fp.offset)) {
          out.error = Error::kKafkaStorageError;
          any_error = true;
          continue;
        }
        std::vector<FetchBatch> batches = fetch_batches(out.read, fp.offset);
        int64_t used = 0;
        for (const FetchBatch& b : batches) {
          const size_t size = fetch_batch_size(b, out.timestamp_type);
          const bool forced = first_data && out.batches.empty();
          if (!forced && used + static_cast<int64_t>(size) > limit) break;
          out.batches.push_back(b);
          out.sizes.push_back(size);
          used += static_cast<int64_t>(size);
          records += b.records;
        }
        found += static_cast<uint64_t>(used);
        budget -= used;
        if (!out.batches.empty()) first_data = false;
      }
    }
    Outcome outcome;
    // Enough: min_bytes of records, or a partition that moved past holes alone (the consumer must
    // learn of it). Errors answer at once.
    const bool moved = !first_data;
    const bool enough =
        moved && (records == 0 || found >= static_cast<uint64_t>(std::max(0, req_.min_bytes)));
    if (!final && !any_error && !enough) return outcome;
    outcome.answer = true;
    outcome.frame = encode(parts, outcome);
    return outcome;
  }

  // The answer's own bytes hold everything but the record regions of large stored batches, which
  // go out from the buffers the read filled (Answer's views, kept alive by the read's owners).
  Answer encode(std::vector<std::vector<PartitionOut>>& parts, Outcome& outcome) const {
    // Sizes first, so the answer's bytes are written into one buffer allocated once.
    size_t total = kResponsePrefix + 64;
    for (size_t t = 0; t < req_.topics.size(); ++t) {
      total += 8 + req_.topics[t].name.size();
      for (const PartitionOut& p : parts[t]) {
        total += 64;
        for (size_t i = 0; i < p.batches.size(); ++i) {
          total += p.sizes[i] - spliced_region(p.batches[i], kSpliceFrom).size();
        }
      }
    }
    Answer answer(responder_.start());
    std::string& frame = answer.bytes;
    frame.reserve(total);
    Writer w(frame);
    w.i32(0);  // throttle time
    if (version_ >= 7) {
      w.i16(0);  // error
      w.i32(0);  // session id: none
    }
    w.array_count(static_cast<int32_t>(req_.topics.size()));
    for (size_t t = 0; t < req_.topics.size(); ++t) {
      const FetchTopic& topic = req_.topics[t];
      w.string(topic.name);
      w.array_count(static_cast<int32_t>(topic.partitions.size()));
      for (size_t i = 0; i < topic.partitions.size(); ++i) {
        PartitionOut& p = parts[t][i];
        w.i32(topic.partitions[i].index);
        w.i16(code(p.error));
        w.i64(p.high_watermark);
        w.i64(p.last_stable);
        if (version_ >= 5) w.i64(p.log_start);
        w.array_count(0);  // aborted transactions: their records are never sent
        if (version_ >= 11) w.i32(-1);  // preferred read replica: this broker
        const size_t length_at = w.placeholder_i32();
        size_t records_bytes = 0;
        for (size_t b = 0; b < p.batches.size(); ++b) {
          const std::string_view region =
              encode_fetch_batch(frame, p.batches[b], p.timestamp_type, kSpliceFrom);
          if (!region.empty()) answer.views.push_back({frame.size(), region});
          records_bytes += p.sizes[b];
          outcome.records += p.batches[b].records;
        }
        w.patch_i32(length_at, static_cast<int32_t>(records_bytes));
        outcome.bytes += records_bytes;
        if (!p.batches.empty()) {
          for (auto& owner : p.read.owners) answer.owners.push_back(std::move(owner));
        }
      }
    }
    return answer;
  }

  void on_read(Outcome outcome) {
    if (state_ == State::kDone) return;
    if (outcome.answer) {
      state_ = State::kDone;
      responder_.remove_waiter();
      services_.metrics.fetched_records.inc(outcome.records);
      services_.metrics.fetched_bytes.inc(outcome.bytes);
      responder_.send(std::move(outcome.frame));
      return;
    }
    if (final_requested_ || std::chrono::steady_clock::now() >= deadline_) {
      read(true);
      return;
    }
    wait();
  }

  void wait() {
    std::weak_ptr<PendingFetch> weak = shared_from_this();
    Executor* loop = &services_.loop;
    auto wake = [weak, loop] {
      loop->post([weak] {
        if (auto self = weak.lock(); self && self->state_ == State::kWaiting) {
          self->stop_waiting();
          self->read(false);
        }
      });
    };
    for (const FetchTopic& t : req_.topics) {
      std::vector<ReadCursor> cursors;
      for (const FetchPartition& p : t.partitions) {
        cursors.push_back({PartitionId(p.index), Offset(static_cast<uint64_t>(p.offset))});
      }
      auto id = services_.broker.watch(t.name, cursors, wake, req_.isolation);
      if (!id.ok()) {
        stop_waiting();
        read(true);  // the topic went away meanwhile: the re-read says so
        return;
      }
      watches_.push_back(*id);
    }
    state_ = State::kWaiting;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
    cancel_timer_ = services_.timers.schedule_after(std::max(left, std::chrono::milliseconds(0)), [weak] {
      if (auto self = weak.lock(); self && self->state_ == State::kWaiting) {
        self->cancel_timer_ = nullptr;
        self->stop_waiting();
        self->read(true);
      }
    });
  }

  void stop_waiting() {
    for (WatchId id : watches_) services_.broker.unwatch(id);
    watches_.clear();
    if (cancel_timer_) {
      cancel_timer_();
      cancel_timer_ = nullptr;
    }
    state_ = State::kReading;
  }

  Services& services_;
  Responder responder_;
  const int16_t version_;
  const FetchRequest req_;
  std::chrono::steady_clock::time_point deadline_;
  std::vector<WatchId> watches_;
  std::function<void()> cancel_timer_;
  State state_ = State::kReading;
  bool final_requested_ = false;
};

}  // namespace

bool handle_fetch(Request& request) {
  FetchRequest req;
  if (!decode(request.body, request.version(), req)) return false;
  for (FetchTopic& t : req.topics) {
    t.denied = !request.principal.allows(auth::Right::kRead, t.name);
    if (t.denied) request.services.metrics.error(ApiKey::kFetch, Error::kTopicAuthorizationFailed);
  }
  std::make_shared<PendingFetch>(request.services, request.responder, request.version(), std::move(req))->start();
  return true;
}

}  // namespace streamd::kafka
