#include "tests/ha/failover_load.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "proto/placement.h"
#include "tests/integration/batch_payload.h"
#include "tests/integration/wire_client.h"
#include "tests/support/text_file.h"

namespace streamd::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

SteadyTime from_monotonic_ns(int64_t ns) {
  // steady_clock is CLOCK_MONOTONIC on Linux, as Python's time.monotonic_ns() is.
  return SteadyTime(std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(ns)));
}

// The producer's identity from the broker; nullopt when it gave none in time (its database away).
std::optional<v1::InitProducerResponse> init_producer(WireClient& client, milliseconds timeout) {
  v1::Request request;
  request.mutable_init_producer();
  const uint64_t id = client.send(request);
  if (id == 0) return std::nullopt;
  std::optional<v1::Response> r = client.wait_for(id, timeout);
  if (!r || !r->has_init_producer()) return std::nullopt;
  return r->init_producer();
}

}  // namespace

NativeProducers::NativeProducers(std::string stream, int32_t partitions, std::vector<uint16_t> ports, int producers,
                                 milliseconds pause, milliseconds answer_timeout)
    : stream_(std::move(stream)),
      partitions_(partitions),
      ports_(std::move(ports)),
      producers_(producers),
      pause_(pause),
      answer_timeout_(answer_timeout) {}

NativeProducers::~NativeProducers() { stop(); }

void NativeProducers::start() {
  for (int p = 0; p < producers_; ++p) threads_.emplace_back([this, p] { run(p); });
}

void NativeProducers::stop() {
  stopping_ = true;
  for (auto& t : threads_) t.join();
  threads_.clear();
}

std::vector<Attempt> NativeProducers::attempts() const {
  std::lock_guard lock(mu_);
  return attempts_;
}

void NativeProducers::run(int producer) {
  const uint16_t port = ports_[static_cast<size_t>(producer) % ports_.size()];
  std::unique_ptr<WireClient> client;
  std::optional<v1::InitProducerResponse> identity;  // one for the whole run, across reconnects
  std::map<int32_t, int32_t> next_sequence;            // per partition
  for (int seq = 0; !stopping_; ++seq) {
    const int count = 1 + (producer + seq) % 4;
    const std::string key = "k" + std::to_string(producer) + "." + std::to_string(seq % 3);
    const int32_t partition = placement::partition_of(key, partitions_);
    std::vector<TestRecord> records;
    for (int i = 0; i < count; ++i) records.push_back({key, payload_of(producer, seq, i, count), {}});
    v1::Request request = append_request(stream_, records);
    request.mutable_append()->set_partition(partition);
    // The same batch, at the same sequence, until it is acknowledged: a real producer does not drop a
    // record it was given, and the broker answers a copy it already holds with the original's offsets.
    for (bool acked = false; !acked && !stopping_;) {
      if (!client || !client->connected()) client = std::make_unique<WireClient>(port);
      if (client->connected() && !identity) identity = init_producer(*client, answer_timeout_);
      if (!client->connected() || !identity) {
        client.reset();  // the broker or its database is away: nothing was sent
        std::this_thread::sleep_for(milliseconds(20));
        continue;
      }
      v1::ProducerSequence* stamp = request.mutable_append()->mutable_producer();
      stamp->set_producer_id(identity->producer_id());
      stamp->set_epoch(identity->epoch());
      stamp->set_sequence(next_sequence[partition]);
      Attempt a;
      a.producer = producer;
      a.seq = seq;
      a.records = count;
      a.sent = Clock::now();
      const uint64_t id = client->send(request);
      std::optional<v1::Response> r;
      if (id != 0) r = client->wait_for(id, answer_timeout_);
      a.answered = Clock::now();
      if (!r) {
        // The connection closed (a broker killed) or nothing came back in time: either way the
        // batch may have been kept. Only the second is a request left hanging.
        a.unknown = true;
        a.hung = id != 0 && a.answered - a.sent >= answer_timeout_ - milliseconds(100);
        client.reset();
      } else if (r->has_append()) {
        a.acked = r->append().last() - r->append().first() + 1 == static_cast<uint64_t>(count);
        if (!a.acked) a.error = "ACK_OF_WRONG_SIZE";
        a.partition = r->append().partition();
        a.first = r->append().first();
        acked = a.acked;
      } else {
        a.error = r->has_error() ? r->error().name() : "EMPTY_RESPONSE";
        const auto& fields = r->error().fields();
        const auto outcome = fields.find("outcome");
        a.unknown = outcome != fields.end() && outcome->second == "unknown";
      }
      {
        std::lock_guard lock(mu_);
        attempts_.push_back(a);
      }
      if (!acked) std::this_thread::sleep_for(milliseconds(20));
    }
    next_sequence[partition] += count;
    if (pause_.count() > 0) std::this_thread::sleep_for(pause_);
  }
}

KafkaProducerProcess::KafkaProducerProcess(std::string script, uint16_t port, std::string topic, int id,
                                           int pause_ms, std::string out_path)
    : script_(std::move(script)),
      port_(port),
      topic_(std::move(topic)),
      id_(id),
      pause_ms_(pause_ms),
      out_path_(std::move(out_path)) {}

KafkaProducerProcess::~KafkaProducerProcess() { (void)stop(); }

void KafkaProducerProcess::start() {
  const std::string bootstrap = "127.0.0.1:" + std::to_string(port_);
  const std::string id = std::to_string(id_);
  const std::string pause = std::to_string(pause_ms_);
  const char* python = "/usr/bin/python3";
  const char* argv[] = {python, script_.c_str(), bootstrap.c_str(), topic_.c_str(), id.c_str(), pause.c_str(), nullptr};
  const char* env[] = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", nullptr};
  const pid_t parent = ::getpid();
  const int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int err = ::open((out_path_ + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    ::execve(python, const_cast<char* const*>(argv), const_cast<char* const*>(env));
    ::_exit(127);
  }
  ::close(out);
  ::close(err);
}

bool KafkaProducerProcess::stop() {
  if (pid_ <= 0) return true;
  (void)::kill(pid_, SIGTERM);
  // It flushes what it holds: at most message.timeout.ms (kafka_producer.py), far less once the
  // brokers answer.
  const auto deadline = Clock::now() + std::chrono::seconds(150);
  int status = 0;
  bool clean = false;
  for (;;) {
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      break;
    }
    if (r < 0 || Clock::now() > deadline) {
      (void)::kill(pid_, SIGKILL);
      (void)::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  pid_ = -1;
  return clean;
}

std::vector<Attempt> KafkaProducerProcess::attempts() const {
  std::vector<Attempt> out;
  std::ifstream in(out_path_);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    Attempt a;
    a.producer = id_;
    a.records = 1;
    int64_t sent = 0;
    int64_t answered = 0;
    if (kind == "ack") {
      int64_t offset = 0;
      words >> a.seq >> a.partition >> offset >> sent >> answered;
      a.offset_known = offset >= 0;
      a.first = a.offset_known ? static_cast<uint64_t>(offset) : 0;
      a.acked = true;
    } else if (kind == "err") {
      words >> a.seq >> a.error >> sent >> answered;
      a.unknown = true;  // librdkafka may have retried it after the broker kept it
    } else {
      continue;
    }
    if (words.fail()) continue;  // a line cut short by a kill
    a.sent = from_monotonic_ns(sent);
    a.answered = from_monotonic_ns(answered);
    out.push_back(a);
  }
  return out;
}

int KafkaProducerProcess::requests_timed_out() const {
  std::ifstream in(out_path_);
  std::string line;
  int n = -1;
  while (std::getline(in, line)) {
    if (line.rfind("requests_timed_out ", 0) == 0) n = std::stoi(line.substr(19));
  }
  return n;
}

std::string KafkaProducerProcess::log_tail(size_t bytes) const {
  return last_bytes(read_text_file(out_path_ + ".err").value_or(""), bytes);
}

}  // namespace streamd::testing
