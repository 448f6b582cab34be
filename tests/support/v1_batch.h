// The version 1 batch encoder as streamd wrote batches before version 2 (docs/FORMAT.md §"Version 1"),
// kept byte for byte for tests: data directories and PostgreSQL rows written by earlier releases hold
// such batches, and every reader must go on reading them. The result is unsealed, as BatchBuilder's is;
// seal_batch() (the same for both versions) seals it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/storage/coding.h"
#include "server/storage/record_batch.h"

namespace streamd::testing {

class V1BatchBuilder {
 public:
  V1BatchBuilder() : buf_(batch_format::kV1HeaderSize, '\0') {}

  void add(const Record& r) { add_at(count_, r); }
  // At an explicit delta (as version 1's compaction wrote survivors). Deltas must increase.
  void add_at(uint32_t offset_delta, const Record& r) {
    coding::append_varint(buf_, offset_delta);
    coding::append_varint(buf_, r.key.size());
    buf_.append(r.key);
    coding::append_varint(buf_, r.payload.size());
    buf_.append(r.payload);
    coding::append_varint(buf_, r.headers.size());
    for (const auto& [name, value] : r.headers) {
      coding::append_varint(buf_, name.size());
      buf_.append(name);
      coding::append_varint(buf_, value.size());
      buf_.append(value);
    }
    ++count_;
    if (!any_ || offset_delta > last_delta_) last_delta_ = offset_delta;
    any_ = true;
  }
  void set_last_delta(uint32_t last_delta) { last_delta_ = last_delta; }

  std::string finish() && {
    char* p = buf_.data();
    coding::put_fixed32(p + batch_format::kLengthOffset, static_cast<uint32_t>(buf_.size() - 4));
    p[batch_format::kVersionOffset] = static_cast<char>(batch_format::kVersion1);
    p[batch_format::kAttributesOffset] = 0;
    coding::put_fixed32(p + batch_format::kLastDeltaOffset, last_delta_);
    coding::put_fixed32(p + batch_format::kCountOffset, count_);
    return std::move(buf_);
  }

 private:
  std::string buf_;
  uint32_t count_ = 0;
  uint32_t last_delta_ = 0;
  bool any_ = false;
};

inline std::string v1_batch(const std::vector<Record>& records) {
  V1BatchBuilder b;
  for (const Record& r : records) b.add(r);
  return std::move(b).finish();
}

}  // namespace streamd::testing
