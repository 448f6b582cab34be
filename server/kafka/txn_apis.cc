// Kafka's transaction APIs (docs/KAFKA.md §Transactions) over the broker's coordinator
// (server/broker/txn/txn_coordinator.h): AddPartitionsToTxn 0-2, AddOffsetsToTxn 0-2, EndTxn 0-2 and
// TxnOffsetCommit 0-3. Each answers once the coordinator has made its change durable, from the loop.
// PRODUCER_FENCED exists from AddPartitionsToTxn, AddOffsetsToTxn and EndTxn v2 (InitProducerId v4);
// older versions are answered INVALID_PRODUCER_EPOCH, as Kafka answers them. An engine without
// transactions is COORDINATOR_NOT_AVAILABLE.
#include <memory>
#include <string>
#include <vector>

#include "server/broker/broker.h"
#include "server/kafka/handlers.h"
#include "server/kafka/kafka_metrics.h"
#include "server/storage/group_offsets.h"

namespace streamd::kafka {
namespace {

struct TxnTopicPartitions {
  std::string name;
  std::vector<int32_t> partitions;
  std::vector<Error> errors;
};

// The answer of an API whose whole answer is one error code: AddOffsetsToTxn, EndTxn. On the loop.
void send_error(Services& services, const Responder& responder, ApiKey api, Error error) {
  services.metrics.error(api, error);
  std::string frame = responder.start();
  Writer w(frame);
  w.i32(0);  // throttle time
  w.i16(code(error));
  responder.send(std::move(frame));
}

void answer_error(Request& request, ApiKey api, Error error) {
  send_error(request.services, request.responder, api, error);
}

// answer_error() with the coordinator's outcome, from a coordinator's thread.
std::function<void(Status)> answer_later(Request& request, ApiKey api, int16_t fenced_from) {
  return [&services = request.services, responder = request.responder, api, version = request.version(),
          fenced_from](Status s) {
    const Error error = txn_error(s, version, fenced_from);
    services.loop.post([&services, responder, api, error] { send_error(services, responder, api, error); });
  };
}

// Per topic and partition errors, as AddPartitionsToTxn and TxnOffsetCommit answer them.
std::string topic_errors(const Responder& responder, bool flexible,
                         const std::vector<TxnTopicPartitions>& topics) {
  std::string frame = responder.start();
  Writer w(frame, flexible);
  w.i32(0);  // throttle time
  w.array(static_cast<int32_t>(topics.size()));
  for (const TxnTopicPartitions& t : topics) {
    w.str(t.name);
    w.array(static_cast<int32_t>(t.partitions.size()));
    for (size_t i = 0; i < t.partitions.size(); ++i) {
      w.i32(t.partitions[i]);
      w.i16(code(t.errors[i]));
      w.tags();
    }
    w.tags();
  }
  w.tags();
  return frame;
}

// Fills every partition's error with `error`, counting each.
void set_all(std::vector<TxnTopicPartitions>& topics, Error error, Services& services, ApiKey api) {
  for (TxnTopicPartitions& t : topics) {
    t.errors.assign(t.partitions.size(), error);
    for (size_t i = 0; i < t.partitions.size(); ++i) services.metrics.error(api, error);
  }
}

// Answers every partition of `topics` with the coordinator's outcome `s`, from the loop.
struct TxnTopicsAnswer {
  Services& services;
  Responder responder;
  ApiKey api;
  int16_t version;
  int16_t fenced_from;
  bool flexible;
  std::vector<TxnTopicPartitions> topics;

  void operator()(const Status& s) {
    services.loop.post([answer = std::move(*this), error = txn_error(s, version, fenced_from)]() mutable {
      set_all(answer.topics, error, answer.services, answer.api);
      answer.responder.send(topic_errors(answer.responder, answer.flexible, answer.topics));
    });
  }
};

}  // namespace

bool handle_add_partitions_to_txn(Request& request) {
  Reader& r = request.body;
  const std::string id(r.string());
  const ProducerIdentity producer{r.i64(), r.i16()};
  std::vector<TxnTopicPartitions> topics(static_cast<size_t>(r.count(6)));
  for (TxnTopicPartitions& t : topics) {
    t.name = std::string(r.string());
    t.partitions.resize(static_cast<size_t>(r.count(4)));
    for (int32_t& p : t.partitions) p = r.i32();
  }
  if (r.failed()) return false;
  Services& services = request.services;
  TxnCoordinator* txns = services.broker.transactions();
  // Every partition is checked before any is added: one refused, the rest are not attempted.
  bool refused = txns == nullptr;
  std::vector<TxnPartition> added;
  for (TxnTopicPartitions& t : topics) {
    t.errors.assign(t.partitions.size(), Error::kNone);
    for (size_t i = 0; i < t.partitions.size(); ++i) {
      if (txns == nullptr) {
        t.errors[i] = Error::kCoordinatorNotAvailable;
      } else if (!request.principal.allows(auth::Right::kWrite, t.name)) {
        t.errors[i] = Error::kTopicAuthorizationFailed;
      } else if (auto ends = services.broker.ends(t.name, PartitionId(t.partitions[i])); !ends.ok()) {
        t.errors[i] = from_status(ends.status());
      } else {
        added.push_back({t.name, t.partitions[i]});
        continue;
      }
      refused = true;
    }
  }
  if (refused) {
    for (TxnTopicPartitions& t : topics) {
      for (Error& e : t.errors) {
        if (e == Error::kNone) e = Error::kOperationNotAttempted;
        services.metrics.error(ApiKey::kAddPartitionsToTxn, e);
      }
    }
    request.responder.send(topic_errors(request.responder, false, topics));
    return true;
  }
  // Answered once durable: the client produces to these partitions only after the answer, perhaps to
  // a broker restarted meanwhile, which must still hold them in the transaction (JoinAnswer).
  txns->add_partitions(id, producer, std::move(added),
                       TxnTopicsAnswer{services, request.responder, ApiKey::kAddPartitionsToTxn,
                                       request.version(), 2, false, std::move(topics)},
                       JoinAnswer::kWhenDurable);
  return true;
}

bool handle_add_offsets_to_txn(Request& request) {
  Reader& r = request.body;
  const std::string id(r.string());
  const ProducerIdentity producer{r.i64(), r.i16()};
  std::string group(r.string());
  if (r.failed()) return false;
  TxnCoordinator* txns = request.services.broker.transactions();
  if (txns == nullptr) {
    answer_error(request, ApiKey::kAddOffsetsToTxn, Error::kCoordinatorNotAvailable);
    return true;
  }
  if (group.empty() || group.size() > kMaxGroupNameBytes) {
    answer_error(request, ApiKey::kAddOffsetsToTxn, Error::kInvalidGroupId);
    return true;
  }
  txns->add_group(id, producer, std::move(group), answer_later(request, ApiKey::kAddOffsetsToTxn, 2));
  return true;
}

bool handle_end_txn(Request& request) {
  Reader& r = request.body;
  const std::string id(r.string());
  const ProducerIdentity producer{r.i64(), r.i16()};
  const bool commit = r.boolean();
  if (r.failed()) return false;
  TxnCoordinator* txns = request.services.broker.transactions();
  if (txns == nullptr) {
    answer_error(request, ApiKey::kEndTxn, Error::kCoordinatorNotAvailable);
    return true;
  }
  txns->end(id, producer, commit, answer_later(request, ApiKey::kEndTxn, 2));
  return true;
}

bool handle_txn_offset_commit(Request& request) {
  Reader& r = request.body;
  const int16_t version = request.version();
  const std::string id(r.str());
  std::string group(r.str());
  const ProducerIdentity producer{r.i64(), r.i16()};
  if (version >= 3) {
    r.i32();           // generation id: the group's membership is not checked against it
    r.str();           // member id
    r.nullable_str();  // group instance id
  }
  std::vector<TxnTopicPartitions> topics(static_cast<size_t>(r.array(6)));
  std::vector<TxnOffset> offsets;
  bool too_large = false;
  for (TxnTopicPartitions& t : topics) {
    t.name = std::string(r.str());
    t.partitions.resize(static_cast<size_t>(r.array(12)));
    for (int32_t& p : t.partitions) {
      p = r.i32();
      const int64_t next = r.i64();
      if (version >= 2) r.i32();  // committed leader epoch
      const std::optional<std::string_view> metadata = r.nullable_str();
      r.tags();
      const std::string_view kept = metadata.value_or(std::string_view());
      too_large = too_large || kept.size() > kMaxCommitMetadataBytes;
      TxnOffset o;
      o.group = group;
      o.at.stream = t.name;
      o.at.partition = p;
      o.next = Offset(static_cast<uint64_t>(std::max<int64_t>(next, 0)));
      o.metadata = std::string(kept);
      offsets.push_back(std::move(o));
    }
    r.tags();
  }
  r.tags();
  if (r.failed()) return false;
  Services& services = request.services;
  const bool flexible = request.flexible();
  TxnCoordinator* txns = services.broker.transactions();
  Error refusal = Error::kNone;
  if (txns == nullptr)
    refusal = Error::kCoordinatorNotAvailable;
  else if (group.empty() || group.size() > kMaxGroupNameBytes)
    refusal = Error::kInvalidGroupId;
  else if (too_large)
    refusal = Error::kOffsetMetadataTooLarge;
  for (const TxnTopicPartitions& t : topics) {
    // Committing a group's offsets on a topic takes the right to read it, as OffsetCommit does.
    if (refusal == Error::kNone && !request.principal.allows(auth::Right::kRead, t.name)) {
      refusal = Error::kTopicAuthorizationFailed;
    }
  }
  if (refusal != Error::kNone) {
    set_all(topics, refusal, services, ApiKey::kTxnOffsetCommit);
    request.responder.send(topic_errors(request.responder, flexible, topics));
    return true;
  }
  // TxnOffsetCommit has no PRODUCER_FENCED in the versions served: INVALID_PRODUCER_EPOCH.
  txns->stage_offsets(id, producer, group, std::move(offsets),
                      TxnTopicsAnswer{services, request.responder, ApiKey::kTxnOffsetCommit, version,
                                      INT16_MAX, flexible, std::move(topics)});
  return true;
}

}  // namespace streamd::kafka
