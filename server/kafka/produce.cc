// Produce 0-7: each partition's record set (whole v2 batches, possibly compressed) becomes one
// streamd batch appended to the partition the producer chose, atomically: a batch refused for any
// record writes nothing. The stored batch keeps the producer's timestamps and nulls, and a single batch's
// record region as it came (record_batch.h). A request with a transactional id carries transactional
// batches, each appended only to a partition added to that producer's open transaction
// (Broker::append_transactional, docs/TRANSACTIONS.md). The answer goes out after the sync whatever acks asks; acks=0
// gets none (docs/KAFKA.md §Produce). A topic the principal may not write is TOPIC_AUTHORIZATION_FAILED for
// each of its partitions, and nothing of it is appended.
#include <spdlog/spdlog.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "server/broker/broker.h"
#include "server/kafka/handlers.h"
#include "server/kafka/kafka_metrics.h"
#include "server/kafka/record_batch.h"

namespace streamd::kafka {
namespace {

struct PartitionResult {
  int32_t index = 0;
  Error error = Error::kNone;
  int64_t base_offset = -1;
  int64_t log_start_offset = -1;
};

struct TopicResult {
  std::string name;
  std::vector<PartitionResult> partitions;
};

struct ProduceState {
  ProduceState(Responder r, Services& s, int16_t v) : responder(std::move(r)), services(s), version(v) {}
  Responder responder;
  Services& services;
  int16_t version;
  bool acks_none = false;
  std::optional<std::string> transactional_id;
  std::vector<TopicResult> topics;
  size_t pending = 0;

  void finish() {
    if (acks_none) {
      return;  // answered (with nothing) when the request was read
    }
    std::string frame = responder.start();
    Writer w(frame);
    w.array_count(static_cast<int32_t>(topics.size()));
    for (const TopicResult& t : topics) {
      w.string(t.name);
      w.array_count(static_cast<int32_t>(t.partitions.size()));
      for (const PartitionResult& p : t.partitions) {
        w.i32(p.index);
        w.i16(code(p.error));
        w.i64(p.base_offset);
        if (version >= 2) w.i64(-1);  // log append time: -1 lets clients keep their own clock's time
        if (version >= 5) w.i64(p.log_start_offset);
      }
    }
    if (version >= 1) w.i32(0);  // throttle time
    responder.send(std::move(frame));
  }
};

void append_partition(const std::shared_ptr<ProduceState>& state, size_t topic, size_t partition,
                      std::string_view records) {
  Services& services = state->services;
  PartitionResult& result = state->topics[topic].partitions[partition];
  const std::string& name = state->topics[topic].name;
  std::vector<KafkaRecord> decoded;
  std::vector<KafkaBatch> batches;
  std::deque<std::string> arena;
  const DecodeResult d = decode_record_set(records, 4 * services.options.max_frame_bytes, decoded, arena, &batches,
                                           state->transactional_id.has_value());
  if (d.error != Error::kNone) {
    spdlog::info("kafka produce to {}/{} refused: {}", name, result.index, d.reason);
    result.error = d.error;
    services.metrics.error(ApiKey::kProduce, d.error);
    return;
  }
  // The stored batch keeps every record's nulls and timestamp; the views below only feed the broker's
  // checks (sizes, placement), which read a null as empty.
  std::string batch = storage_batch(decoded, batches);
  std::vector<RecordInput> inputs(decoded.size());
  uint64_t bytes = 0;
  for (size_t i = 0; i < decoded.size(); ++i) {
    inputs[i].key = decoded[i].key.value_or(std::string_view());
    inputs[i].payload = decoded[i].value.value_or(std::string_view());
    inputs[i].headers = std::move(decoded[i].headers);
    bytes += record_size(inputs[i].key, inputs[i].payload, inputs[i].headers);
  }
  const uint64_t count = inputs.size();
  ++state->pending;
  auto answered = [state, topic, partition, bytes, count](Result<AppendResult> appended) {
    state->services.loop.post([state, topic, partition, bytes, count, appended = std::move(appended)] {
      PartitionResult& r = state->topics[topic].partitions[partition];
      Services& s = state->services;
      if (appended.ok()) {
        r.base_offset = static_cast<int64_t>(appended->range.first.value);
        auto bounds = s.broker.bounds(state->topics[topic].name, PartitionId(r.index));
        if (bounds.ok()) r.log_start_offset = static_cast<int64_t>(bounds->first.value);
        s.metrics.produced_records.inc(count);
        s.metrics.produced_bytes.inc(bytes);
      } else {
        r.error = from_status(appended.status());
        s.metrics.error(ApiKey::kProduce, r.error);
        spdlog::debug("kafka produce to {}/{} refused: {}", state->topics[topic].name, r.index,
                      appended.status().to_string());
      }
      if (--state->pending == 0) state->finish();
    });
  };
  if (state->transactional_id) {
    const ProducerIdentity producer{batches.front().producer.id, batches.front().producer.epoch};
    services.broker.append_transactional(*state->transactional_id, producer, name, PartitionId(result.index),
                                         services.options.enforce_placement, inputs, std::move(batch),
                                         std::move(answered));
    return;
  }
  services.broker.append_batch_to_partition(name, PartitionId(result.index), services.options.enforce_placement,
                                            inputs, std::move(batch), std::move(answered));
}

}  // namespace

bool handle_produce(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  std::optional<std::string_view> transactional_id;
  if (version >= 3) transactional_id = r.nullable_string();
  const int16_t acks = r.i16();
  r.i32();  // timeout: the answer waits for the sync, however long
  auto state = std::make_shared<ProduceState>(request.responder, request.services, version);
  if (transactional_id) state->transactional_id = std::string(*transactional_id);
  state->acks_none = acks == 0;
  // Decode the whole request before appending anything, so a body that does not parse appends nothing.
  struct Part {
    size_t topic, partition;
    std::optional<std::string_view> records;
  };
  std::vector<Part> parts;
  const int32_t topics = r.count(6);
  state->topics.resize(static_cast<size_t>(topics));
  for (int32_t t = 0; t < topics && !r.failed(); ++t) {
    TopicResult& topic = state->topics[static_cast<size_t>(t)];
    topic.name = std::string(r.string());
    const int32_t partitions = r.count(8);
    topic.partitions.resize(static_cast<size_t>(partitions));
    for (int32_t p = 0; p < partitions && !r.failed(); ++p) {
      topic.partitions[static_cast<size_t>(p)].index = r.i32();
      parts.push_back({static_cast<size_t>(t), static_cast<size_t>(p), r.nullable_bytes()});
    }
  }
  if (r.failed()) return false;
  if (state->acks_none) request.responder.send_nothing();
  ++state->pending;  // held until every partition has been handed to the broker
  for (const Part& part : parts) {
    if (!request.principal.allows(auth::Right::kWrite, state->topics[part.topic].name)) {
      state->topics[part.topic].partitions[part.partition].error = Error::kTopicAuthorizationFailed;
      request.services.metrics.error(ApiKey::kProduce, Error::kTopicAuthorizationFailed);
      continue;
    }
    if (!part.records) {
      state->topics[part.topic].partitions[part.partition].error = Error::kCorruptMessage;
      continue;
    }
    append_partition(state, part.topic, part.partition, *part.records);
  }
  if (--state->pending == 0) state->finish();
  return true;
}

}  // namespace streamd::kafka
