#include "server/storage/read_result.h"

#include <cstddef>

#include "server/storage/record_reader.h"

namespace streamd {

Offset entry_end(const EntryView& e) {
  return e.whole_batch > 0 ? peek_header(e.batch).end_offset() : e.offset + 1;
}

WholeBatch take_whole_batch(const BatchHeader& h, std::string_view batch, Timestamp appended_at,
                            uint32_t& records_left, uint64_t& bytes_left, ReadResult& out) {
  if (h.version < batch_format::kVersion2 || h.base_offset < out.next_from || h.record_count == 0 ||
      h.record_count > records_left) {
    return WholeBatch::kRecords;
  }
  // Its record region bounds its records' bytes from above.
  const uint64_t region = batch.size() - h.header_size();
  if (region > bytes_left && !out.entries.empty()) {
    records_left = 0;
    return WholeBatch::kSpent;
  }
  EntryView& e = out.entries.emplace_back();
  e.offset = h.base_offset;
  e.appended_at = appended_at;
  e.batch = batch;
  e.whole_batch = h.record_count;
  bytes_left = region > bytes_left ? 0 : bytes_left - region;
  records_left -= h.record_count;
  out.next_from = h.end_offset();
  return WholeBatch::kTaken;
}

bool expand_whole_batch(ReadResult& read, size_t i, Offset end) {
  const EntryView whole = read.entries[i];
  std::vector<EntryView> records;
  records.reserve(whole.whole_batch);
  RecordReader reader(whole.batch);
  RecordView r;
  while (reader.next(r) && r.offset < end) records.push_back(make_entry(r, whole.appended_at, whole.batch));
  if (reader.error()) return false;
  const auto at = read.entries.erase(read.entries.begin() + static_cast<std::ptrdiff_t>(i));
  read.entries.insert(at, records.begin(), records.end());
  return true;
}

Status check_read_start(const Bounds& bounds, Offset from) {
  if (from < bounds.first) {
    return Status::of(Code::kOffsetTrimmed, {{"requested", from.str()}, {"first", bounds.first.str()}});
  }
  if (from > bounds.next) {
    return Status::of(Code::kOffsetAhead, {{"requested", from.str()}, {"next", bounds.next.str()}});
  }
  return Status();
}

}  // namespace streamd
