// The one table of errors (docs/SEMANTICS.md §"Errors"): every error the broker can report, with its
// wire code, HTTP status and streamctl exit code. It is part of the wire contract, so it lives in proto/
// beside placement.h and both sides expand it: the broker's Code enum, Status names and the protocol's
// Error message; the client's ErrorCode enum, its table and the CLI's exit codes. Header-only, no
// Protobuf.
#pragma once

// X(Enumerator, NAME, code, http, exit, default message)
#define STREAMD_ERRORS(X)                                                                                      \
  X(kStreamMisconfigured, "STREAM_MISCONFIGURED", 0x00022601u, 400, 78,                                       \
    "The stream policy is not one this engine can honour")                                                    \
  X(kRecordTooLarge, "RECORD_TOO_LARGE", 0x00022602u, 413, 78,                                                \
    "The record exceeds the stream's configured maximum size")                                                \
  X(kOffsetTrimmed, "OFFSET_TRIMMED", 0x00022603u, 409, 65, "The requested records are no longer retained")   \
  X(kOffsetAhead, "OFFSET_AHEAD", 0x00022604u, 409, 65, "The requested offset is past the end of the stream") \
  X(kUnknownPartition, "UNKNOWN_PARTITION", 0x00022605u, 400, 65, "The stream has no such partition")        \
  X(kInvalidBatchSize, "INVALID_BATCH_SIZE", 0x00022606u, 400, 78, "The batch size is not a positive number") \
  X(kStreamFull, "STREAM_FULL", 0x00022607u, 503, 75, "The stream is full")                                   \
  X(kUnknownGroup, "UNKNOWN_GROUP", 0x00022608u, 404, 66, "The consumer group has no committed offset")       \
  X(kPartitionsMixed, "PARTITIONS_MIXED", 0x00022609u, 400, 65,                                               \
    "The batch's records belong to different partitions")                                                     \
  X(kStreamBackendFailed, "STREAM_BACKEND_FAILED", 0x00035E01u, 500, 74, "The stream's storage failed")       \
  X(kStreamDirectoryUnusable, "STREAM_DIRECTORY_UNUSABLE", 0x00035E02u, 500, 78,                              \
    "The stream directory cannot be used")                                                                    \
  X(kSqlStreamMisconfigured, "SQL_STREAM_MISCONFIGURED", 0x00035E03u, 500, 78,                               \
    "The SQL stream configuration is not usable")                                                             \
  X(kSubscriberMisconfigured, "SUBSCRIBER_MISCONFIGURED", 0x00035E04u, 400, 78,                               \
    "The stream subscriber configuration is not usable")                                                      \
  X(kStreamNotFound, "STREAM_NOT_FOUND", 0x00040101u, 404, 66, "The stream does not exist")                   \
  X(kStreamExists, "STREAM_EXISTS", 0x00040102u, 409, 73, "The stream already exists")                        \
  X(kUnauthenticated, "UNAUTHENTICATED", 0x00040103u, 401, 77, "The request carries no valid credentials")    \
  X(kPermissionDenied, "PERMISSION_DENIED", 0x00040104u, 403, 77, "The credentials do not allow this request") \
  X(kProtocolError, "PROTOCOL_ERROR", 0x00040105u, 400, 76, "The request does not follow the protocol")       \
  X(kFrameTooLarge, "FRAME_TOO_LARGE", 0x00040106u, 413, 76, "The frame exceeds the broker's frame limit")    \
  X(kUnavailable, "UNAVAILABLE", 0x00040107u, 503, 69, "The broker is not available")                       \
  X(kOutOfOrderSequence, "OUT_OF_ORDER_SEQUENCE", 0x00040108u, 409, 65,                                      \
    "The batch's sequence does not follow the producer's last batch on this partition")                      \
  X(kProducerFenced, "PRODUCER_FENCED", 0x00040109u, 409, 65,                                                \
    "A newer epoch of this producer id has written to the partition")                                         \
  X(kInvalidTxnState, "INVALID_TXN_STATE", 0x0004010Au, 409, 65,                                             \
    "The batch does not fit the state of its producer's transaction on this partition")                     \
  X(kConcurrentTransactions, "CONCURRENT_TRANSACTIONS", 0x0004010Bu, 409, 75,                                \
    "The transactional id's previous transaction is still being ended; retry")                               \
  X(kInvalidProducerIdMapping, "INVALID_PRODUCER_ID_MAPPING", 0x0004010Cu, 409, 65,                          \
    "The producer id is not the one the transactional id holds")                                            \
  X(kInvalidTransactionTimeout, "INVALID_TRANSACTION_TIMEOUT", 0x0004010Du, 400, 78,                         \
    "The transaction timeout is not above zero and at most limits.max_transaction_timeout")               \
  X(kTransactionalIdNotFound, "TRANSACTIONAL_ID_NOT_FOUND", 0x0004010Eu, 404, 66,                          \
    "The coordinator holds no such transactional id")                                                        \
  X(kTooManyTransactionalIds, "TOO_MANY_TRANSACTIONAL_IDS", 0x0004010Fu, 503, 75,                          \
    "The coordinator holds limits.max_transactional_ids ids: a new one waits for one to expire")
