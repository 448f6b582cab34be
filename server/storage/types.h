// Strong types for the numbers of the storage layer, so that a file position cannot be passed where an
// offset belongs (each is a distinct type; mixing them does not compile).
#pragma once

#include <compare>
#include <cstdint>
#include <string>

namespace streamd {

// A record's position in its partition (docs/SEMANTICS.md §1): consecutive from 0, never reused.
struct Offset {
  uint64_t value = 0;

  constexpr Offset() = default;
  constexpr explicit Offset(uint64_t v) : value(v) {}
  constexpr auto operator<=>(const Offset&) const = default;
  constexpr Offset operator+(uint64_t n) const { return Offset(value + n); }
  constexpr Offset operator-(uint64_t n) const { return Offset(value - n); }
  // Distance between two offsets; callers ensure *this >= other.
  constexpr uint64_t operator-(Offset other) const { return value - other.value; }
  std::string str() const { return std::to_string(value); }
};

// An offset relative to its segment's base offset, as the sparse index stores it.
struct RelativeOffset {
  uint32_t value = 0;
  constexpr RelativeOffset() = default;
  constexpr explicit RelativeOffset(uint32_t v) : value(v) {}
  constexpr auto operator<=>(const RelativeOffset&) const = default;
};

// A byte position inside one segment's log file.
struct FilePosition {
  uint64_t value = 0;
  constexpr FilePosition() = default;
  constexpr explicit FilePosition(uint64_t v) : value(v) {}
  constexpr auto operator<=>(const FilePosition&) const = default;
  constexpr FilePosition operator+(uint64_t n) const { return FilePosition(value + n); }
};

// Partition number within a stream, 0..partitions-1.
struct PartitionId {
  int32_t value = 0;
  constexpr PartitionId() = default;
  constexpr explicit PartitionId(int32_t v) : value(v) {}
  constexpr auto operator<=>(const PartitionId&) const = default;
};

// Broker wall-clock instant, microseconds since the Unix epoch (UTC). Every record of a batch shares
// one; within a partition they never decrease (the writer clamps a clock that steps back).
struct Timestamp {
  int64_t micros = 0;
  constexpr Timestamp() = default;
  constexpr explicit Timestamp(int64_t us) : micros(us) {}
  constexpr auto operator<=>(const Timestamp&) const = default;
};

// A producer's own timestamp for a record (Kafka's CreateTime), milliseconds since the Unix epoch as the
// producer's clock said: any value, in any order along a partition, unlike the broker's Timestamp.
struct CreateTime {
  int64_t millis = 0;
  constexpr CreateTime() = default;
  constexpr explicit CreateTime(int64_t ms) : millis(ms) {}
  constexpr auto operator<=>(const CreateTime&) const = default;
};

// A record found by its time (Kafka's ListOffsets): its offset and the timestamp it was found by, in
// milliseconds.
struct TimedOffset {
  Offset offset;
  int64_t millis = 0;
  constexpr bool operator==(const TimedOffset&) const = default;
};

// Half-open retained range of a partition: [first, next). Empty when first == next.
struct Bounds {
  Offset first;
  Offset next;
  constexpr bool operator==(const Bounds&) const = default;
};

// Where an append landed: offsets of its first and last records.
struct AppendRange {
  Offset first;
  Offset last;
  constexpr bool operator==(const AppendRange&) const = default;
};

}  // namespace streamd
