#include "server/http_api/record_pages.h"

#include <catch2/catch.hpp>

#include "tests/http_api/memory_broker.h"

namespace streamd::http_api {
namespace {

using testing::MemoryBroker;

// Appends "p<P>-<i>" to partitions in the order given, one microsecond apart.
void fill_in_order(MemoryBroker& b, const std::vector<int32_t>& partitions) {
  int i = 0;
  for (int32_t p : partitions) {
    b.clock.advance(std::chrono::microseconds(1));
    b.append_to("s", p, "p" + std::to_string(p) + "-" + std::to_string(i++));
  }
}

std::vector<std::string> payloads(const Page& page) {
  std::vector<std::string> out;
  for (const PageEntry& e : page.entries) out.emplace_back(e.entry.payload);
  return out;
}

TEST_CASE("newest-first merges partitions in true append order", "[pages]") {
  MemoryBroker b;
  b.create("s", 3);
  fill_in_order(b, {0, 1, 1, 2, 0, 2, 1, 0});
  PageRequest r;
  r.stream = "s";
  r.limit = 5;
  auto page = read_page(*b.broker, r);
  REQUIRE(page.ok());
  CHECK(page->order == PageOrder::kNewest);
  CHECK(payloads(*page) == std::vector<std::string>{"p0-7", "p1-6", "p2-5", "p0-4", "p2-3"});
  CHECK(format_cursor(page->tail) == "0:3,1:3,2:2");
  // Older: from the cursor, the three left.
  r.cursor = page->more;
  r.order = PageOrder::kNewest;
  auto older = read_page(*b.broker, r);
  REQUIRE(older.ok());
  CHECK(payloads(*older) == std::vector<std::string>{"p1-2", "p1-1", "p0-0"});
  r.cursor = older->more;
  CHECK(read_page(*b.broker, r)->entries.empty());
}

TEST_CASE("oldest-first from the earliest, an offset or a time pages forward", "[pages]") {
  MemoryBroker b;
  b.create("s", 2);
  fill_in_order(b, {0, 1, 0, 1, 0});
  PageRequest r;
  r.stream = "s";
  r.from = "earliest";
  r.limit = 2;
  auto first = read_page(*b.broker, r);
  REQUIRE(first.ok());
  CHECK(payloads(*first) == std::vector<std::string>{"p0-0", "p1-1"});
  r.cursor = first->more;
  auto second = read_page(*b.broker, r);
  CHECK(payloads(*second) == std::vector<std::string>{"p0-2", "p1-3"});
  r.cursor = second->more;
  CHECK(payloads(*read_page(*b.broker, r)) == std::vector<std::string>{"p0-4"});

  PageRequest at;
  at.stream = "s";
  at.partition = 0;
  at.from = "1";
  at.order = PageOrder::kOldest;
  CHECK(payloads(*read_page(*b.broker, at)) == std::vector<std::string>{"p0-2", "p0-4"});

  // Instants are the manual clock's start plus 1..5 µs; from the third record's instant on.
  PageRequest t;
  t.stream = "s";
  t.from = "2023-11-14T22:13:20.000003Z";
  CHECK(payloads(*read_page(*b.broker, t)) == std::vector<std::string>{"p0-2", "p1-3", "p0-4"});
}

TEST_CASE("a page refuses what a read refuses", "[pages]") {
  MemoryBroker b;
  b.create("s", 1);
  fill_in_order(b, {0, 0});
  PageRequest r;
  r.stream = "nope";
  CHECK(read_page(*b.broker, r).status().code() == Code::kStreamNotFound);
  r.stream = "s";
  r.partition = 4;
  CHECK(read_page(*b.broker, r).status().code() == Code::kUnknownPartition);
  r.partition.reset();
  r.cursor = Cursor{{0, 9}};
  CHECK(read_page(*b.broker, r).status().code() == Code::kOffsetAhead);
  r.cursor.reset();
  r.from = "soon";
  CHECK(read_page(*b.broker, r).status().field("field") == "from");
  CHECK(parse_cursor("0:1,2:3").value() == Cursor{{0, 1}, {2, 3}});
  for (const char* bad : {"", "0", "a:1", "0:-1", "0:1,", "0:1;1:2"}) {
    INFO(bad);
    CHECK_FALSE(parse_cursor(bad).ok());
  }
}

}  // namespace
}  // namespace streamd::http_api
