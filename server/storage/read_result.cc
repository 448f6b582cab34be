#include "server/storage/read_result.h"

namespace streamd {

Offset entry_end(const EntryView& e) {
  return e.whole_batch > 0 ? peek_header(e.batch).end_offset() : e.offset + 1;
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
