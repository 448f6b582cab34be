#include "bench/soak_tool/workers.h"

#include <chrono>
#include <memory>
#include <optional>
#include <random>

#include "tests/integration/wire_client.h"

namespace streamd::soak {
namespace {

using Clock = std::chrono::steady_clock;
using testing::WireClient;

// Keeps a loop at `per_second` passes; wait() is false once the soak stops.
class Pacer {
 public:
  Pacer(const std::atomic<bool>& stop, double per_second)
      : stop_(stop), period_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / per_second))) {}
  bool wait() {
    next_ += period_;
    const auto now = Clock::now();
    if (next_ < now) next_ = now;  // fell behind: do not burst to catch up
    while (!stop_ && Clock::now() < next_) std::this_thread::sleep_for(std::min<Clock::duration>(next_ - Clock::now(), std::chrono::milliseconds(100)));
    return !stop_;
  }

 private:
  const std::atomic<bool>& stop_;
  const Clock::duration period_;
  Clock::time_point next_ = Clock::now();
};

// One connection that reconnects after a call went unanswered (each such call is an error).
class Session {
 public:
  Session(uint16_t port, Tally& tally, std::string name) : port_(port), tally_(tally), name_(std::move(name)) {}
  std::optional<v1::Response> call(v1::Request request) {
    if (!client_ || !client_->connected()) {
      client_ = std::make_unique<WireClient>(port_);
      if (!client_->connected()) {
        tally_.error(name_ + ": cannot connect");
        client_.reset();
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        return std::nullopt;
      }
    }
    v1::Response response = client_->call(std::move(request), std::chrono::seconds(30));
    if (response.body_case() == v1::Response::BODY_NOT_SET && !response.has_error()) {
      tally_.error(name_ + ": no answer; reconnecting");
      client_.reset();
      return std::nullopt;
    }
    return response;
  }
  // The answer when it succeeded; an error counted (with `what`) when it was refused.
  std::optional<v1::Response> ok(v1::Request request, const std::string& what) {
    auto response = call(std::move(request));
    if (!response) return std::nullopt;
    if (response->has_error()) {
      tally_.error(name_ + ": " + what + ": " + response->error().name() + " " + response->error().message());
      return std::nullopt;
    }
    return response;
  }

 private:
  const uint16_t port_;
  Tally& tally_;
  const std::string name_;
  std::unique_ptr<WireClient> client_;
};

v1::Request create(const std::string& name, int32_t partitions, const std::function<void(v1::Policy&)>& policy) {
  v1::Request r = testing::create_request(name, partitions, true);
  policy(*r.mutable_create_stream()->mutable_policy());
  return r;
}

v1::Request bounds(const std::string& stream, int32_t partition) {
  v1::Request r;
  r.mutable_bounds()->set_stream(stream);
  r.mutable_bounds()->set_partition(partition);
  return r;
}

v1::Request commit(const std::string& stream, const std::string& group, int32_t partition, uint64_t next) {
  v1::Request r;
  auto* c = r.mutable_commit();
  c->set_stream(stream);
  c->set_group(group);
  c->set_partition(partition);
  c->set_next(next);
  return r;
}

v1::Request committed(const std::string& stream, const std::string& group, int32_t partition) {
  v1::Request r;
  auto* c = r.mutable_committed();
  c->set_stream(stream);
  c->set_group(group);
  c->set_partition(partition);
  return r;
}

std::string payload(std::mt19937& rng, size_t min, size_t max) {
  std::uniform_int_distribution<size_t> size(min, max);
  std::string p(size(rng), '\0');
  for (char& c : p) c = static_cast<char>('a' + rng() % 26);
  return p;
}

constexpr int kKeyedPartitions = 4;
constexpr int kTimedPartitions = 2;
constexpr const char* kGroup = "soak";

}  // namespace

void Tally::count(const std::string& op, uint64_t n) {
  std::lock_guard lock(mu_);
  counts_[op] += n;
}

void Tally::error(const std::string& what) {
  std::lock_guard lock(mu_);
  ++errors_;
  if (first_errors_.size() < 10) first_errors_.push_back(what);
}

std::map<std::string, uint64_t> Tally::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

uint64_t Tally::errors() const {
  std::lock_guard lock(mu_);
  return errors_;
}

std::vector<std::string> Tally::first_errors() const {
  std::lock_guard lock(mu_);
  return first_errors_;
}

Workers::Workers(SoakOptions options, Tally& tally) : options_(options), tally_(tally) {}

Workers::~Workers() { stop(); }

bool Workers::create_streams() {
  Session s(options_.port, tally_, "setup");
  const bool keyed = s.ok(create("soak.keyed", kKeyedPartitions,
                                 [](v1::Policy& p) {
                                   p.set_segment_bytes(64 << 10);
                                   p.set_retain_bytes(512 << 10);
                                   // Compaction leaves every segment it empties as a husk of a few
                                   // bytes, which retain_bytes never reaches: time bounds them.
                                   p.set_retain_for_ms(std::chrono::milliseconds(kKeyedRetainFor).count());
                                   p.set_compact_after_ms(5'000);
                                 }),
                          "create soak.keyed")
                         .has_value();
  const bool timed = s.ok(create("soak.timed", kTimedPartitions,
                                 [](v1::Policy& p) {
                                   p.set_segment_bytes(64 << 10);
                                   p.set_retain_for_ms(15'000);
                                 }),
                          "create soak.timed")
                         .has_value();
  const bool trimmed =
      s.ok(create("soak.trimmed", 1, [](v1::Policy& p) { p.set_segment_bytes(64 << 10); }), "create soak.trimmed")
          .has_value();
  return keyed && timed && trimmed;
}

void Workers::start() {
  threads_.emplace_back([this] { produce_keyed(); });
  threads_.emplace_back([this] { produce_unkeyed("soak.timed", kTimedPartitions); });
  threads_.emplace_back([this] { produce_unkeyed("soak.trimmed", 1); });
  threads_.emplace_back([this] { consume(); });
  threads_.emplace_back([this] { long_poll(); });
  threads_.emplace_back([this] { trim(); });
  threads_.emplace_back([this] { churn_streams(); });
  threads_.emplace_back([this] { churn_connections(); });
}

void Workers::stop() {
  stop_ = true;
  for (auto& t : threads_) t.join();
  threads_.clear();
}

// Keyed batches (one key each, so one partition), a tenth of them tombstones: compaction's input.
void Workers::produce_keyed() {
  Session s(options_.port, tally_, "produce keyed");
  std::mt19937 rng(1);
  Pacer pace(stop_, options_.rate);
  while (pace.wait()) {
    const std::string key = "key-" + std::to_string(rng() % 1000);
    const int n = 1 + static_cast<int>(rng() % 4);
    std::vector<testing::TestRecord> records;
    for (int i = 0; i < n; ++i) records.push_back({key, rng() % 10 == 0 ? std::string() : payload(rng, 20, 300), {}});
    if (s.ok(testing::append_request("soak.keyed", records), "append soak.keyed")) {
      tally_.count("append");
      tally_.count("records", static_cast<uint64_t>(n));
    }
  }
}

void Workers::produce_unkeyed(const std::string& stream, int partitions) {
  Session s(options_.port, tally_, "produce " + stream);
  std::mt19937 rng(static_cast<unsigned>(partitions) * 7 + static_cast<unsigned>(stream.size()));
  Pacer pace(stop_, options_.rate);
  while (pace.wait()) {
    const int n = 1 + static_cast<int>(rng() % 16);
    std::vector<testing::TestRecord> records;
    for (int i = 0; i < n; ++i) records.push_back({"", payload(rng, 50, 400), {}});
    auto answer = s.ok(testing::append_request(stream, records), "append " + stream);
    if (!answer) continue;
    if (answer->append().last() - answer->append().first() + 1 != static_cast<uint64_t>(n))
      tally_.error("append " + stream + ": the range does not cover the batch");
    tally_.count("append");
    tally_.count("records", static_cast<uint64_t>(n));
  }
}

// Reads soak.keyed from its group's offsets, checking order, and commits as it goes; a cursor that
// retention overtook moves to the partition's first offset, as a consumer does.
void Workers::consume() {
  Session s(options_.port, tally_, "consume");
  std::vector<uint64_t> cursor(kKeyedPartitions, 0);
  for (int p = 0; p < kKeyedPartitions; ++p) {
    auto c = s.call(committed("soak.keyed", kGroup, p));
    if (c && c->has_committed()) cursor[static_cast<size_t>(p)] = c->committed().next();
  }
  Pacer pace(stop_, options_.rate);
  for (uint64_t pass = 0; pace.wait(); ++pass) {
    const int p = static_cast<int>(pass % kKeyedPartitions);
    uint64_t& from = cursor[static_cast<size_t>(p)];
    auto answer = s.ok(testing::read_request("soak.keyed", {{p, from}}, 200), "read soak.keyed");
    if (!answer) continue;
    const v1::PartitionRead& part = answer->read().partitions(0);
    if (part.has_error()) {
      if (part.error().name() == "OFFSET_TRIMMED") {
        from = std::stoull(part.error().fields().at("first"));
        tally_.count("read overtaken by retention");
      } else {
        tally_.error("read soak.keyed: " + part.error().name());
      }
      continue;
    }
    uint64_t last = from;
    for (int i = 0; i < part.entries_size(); ++i) {
      const uint64_t offset = part.entries(i).offset();
      if (offset < last || (i > 0 && offset == last)) tally_.error("read soak.keyed: offsets went backwards");
      last = offset;
    }
    tally_.count("read");
    tally_.count("records read", static_cast<uint64_t>(part.entries_size()));
    from = part.next_from();
    if (pass % 10 != 0) continue;
    if (!s.ok(commit("soak.keyed", kGroup, p, from), "commit")) continue;
    tally_.count("commit");
    if (pass % 500 == 0) {
      auto back = s.ok(committed("soak.keyed", kGroup, p), "committed");
      if (back && back->committed().next() != from) tally_.error("committed: not the offset just committed");
    }
  }
}

// Waits at the end of soak.timed for new records, a second at a time.
void Workers::long_poll() {
  Session s(options_.port, tally_, "long-poll");
  std::vector<uint64_t> cursor(kTimedPartitions, 0);
  for (int p = 0; p < kTimedPartitions; ++p) {
    auto b = s.ok(bounds("soak.timed", p), "bounds");
    if (b) cursor[static_cast<size_t>(p)] = b->bounds().next();
  }
  Pacer pace(stop_, options_.rate);
  while (pace.wait()) {
    auto answer = s.ok(testing::read_request("soak.timed", {{0, cursor[0]}, {1, cursor[1]}}, 100, 1000),
                       "long-poll soak.timed");
    if (!answer) continue;
    bool woken = false;
    for (const v1::PartitionRead& part : answer->read().partitions()) {
      uint64_t& from = cursor[static_cast<size_t>(part.partition())];
      if (part.has_error()) {
        if (part.error().name() != "OFFSET_TRIMMED") tally_.error("long-poll: " + part.error().name());
        else from = std::stoull(part.error().fields().at("first"));
        continue;
      }
      woken = woken || part.entries_size() > 0;
      from = part.next_from();
    }
    tally_.count(woken ? "long-poll woken" : "long-poll timed out");
  }
}

// Keeps soak.trimmed's last 200 records, trimming the rest twice a second.
void Workers::trim() {
  Session s(options_.port, tally_, "trim");
  Pacer pace(stop_, 2);
  while (pace.wait()) {
    auto b = s.ok(bounds("soak.trimmed", 0), "bounds soak.trimmed");
    if (!b || b->bounds().next() - b->bounds().first() <= 300) continue;
    const uint64_t before = b->bounds().next() - 200;
    v1::Request r;
    r.mutable_trim()->set_stream("soak.trimmed");
    r.mutable_trim()->set_before(before);
    auto t = s.ok(r, "trim");
    if (!t) continue;
    if (t->trim().first() != before) tally_.error("trim: first is not where it was trimmed to");
    tally_.count("trim");
  }
}

// A stream created, written, read back, compacted and deleted every two seconds, with the admin reads
// (describe, list, groups) and an explicit compaction of soak.keyed.
void Workers::churn_streams() {
  Session s(options_.port, tally_, "churn");
  Pacer pace(stop_, 0.5);
  for (uint64_t i = 0; pace.wait(); ++i) {
    const std::string name = "soak.churn." + std::to_string(i);
    if (!s.ok(create(name, 2, [](v1::Policy& p) { p.set_segment_bytes(64 << 10); }), "create " + name)) continue;
    std::vector<testing::TestRecord> records;
    for (int r = 0; r < 50; ++r) records.push_back({"", name + "-" + std::to_string(r), {}});
    auto appended = s.ok(testing::append_request(name, records), "append " + name);
    if (appended) {
      auto read = s.ok(testing::read_request(name, {{appended->append().partition(), 0}}, 100), "read " + name);
      if (read && (read->read().partitions(0).entries_size() != 50 ||
                   read->read().partitions(0).entries(49).record().payload() != name + "-49"))
        tally_.error("read " + name + ": not the records appended");
    }
    v1::Request r;
    r.mutable_compact()->set_stream("soak.keyed");
    r.mutable_compact()->set_partition(static_cast<int32_t>(i % kKeyedPartitions));
    if (s.ok(r, "compact soak.keyed")) tally_.count("compact");
    r.Clear();
    r.mutable_describe_stream()->set_name("soak.keyed");
    if (s.ok(r, "describe")) tally_.count("describe");
    r.Clear();
    r.mutable_list_streams();
    s.ok(r, "list");
    r.Clear();
    r.mutable_list_groups()->set_stream("soak.keyed");
    s.ok(r, "groups");
    r.Clear();
    r.mutable_delete_stream()->set_name(name);
    if (s.ok(r, "delete " + name)) tally_.count("stream created and deleted");
  }
}

// Five new connections a second, each saying Hello and asking for health, then going away.
void Workers::churn_connections() {
  Pacer pace(stop_, 5);
  while (pace.wait()) {
    WireClient c(options_.port);
    if (!c.connected()) {
      tally_.error("connection churn: cannot connect");
      continue;
    }
    v1::Request r;
    r.mutable_health();
    if (!c.call(r).has_health()) tally_.error("connection churn: no health answer");
    tally_.count("connection");
  }
}

}  // namespace streamd::soak
