// The protocol requests the crash harness sends (docs/PROTOCOL.md), built from its own types, and the
// one question every answer is asked first.
#pragma once

#include <cstdint>
#include <string>

#include "streamd.pb.h"
#include "tests/crash/ledger.h"

namespace streamd::crash {

// True when the broker answered (with a body or an error); false when the connection gave nothing.
bool answered(const v1::Response& response);

// With the batch's stamp and partition when it has one.
v1::Request append_of(const Batch& batch);
v1::Request init_producer();
v1::Request read_of(const std::string& stream, int32_t partition, uint64_t from, int32_t max_records,
                    uint32_t wait_ms);
v1::Request bounds_of(const std::string& stream, int32_t partition);
v1::Request trim_of(const std::string& stream, int32_t partition, uint64_t before);
v1::Request commit_of(const std::string& stream, const std::string& group, int32_t partition, uint64_t next);
v1::Request committed_of(const std::string& stream, const std::string& group, int32_t partition);
v1::Request list_groups_of(const std::string& stream);
v1::Request list_streams();
v1::Request describe_of(const std::string& stream);
v1::Request create_of(const std::string& stream, int32_t partitions, int64_t segment_bytes);
v1::Request delete_of(const std::string& stream);

}  // namespace streamd::crash
