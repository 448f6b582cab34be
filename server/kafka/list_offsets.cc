// ListOffsets 0-3: -1 (latest) is the partition's next offset (from version 2 at isolation level 1, its
// last stable offset: docs/TRANSACTIONS.md), -2 (earliest) its first, and any other
// timestamp (milliseconds) is Broker::offset_for_time by the topic's message.timestamp.type: the first
// record whose timestamp is at or after it, answered with that timestamp, or offset -1 and timestamp -1
// when every record's is earlier, as Kafka answers (docs/KAFKA.md §ListOffsets). The lookup may touch
// the disk: the whole request runs on `readers`.
#include <memory>
#include <string>
#include <vector>

#include "server/broker/broker.h"
#include "server/kafka/handlers.h"
#include "server/kafka/kafka_metrics.h"

namespace streamd::kafka {
namespace {

constexpr int64_t kLatest = -1;
constexpr int64_t kEarliest = -2;

struct Query {
  int32_t index = 0;
  int64_t timestamp = 0;
  Error error = Error::kNone;
  int64_t offset = -1;
  int64_t found_timestamp = -1;  // the record's, for a lookup by time
};

struct Topic {
  std::string name;
  std::vector<Query> partitions;
};

void resolve(Broker& broker, const std::string& topic, Isolation isolation, Query& q) {
  auto ends = broker.ends(topic, PartitionId(q.index));
  if (!ends.ok()) {
    q.error = from_status(ends.status());
    return;
  }
  if (q.timestamp == kLatest) {
    q.offset = static_cast<int64_t>(
        (isolation == Isolation::kReadCommitted ? ends->last_stable : ends->bounds.next).value);
  } else if (q.timestamp == kEarliest) {
    q.offset = static_cast<int64_t>(ends->bounds.first.value);
  } else if (q.timestamp < 0) {
    q.error = Error::kInvalidRequest;
  } else {
    auto at = broker.offset_for_time(topic, PartitionId(q.index), q.timestamp);
    if (!at.ok()) {
      q.error = from_status(at.status());
      return;
    }
    if (*at) {
      q.offset = static_cast<int64_t>((*at)->offset.value);
      q.found_timestamp = (*at)->millis;
    }
  }
}

}  // namespace

bool handle_list_offsets(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  r.i32();  // replica id
  const Isolation isolation =
      version >= 2 && r.i8() == 1 ? Isolation::kReadCommitted : Isolation::kReadUncommitted;
  auto topics = std::make_shared<std::vector<Topic>>(static_cast<size_t>(r.count(6)));
  for (Topic& t : *topics) {
    t.name = std::string(r.string());
    t.partitions.resize(static_cast<size_t>(r.count(12)));
    for (Query& q : t.partitions) {
      q.index = r.i32();
      q.timestamp = r.i64();
      if (version == 0) r.i32();  // max_num_offsets: one offset is answered
    }
    if (r.failed()) return false;
  }
  if (r.failed()) return false;
  Services& services = request.services;
  for (Topic& t : *topics) {
    // Offsets are where reading starts: they take the read right.
    if (request.principal.allows(auth::Right::kRead, t.name)) continue;
    for (Query& q : t.partitions) q.error = Error::kTopicAuthorizationFailed;
  }
  services.readers.post([&services, topics, version, isolation, responder = request.responder] {
    for (Topic& t : *topics) {
      for (Query& q : t.partitions) {
        if (q.error == Error::kNone) resolve(services.broker, t.name, isolation, q);
        services.metrics.error(ApiKey::kListOffsets, q.error);
      }
    }
    std::string frame = responder.start();
    Writer w(frame);
    if (version >= 2) w.i32(0);  // throttle time
    w.array_count(static_cast<int32_t>(topics->size()));
    for (const Topic& t : *topics) {
      w.string(t.name);
      w.array_count(static_cast<int32_t>(t.partitions.size()));
      for (const Query& q : t.partitions) {
        w.i32(q.index);
        w.i16(code(q.error));
        if (version == 0) {
          if (q.error == Error::kNone && q.offset >= 0) {
            w.array_count(1);
            w.i64(q.offset);
          } else {
            w.array_count(0);
          }
        } else {
          w.i64(q.error == Error::kNone ? q.found_timestamp : -1);
          w.i64(q.error == Error::kNone ? q.offset : -1);
        }
      }
    }
    services.loop.post([responder, frame = std::move(frame)]() mutable { responder.send(std::move(frame)); });
  });
  return true;
}

}  // namespace streamd::kafka
