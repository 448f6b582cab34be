// What a read returns: entries that view record bytes owned by the result itself.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/record_batch.h"
#include "server/storage/types.h"

namespace streamd {

// One record as a read returns it; views point into ReadResult::buffers.
struct EntryView {
  Offset offset;
  Timestamp appended_at;
  std::string_view key;
  std::string_view payload;
  std::vector<HeaderView> headers;
};

struct ReadResult {
  std::vector<EntryView> entries;
  // Where the reader continues: past the last entry returned, or past compaction holes scanned.
  Offset next_from;
  // Owns the bytes the entries view. Heap-allocated so moving the result keeps the views valid;
  // plain arrays because a read buffer is filled by pread, and zero-filling it first would be waste.
  std::vector<std::unique_ptr<char[]>> buffers;
};

}  // namespace streamd
