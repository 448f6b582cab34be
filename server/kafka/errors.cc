#include "server/kafka/errors.h"

namespace streamd::kafka {

std::string_view error_name(Error e) {
  switch (e) {
    case Error::kUnknownServerError: return "UNKNOWN_SERVER_ERROR";
    case Error::kNone: return "NONE";
    case Error::kOffsetOutOfRange: return "OFFSET_OUT_OF_RANGE";
    case Error::kCorruptMessage: return "CORRUPT_MESSAGE";
    case Error::kUnknownTopicOrPartition: return "UNKNOWN_TOPIC_OR_PARTITION";
    case Error::kLeaderNotAvailable: return "LEADER_NOT_AVAILABLE";
    case Error::kNotLeaderOrFollower: return "NOT_LEADER_OR_FOLLOWER";
    case Error::kRequestTimedOut: return "REQUEST_TIMED_OUT";
    case Error::kMessageTooLarge: return "MESSAGE_TOO_LARGE";
    case Error::kOffsetMetadataTooLarge: return "OFFSET_METADATA_TOO_LARGE";
    case Error::kCoordinatorNotAvailable: return "COORDINATOR_NOT_AVAILABLE";
    case Error::kNotCoordinator: return "NOT_COORDINATOR";
    case Error::kInvalidTopicException: return "INVALID_TOPIC_EXCEPTION";
    case Error::kIllegalGeneration: return "ILLEGAL_GENERATION";
    case Error::kInconsistentGroupProtocol: return "INCONSISTENT_GROUP_PROTOCOL";
    case Error::kInvalidGroupId: return "INVALID_GROUP_ID";
    case Error::kUnknownMemberId: return "UNKNOWN_MEMBER_ID";
    case Error::kInvalidSessionTimeout: return "INVALID_SESSION_TIMEOUT";
    case Error::kRebalanceInProgress: return "REBALANCE_IN_PROGRESS";
    case Error::kTopicAuthorizationFailed: return "TOPIC_AUTHORIZATION_FAILED";
    case Error::kGroupAuthorizationFailed: return "GROUP_AUTHORIZATION_FAILED";
    case Error::kClusterAuthorizationFailed: return "CLUSTER_AUTHORIZATION_FAILED";
    case Error::kUnsupportedSaslMechanism: return "UNSUPPORTED_SASL_MECHANISM";
    case Error::kIllegalSaslState: return "ILLEGAL_SASL_STATE";
    case Error::kUnsupportedVersion: return "UNSUPPORTED_VERSION";
    case Error::kTopicAlreadyExists: return "TOPIC_ALREADY_EXISTS";
    case Error::kInvalidPartitions: return "INVALID_PARTITIONS";
    case Error::kInvalidReplicationFactor: return "INVALID_REPLICATION_FACTOR";
    case Error::kInvalidReplicaAssignment: return "INVALID_REPLICA_ASSIGNMENT";
    case Error::kInvalidConfig: return "INVALID_CONFIG";
    case Error::kInvalidRequest: return "INVALID_REQUEST";
    case Error::kUnsupportedForMessageFormat: return "UNSUPPORTED_FOR_MESSAGE_FORMAT";
    case Error::kPolicyViolation: return "POLICY_VIOLATION";
    case Error::kOutOfOrderSequenceNumber: return "OUT_OF_ORDER_SEQUENCE_NUMBER";
    case Error::kInvalidProducerEpoch: return "INVALID_PRODUCER_EPOCH";
    case Error::kInvalidTxnState: return "INVALID_TXN_STATE";
    case Error::kInvalidProducerIdMapping: return "INVALID_PRODUCER_ID_MAPPING";
    case Error::kInvalidTransactionTimeout: return "INVALID_TRANSACTION_TIMEOUT";
    case Error::kConcurrentTransactions: return "CONCURRENT_TRANSACTIONS";
    case Error::kTransactionalIdAuthorizationFailed: return "TRANSACTIONAL_ID_AUTHORIZATION_FAILED";
    case Error::kSecurityDisabled: return "SECURITY_DISABLED";
    case Error::kOperationNotAttempted: return "OPERATION_NOT_ATTEMPTED";
    case Error::kKafkaStorageError: return "KAFKA_STORAGE_ERROR";
    case Error::kSaslAuthenticationFailed: return "SASL_AUTHENTICATION_FAILED";
    case Error::kGroupIdNotFound: return "GROUP_ID_NOT_FOUND";
    case Error::kNonEmptyGroup: return "NON_EMPTY_GROUP";
    case Error::kMemberIdRequired: return "MEMBER_ID_REQUIRED";
    case Error::kFencedInstanceId: return "FENCED_INSTANCE_ID";
    case Error::kElectionNotNeeded: return "ELECTION_NOT_NEEDED";
    case Error::kGroupSubscribedToTopic: return "GROUP_SUBSCRIBED_TO_TOPIC";
    case Error::kInvalidRecord: return "INVALID_RECORD";
    case Error::kProducerFenced: return "PRODUCER_FENCED";
    case Error::kUnsupportedEndpointType: return "UNSUPPORTED_ENDPOINT_TYPE";
  }
  return "UNKNOWN_SERVER_ERROR";
}

Error from_status(const Status& status) {
  switch (status.code()) {
    case Code::kOk:
      return Error::kNone;
    case Code::kStreamNotFound:
    case Code::kUnknownPartition:
      return Error::kUnknownTopicOrPartition;
    case Code::kRecordTooLarge:
      return Error::kMessageTooLarge;
    case Code::kOffsetTrimmed:
    case Code::kOffsetAhead:
      return Error::kOffsetOutOfRange;
    case Code::kInvalidBatchSize:
      return Error::kCorruptMessage;
    case Code::kPartitionsMixed:
      return Error::kInvalidRecord;
    case Code::kStreamFull:
      // Retriable: the stream had no room within block_timeout; retention or a trim makes room.
      return Error::kRequestTimedOut;
    case Code::kStreamExists:
      return Error::kTopicAlreadyExists;
    case Code::kStreamMisconfigured: {
      const std::string field = status.field("field");
      if (field == "name") return Error::kInvalidTopicException;
      if (field == "partitions") return Error::kInvalidPartitions;
      if (field == "group") return Error::kInvalidGroupId;
      return Error::kInvalidConfig;
    }
    case Code::kStreamBackendFailed:
      // A write whose outcome is unknown (the database went away before answering its COMMIT) may be
      // kept. Clients read KAFKA_STORAGE_ERROR as "not written": librdkafka's idempotent producer then
      // bumps its epoch at the next sequence gap and sends the batch again under the new epoch, where
      // no broker can recognise it. REQUEST_TIMED_OUT is Kafka's "possibly written": the batch is
      // resent at its own sequence and answered as the duplicate it is.
      if (status.field("outcome") == "unknown") return Error::kRequestTimedOut;
      return Error::kKafkaStorageError;
    case Code::kStreamDirectoryUnusable:
      return Error::kKafkaStorageError;
    case Code::kUnavailable:
      return Error::kNotLeaderOrFollower;
    case Code::kUnknownGroup:
      return Error::kGroupIdNotFound;
    case Code::kPermissionDenied:
      return Error::kTopicAuthorizationFailed;
    case Code::kOutOfOrderSequence:
      return Error::kOutOfOrderSequenceNumber;
    // Produce's answer to a stale epoch; PRODUCER_FENCED (90) exists only in transactional APIs' later
    // versions.
    case Code::kProducerFenced:
      return Error::kInvalidProducerEpoch;
    case Code::kInvalidTxnState:
      return Error::kInvalidTxnState;
    case Code::kInvalidProducerIdMapping:
      return Error::kInvalidProducerIdMapping;
    case Code::kInvalidTransactionTimeout:
      return Error::kInvalidTransactionTimeout;
    case Code::kConcurrentTransactions:
      return Error::kConcurrentTransactions;
    // Kafka has no limit on ids; a client retries this one until an idle id expires or its own timeout.
    case Code::kTooManyTransactionalIds:
      return Error::kCoordinatorNotAvailable;
    default:
      return Error::kUnknownServerError;
  }
}

Error txn_error(const Status& status, int16_t version, int16_t fenced_from) {
  if (status.ok()) return Error::kNone;
  if (status.code() == Code::kProducerFenced && version >= fenced_from) return Error::kProducerFenced;
  return from_status(status);
}

}  // namespace streamd::kafka
