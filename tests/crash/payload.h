// The records the crash harness appends: each one names its batch, its place in the batch and the
// stream incarnation it was sent to, and the rest of its bytes follow from those, so a record read back
// is checked byte for byte without the harness keeping what it sent.
//
// Payload: "b=<batch> i=<index>/<count> s=<stream>#<incarnation> |" then filler; the filler's length
// (0 to 16 KiB, rarely 200 KiB, more rarely just under 1 MiB) and bytes come from a hash of the batch and index. Key: key_for().
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace streamd::crash {

struct RecordId {
  uint64_t batch = 0;
  uint32_t index = 0;
  uint32_t count = 0;
  std::string stream;
  uint64_t incarnation = 0;
};

std::string make_payload(const RecordId& id);
// The id a payload claims; nullopt when it is not one of ours or its bytes do not match it.
std::optional<RecordId> parse_payload(std::string_view payload);
// The key every record of `batch` carries: one of 64, so that batches spread over the partitions and
// a key's batches share one.
std::string key_for(uint64_t batch);

}  // namespace streamd::crash
