// Stored batches as a Fetch answers them (docs/KAFKA.md §Record batches): each stored batch becomes one
// Kafka v2 batch. A version 2 batch's record region is Kafka's record encoding already and goes out as
// it is, behind a Kafka header built from the stored one; a version 1 batch, and a batch whose offsets
// must start elsewhere than it does, is encoded anew from the entries a read returned.
//
// Timestamps follow the topic's type (Policy::timestamp_type): CreateTime sends the records' create
// times where the batch has them; LogAppendTime, and any batch without create times, sends appended_at
// in milliseconds as base and max timestamp with the LogAppendTime attribute.
//
// Plain byte work, no I/O; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/policy.h"
#include "server/storage/read_result.h"

namespace streamd::kafka {

// One Kafka batch of a Fetch answer.
struct FetchBatch {
  // The read's entries from this batch (count may be 0: a batch that only moves a consumer past holes),
  // and the records they hold (a batch read whole is one entry).
  const EntryView* entries = nullptr;
  size_t count = 0;
  size_t records = 0;
  // The stored batch as it is (entries[0].batch), sent with its record region verbatim; empty: encode
  // `entries` anew at base_offset.
  std::string_view stored;
  int64_t base_offset = 0;  // the stored batch's, or where a re-encoded one starts
  // The Kafka batch's last offset: at least its last record's, further to move a consumer past holes.
  int64_t last_offset = 0;
};

// The bytes of `batch` in a Fetch answer.
size_t fetch_batch_size(const FetchBatch& batch, TimestampType type);

// Appends `batch` to `out`. A stored batch whose record region is at least `splice_from` bytes long
// has only its header appended, and the region is returned, to be sent right after it by the caller
// (a gathered write, without copying it); otherwise the whole batch is appended and the return is
// empty. A stored batch's CRC is its stored CRC carried over to the new header (crc32c_shift), so the
// region is not read again here, and damage to it on the way still fails the client's check.
std::string_view encode_fetch_batch(std::string& out, const FetchBatch& batch, TimestampType type,
                                    size_t splice_from = SIZE_MAX);
// The region encode_fetch_batch returns for `batch` rather than appending it; empty when it appends all.
std::string_view spliced_region(const FetchBatch& batch, size_t splice_from);

// The batches of one partition's read, in order, for a fetch from fetch_offset: one per stored batch,
// the first encoded anew to start at fetch_offset when that falls in a compaction hole before its stored
// batch (kafkajs skips the record a first batch starts at when it starts after the offset asked for),
// the last reaching past trailing holes up to read.next_from - 1. A read with holes only gives one empty
// batch that moves the consumer past them; a read of nothing, none.
std::vector<FetchBatch> fetch_batches(const ReadResult& read, int64_t fetch_offset);

// A read in ReadShape::kBatches whose first batch is to be encoded anew (it starts after fetch_offset,
// above) needs that batch's records: its whole-batch entry is replaced by an entry per record.
// False when they do not parse.
bool expand_moved_start(ReadResult& read, int64_t fetch_offset);

}  // namespace streamd::kafka
