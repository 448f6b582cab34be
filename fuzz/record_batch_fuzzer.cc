// The on-disk batch decoder (server/storage/record_batch.h) over hostile bytes: check_batch() must
// classify any byte string without reading past it, and RecordReader must walk any batch that passed
// it without reading past the batch, yielding offsets that strictly increase inside the batch's range.
// Input: a flags byte (bit 0: repair the CRCs first, fuzz_support.h), then the bytes at a log position.
#include <cstdlib>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "server/storage/record_batch.h"
#include "server/storage/record_reader.h"

using namespace streamd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Split in = fuzz::split_flags(data, size);
  if (in.flags & 1) fuzz::repair_batch_crcs(in.rest);
  // Exactly the input's bytes, in their own allocation: ASan sees any read past them.
  std::vector<char> bytes(in.rest.begin(), in.rest.end());
  const std::string_view view(bytes.data(), bytes.size());

  size_t pos = 0;
  while (pos < view.size()) {
    BatchHeader header;
    std::string reason;
    const BatchCheck check = check_batch(view.substr(pos), header, &reason);
    if (check != BatchCheck::kOk) break;
    if (header.total_size() > view.size() - pos) std::abort();  // kOk promises the whole batch is there

    RecordReader reader(view.substr(pos, header.total_size()));
    RecordView record;
    uint64_t records = 0;
    bool first = true;
    Offset previous;
    while (reader.next(record)) {
      if (record.offset < header.base_offset || record.offset > header.last_offset()) std::abort();
      if (!first && !(previous < record.offset)) std::abort();
      previous = record.offset;
      first = false;
      ++records;
    }
    if (!reader.error() && records != header.record_count) std::abort();
    pos += header.total_size();
  }
  return 0;
}
