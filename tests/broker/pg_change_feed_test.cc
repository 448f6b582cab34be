// The payloads of the postgres engine's NOTIFYs (server/broker/pg/pg_change_feed.h).
#include "server/broker/pg/pg_change_feed.h"

#include <catch2/catch.hpp>

namespace streamd {
namespace {

PgHead sample_head() {
  PgHead h;
  h.first = Offset(7);
  h.next = Offset(1234567890123ull);
  h.bytes = 99999;
  h.last_at = Timestamp{1764800000123456};
  h.active_base = Offset(1234567000000ull);
  h.active_bytes = 4096;
  h.active_min_at = Timestamp{1764800000000001};
  h.segments = 12;
  h.first_open = Offset(1234567000100ull);
  return h;
}

TEST_CASE("a head sent in a NOTIFY payload reads back whole", "[postgres][notify]") {
  const std::string p = pg_changes::payload(
      "123.0", {pg_changes::head_item(42, 3, sample_head()), pg_changes::head_item(43, 0, PgHead{})});
  pg_changes::Decoded d;
  pg_changes::decode(p, d);
  CHECK_FALSE(d.refresh);
  CHECK_FALSE(d.joined);
  REQUIRE(d.heads.size() == 2);
  CHECK(d.heads[0].stream_id == 42);
  CHECK(d.heads[0].part == 3);
  const PgHead& h = d.heads[0].head;
  const PgHead want = sample_head();
  CHECK(h.first == want.first);
  CHECK(h.next == want.next);
  CHECK(h.bytes == want.bytes);
  CHECK(h.last_at.micros == want.last_at.micros);
  CHECK(h.active_base == want.active_base);
  CHECK(h.active_bytes == want.active_bytes);
  CHECK(h.active_min_at.micros == want.active_min_at.micros);
  CHECK(h.segments == want.segments);
  CHECK(h.first_open == want.first_open);
  CHECK(d.heads[1].stream_id == 43);
  CHECK_FALSE(d.heads[1].head.first_open);
}

TEST_CASE("a NOTIFY payload without heads asks for a refresh", "[postgres][notify]") {
  for (const char* payload : {"123.0", "123.0|r", "123.0|j", "123.0|h1.2.3", "123.0|hx.0.0.0.0.0.0.0.0.0",
                              "123.0|h1.0.5.4.0.0.0.0.0.1.-1", "123.0|h1.0.0.4.0.0.0.0.0.1", "123.0|what"}) {
    INFO(payload);
    pg_changes::Decoded d;
    pg_changes::decode(payload, d);
    CHECK(d.refresh);
    CHECK(d.heads.empty());
  }
  pg_changes::Decoded joined;
  pg_changes::decode("123.0|j", joined);
  CHECK(joined.joined);
}

TEST_CASE("a NOTIFY payload that would be too long says r instead", "[postgres][notify]") {
  std::vector<std::string> items;
  for (int32_t p = 0; p < 1000; ++p) items.push_back(pg_changes::head_item(1, p, sample_head()));
  const std::string payload = pg_changes::payload("123.0", items);
  CHECK(payload == "123.0|r");
  CHECK(pg_changes::payload("123.0", {items[0]}).size() < pg_changes::kMaxPayload);
}

}  // namespace
}  // namespace streamd
