// Pages of records across a stream's partitions, for the record browser and the API's reads
// (docs/HTTP.md §Records): from the earliest, the latest, an offset or a time; oldest-first, or
// newest-first in true append order across partitions — merged by appended_at, the broker's own
// clock, which never goes backwards along a partition — with cursors to page on and to tail from.
//
// A cursor is text, "PARTITION:OFFSET" pairs joined by commas ("0:120,1:55"), so it fits a URL. In
// oldest-first order it names where each partition goes on; newest-first, the offset each
// partition's older records end before.
//
// read_page() reads logs: it runs on a worker thread, never the loop. Pure otherwise.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/broker/broker.h"
#include "server/storage/status.h"

namespace streamd::http_api {

using Cursor = std::map<int32_t, uint64_t>;  // partition → offset

std::string format_cursor(const Cursor& cursor);
// STREAM_MISCONFIGURED (field `cursor`) for anything but "P:O[,P:O…]".
Result<Cursor> parse_cursor(std::string_view text);

enum class PageOrder { kOldest, kNewest };

struct PageRequest {
  std::string stream;
  std::optional<int32_t> partition;  // nullopt: every partition (unless `cursor` names some)
  // Where to start when there is no cursor: "earliest", "latest", an offset, or an RFC 3339 time.
  std::string from = "latest";
  std::optional<Cursor> cursor;
  std::optional<PageOrder> order;  // nullopt: newest-first from "latest", oldest-first otherwise
  uint32_t limit = 50;
};

struct PageEntry {
  PartitionId partition;
  EntryView entry;
};

struct Page {
  PageOrder order = PageOrder::kOldest;
  std::vector<PageEntry> entries;
  Cursor more;  // oldest-first: where each partition goes on; newest-first: where older ones end
  Cursor tail;  // each partition's next offset when read: where a live tail starts
  std::vector<ReadResult> owners;  // keeps the bytes the entries view
  uint64_t records = 0;            // entries read from the logs, taken or not
  uint64_t bytes = 0;
};

Result<Page> read_page(const Broker& broker, const PageRequest& request);

// The page as the API answers it: {"order","records":[…],"more","tail"}.
std::string page_json(const Page& page);

}  // namespace streamd::http_api
