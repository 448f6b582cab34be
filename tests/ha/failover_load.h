// The failover test's load (tests/ha/failover_test.cc): producers that keep appending while the
// database under the brokers fails over, recording every attempt with the instants it was sent and
// answered, so that the checks can tell what was acknowledged, what was refused, what went
// unanswered, and how long no append was acknowledged.
//
// Every record's payload names its producer and batch ("p3.b17.i2.n4": producer 3, batch 17, record
// 2 of 4), so the log read back tells which batch each record belongs to (failover_check.h).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace streamd::testing {

using SteadyTime = std::chrono::steady_clock::time_point;

// One attempt to append one batch.
struct Attempt {
  int producer = 0;
  int seq = 0;
  int records = 0;
  bool acked = false;
  int32_t partition = -1;  // where its answer put it
  uint64_t first = 0;
  // False when the acknowledgement named no offset: librdkafka acknowledges a batch answered "possibly
  // written" implicitly once a later one is written, without its offset.
  bool offset_known = true;
  std::string error;       // the error's name when refused
  bool unknown = false;    // no answer, or an answer saying the outcome is unknown: it may be kept
  bool hung = false;       // no answer within the client's timeout on a connection that stayed open
  SteadyTime sent;
  SteadyTime answered;
};

// Idempotent native producers spread over brokers: producer i appends through ports[i % ports.size()],
// one batch at a time, `pause` apart, each batch to its key's partition of `partitions`, stamped with
// the producer's id and its sequence there. A batch not acknowledged is sent again, at the same
// sequence, until it is: the broker keeps it once whatever the answers lost (failover_check.h).
class NativeProducers {
 public:
  NativeProducers(std::string stream, int32_t partitions, std::vector<uint16_t> ports, int producers,
                  std::chrono::milliseconds pause, std::chrono::milliseconds answer_timeout);
  ~NativeProducers();
  void start();
  void stop();  // and join
  std::vector<Attempt> attempts() const;
  int producers() const { return producers_; }

 private:
  void run(int producer);

  const std::string stream_;
  const int32_t partitions_;
  const std::vector<uint16_t> ports_;
  const int producers_;
  const std::chrono::milliseconds pause_;
  const std::chrono::milliseconds answer_timeout_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::vector<Attempt> attempts_;
  std::vector<std::thread> threads_;
};

// tests/ha/kafka_producer.py (confluent-kafka) as a child process writing its delivery reports to a
// file: producer `id`'s records through the Kafka listener at `port`.
class KafkaProducerProcess {
 public:
  KafkaProducerProcess(std::string script, uint16_t port, std::string topic, int id, int pause_ms,
                       std::string out_path);
  ~KafkaProducerProcess();
  void start();
  // SIGTERM, then waits for it to flush and exit (bounded); false when it had to be killed.
  bool stop();
  // Its delivery reports so far.
  std::vector<Attempt> attempts() const;
  // From its last line once stopped: produce requests that went unanswered; -1 before it says.
  int requests_timed_out() const;
  // The last `bytes` of its standard error: librdkafka's log (its idempotence state changes).
  std::string log_tail(size_t bytes) const;
  int id() const { return id_; }

 private:
  const std::string script_;
  const uint16_t port_;
  const std::string topic_;
  const int id_;
  const int pause_ms_;
  const std::string out_path_;
  pid_t pid_ = -1;
};

}  // namespace streamd::testing
