// Kafka's error codes (the ones this listener answers with) and the mapping from streamd's own
// (docs/KAFKA.md §Errors gives the table and the reasons for each choice).
#pragma once

#include <cstdint>
#include <string_view>

#include "server/storage/status.h"

namespace streamd::kafka {

enum class Error : int16_t {
  kUnknownServerError = -1,
  kNone = 0,
  kOffsetOutOfRange = 1,
  kCorruptMessage = 2,
  kUnknownTopicOrPartition = 3,
  kLeaderNotAvailable = 5,
  kNotLeaderOrFollower = 6,
  kRequestTimedOut = 7,
  kMessageTooLarge = 10,
  kOffsetMetadataTooLarge = 12,
  kCoordinatorNotAvailable = 15,
  kNotCoordinator = 16,
  kInvalidTopicException = 17,
  kIllegalGeneration = 22,
  kInconsistentGroupProtocol = 23,
  kInvalidGroupId = 24,
  kUnknownMemberId = 25,
  kInvalidSessionTimeout = 26,
  kRebalanceInProgress = 27,
  kTopicAuthorizationFailed = 29,
  kGroupAuthorizationFailed = 30,
  kClusterAuthorizationFailed = 31,
  kUnsupportedSaslMechanism = 33,
  kIllegalSaslState = 34,
  kUnsupportedVersion = 35,
  kTopicAlreadyExists = 36,
  kInvalidPartitions = 37,
  kInvalidReplicationFactor = 38,
  kInvalidReplicaAssignment = 39,
  kInvalidConfig = 40,
  kInvalidRequest = 42,
  kUnsupportedForMessageFormat = 43,
  kPolicyViolation = 44,
  kOutOfOrderSequenceNumber = 45,
  kInvalidProducerEpoch = 47,
  kInvalidTxnState = 48,
  kInvalidProducerIdMapping = 49,
  kInvalidTransactionTimeout = 50,
  kConcurrentTransactions = 51,
  kTransactionalIdAuthorizationFailed = 53,
  kSecurityDisabled = 54,
  kOperationNotAttempted = 55,
  kKafkaStorageError = 56,
  kSaslAuthenticationFailed = 58,
  kGroupIdNotFound = 69,
  kNonEmptyGroup = 68,
  kMemberIdRequired = 79,
  kFencedInstanceId = 82,
  kElectionNotNeeded = 84,
  kGroupSubscribedToTopic = 86,
  kInvalidRecord = 87,
  kProducerFenced = 90,
  kUnsupportedEndpointType = 119,
};

inline int16_t code(Error e) { return static_cast<int16_t>(e); }

// Kafka's name for an error, for logs and metric labels ("UNKNOWN_TOPIC_OR_PARTITION").
std::string_view error_name(Error e);

// The Kafka error a client is told for a streamd refusal.
Error from_status(const Status& status);
// The same for a transaction API at `version`: PRODUCER_FENCED from `fenced_from` on, where that API's
// schema has it, else INVALID_PRODUCER_EPOCH; NONE for OK.
Error txn_error(const Status& status, int16_t version, int16_t fenced_from);

}  // namespace streamd::kafka
