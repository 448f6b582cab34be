#include "server/broker/batch_entries.h"

#include "server/storage/record_reader.h"

namespace streamd {

bool take_batch_entries(std::string_view batch, Timestamp appended_at, ReadBudget& budget, ReadResult& out,
                        ReadShape shape) {
  if (shape == ReadShape::kBatches && batch.size() >= batch_format::kMinHeaderSize) {
    switch (take_whole_batch(peek_header(batch), batch, appended_at, budget.records_left, budget.bytes_left,
                             out)) {
      case WholeBatch::kTaken:
        return true;
      case WholeBatch::kSpent:
        return false;
      case WholeBatch::kRecords:
        break;
    }
  }
  RecordReader records(batch);
  bool used = false;
  while (budget.records_left > 0) {
    EntryView& e = out.entries.emplace_back();
    if (!records.next(e)) {
      out.entries.pop_back();
      break;
    }
    if (e.offset < out.next_from) {
      out.entries.pop_back();
      continue;
    }
    const uint64_t size = record_size(e.key, e.payload, e.headers);
    if (size > budget.bytes_left && out.entries.size() > 1) {
      out.entries.pop_back();
      budget.records_left = 0;
      break;
    }
    e.appended_at = appended_at;
    e.batch = batch;
    budget.bytes_left = size > budget.bytes_left ? 0 : budget.bytes_left - size;
    out.next_from = e.offset + 1;
    --budget.records_left;
    used = true;
  }
  return used;
}

}  // namespace streamd
