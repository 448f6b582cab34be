// Idempotent producers on the PostgreSQL engine (docs/ENGINES.md §"Idempotent producers"): the
// producers' states live in the database, so a batch resent to another broker of the same database —
// as after its first broker died before answering — is recognised there and written once.
#include <catch2/catch.hpp>

#include "tests/integration/broker_group.h"
#include "tests/support/pg_cluster.h"

namespace streamd::testing {
namespace {

v1::Request stamped_on_s0(int64_t producer, int32_t sequence, int records, const std::string& tag) {
  std::vector<TestRecord> batch;
  for (int i = 0; i < records; ++i) batch.push_back({"", tag + "-" + std::to_string(i), {}});
  v1::Request r = append_request("s", batch);
  r.mutable_append()->set_partition(0);
  r.mutable_append()->mutable_producer()->set_producer_id(producer);
  r.mutable_append()->mutable_producer()->set_sequence(sequence);
  return r;
}

uint64_t next_on_s0(WireClient& c) {
  v1::Response b = c.call(bounds_request("s", 0));
  REQUIRE(b.has_bounds());
  return b.bounds().next();
}

TEST_CASE("postgres: a resend to another broker of the database is written once", "[postgres][idempotence]") {
  BrokerGroup brokers(create_database(shared_cluster_dsn()), 2);
  WireClient first(brokers.port(0));
  WireClient second(brokers.port(1));
  REQUIRE(first.call(create_request("s", 1)).has_create_stream());
  v1::Request init;
  init.mutable_init_producer();
  v1::Response id_a = first.call(init);
  v1::Response id_b = second.call(init);
  REQUIRE(id_a.has_init_producer());
  REQUIRE(id_b.has_init_producer());
  // The database's sequence: two brokers never hand out one id.
  CHECK(id_a.init_producer().producer_id() != id_b.init_producer().producer_id());
  const int64_t producer = id_a.init_producer().producer_id();

  v1::Response original = first.call(stamped_on_s0(producer, 0, 3, "b0"));
  REQUIRE(original.has_append());
  REQUIRE(first.call(stamped_on_s0(producer, 3, 2, "b1")).has_append());
  // The first batch again, through the other broker: its offsets, nothing written.
  v1::Response resent = second.call(stamped_on_s0(producer, 0, 3, "b0"));
  REQUIRE(resent.has_append());
  CHECK(resent.append().first() == original.append().first());
  CHECK(resent.append().last() == original.append().last());
  CHECK(next_on_s0(second) == 5);
  // The producer goes on through the other broker, which knows where it is.
  CHECK(error_name(second.call(stamped_on_s0(producer, 9, 1, "gap"))) == "OUT_OF_ORDER_SEQUENCE");
  REQUIRE(second.call(stamped_on_s0(producer, 5, 1, "b2")).has_append());
  // Read through the first broker, which reads the head row at its end (bounds there may lag).
  v1::Response read = first.call(read_request("s", {{0, 5}}));
  REQUIRE(read.has_read());
  REQUIRE(read.read().partitions(0).entries_size() == 1);
  CHECK(read.read().partitions(0).entries(0).record().payload() == "b2-0");
  // And the state outlives both brokers.
  brokers.broker(0).kill9();
  REQUIRE(brokers.broker(0).start());
  WireClient again(brokers.port(0));
  v1::Response after = again.call(stamped_on_s0(producer, 5, 1, "b2"));
  REQUIRE(after.has_append());
  CHECK(after.append().first() == 5);
  CHECK(next_on_s0(again) == 6);
}

}  // namespace
}  // namespace streamd::testing
