#include "server/storage/isolation.h"

#include <algorithm>

#include "server/storage/record_batch.h"

namespace streamd {
namespace {

uint8_t attributes_of(std::string_view batch) {
  // Version 1 batches have no attributes (record_batch.h).
  if (batch.size() < batch_format::kMinHeaderSize ||
      static_cast<uint8_t>(batch[batch_format::kVersionOffset]) < batch_format::kVersion2) {
    return 0;
  }
  return static_cast<uint8_t>(batch[batch_format::kAttributesOffset]);
}

bool aborted_batch(std::string_view batch, const std::vector<AbortedTxn>& aborted) {
  const BatchHeader h = peek_header(batch);
  return std::any_of(aborted.begin(), aborted.end(), [&](const AbortedTxn& a) {
    return a.producer_id == h.producer.id && a.first <= h.base_offset && h.base_offset < a.marker;
  });
}

}  // namespace

bool any_transactional(const ReadResult& read) {
  const char* seen = nullptr;
  for (const EntryView& e : read.entries) {
    if (e.batch.data() == seen) continue;
    seen = e.batch.data();
    if ((attributes_of(e.batch) & batch_format::kAttributeTransactional) != 0) return true;
  }
  return false;
}

void apply_isolation(ReadResult& read, Offset from, Isolation isolation, Offset limit,
                     const std::vector<AbortedTxn>& aborted) {
  const bool committed = isolation == Isolation::kReadCommitted;
  std::vector<EntryView>& entries = read.entries;
  size_t kept = 0;
  const char* batch = nullptr;  // the batch the decision below is for: entries of one batch are adjacent
  bool drop_batch = false;
  for (size_t i = 0; i < entries.size(); ++i) {
    EntryView& e = entries[i];
    if (committed && e.offset >= limit) break;
    if (e.batch.data() != batch) {
      batch = e.batch.data();
      const uint8_t attributes = attributes_of(e.batch);
      drop_batch = (attributes & batch_format::kAttributeControl) != 0 ||
                   (committed && (attributes & batch_format::kAttributeTransactional) != 0 &&
                    !aborted.empty() && aborted_batch(e.batch, aborted));
    }
    if (drop_batch) continue;
    if (kept != i) entries[kept] = std::move(e);
    ++kept;
  }
  entries.resize(kept);
  if (committed && read.next_from > limit) read.next_from = std::max(from, limit);
}

}  // namespace streamd
