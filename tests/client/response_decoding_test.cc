#include "client/response_decoding.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "client/wire.h"
#include "streamd.pb.h"

namespace streamd::client {
namespace {

std::string random_bytes(std::mt19937& rng, size_t max) {
  std::string out(rng() % (max + 1), '\0');
  for (char& c : out) c = static_cast<char>(rng() % 256);
  return out;
}

v1::ReadResponse random_read_response(std::mt19937& rng) {
  v1::ReadResponse response;
  const int partitions = static_cast<int>(rng() % 4);
  for (int p = 0; p < partitions; ++p) {
    v1::PartitionRead* part = response.add_partitions();
    part->set_partition(p == 3 ? -7 : static_cast<int32_t>(rng() % 100));
    uint64_t offset = rng() % 2 == 0 ? rng() : (uint64_t{1} << 40) + rng();
    const int entries = static_cast<int>(rng() % 5);
    for (int e = 0; e < entries; ++e) {
      v1::Entry* entry = part->add_entries();
      entry->set_partition(part->partition());
      entry->set_offset(offset);
      offset += 1 + rng() % 3;  // compaction holes
      entry->set_appended_at_us(rng() % 2 == 0 ? -static_cast<int64_t>(rng())
                                               : static_cast<int64_t>(rng()) << 20);
      entry->mutable_record()->set_key(random_bytes(rng, 20));
      entry->mutable_record()->set_payload(random_bytes(rng, rng() % 4 == 0 ? 400 : 30));
      for (uint32_t h = rng() % 3; h > 0; --h) {
        v1::Header* header = entry->mutable_record()->add_headers();
        header->set_name("h" + std::to_string(rng() % 1000));  // a string field: UTF-8
        header->set_value(random_bytes(rng, 10));
      }
    }
    part->set_next_from(offset + rng() % 2);
    if (entries == 0 && rng() % 3 == 0) {
      part->mutable_error()->set_code(static_cast<uint32_t>(ErrorCode::kOffsetTrimmed));
      part->mutable_error()->set_name("OFFSET_TRIMMED");
      part->mutable_error()->set_message("gone");
      (*part->mutable_error()->mutable_fields())["first"] = "12";
      (*part->mutable_error()->mutable_fields())["requested"] = "3";
    }
  }
  return response;
}

// What the Consumer did with the generated parser: entries, next cursors, the first error.
ReadAnswer expected(const v1::ReadResponse& response) {
  ReadAnswer out;
  for (const v1::PartitionRead& part : response.partitions()) {
    if (part.has_error() && part.error().code() != 0 && !out.error) {
      out.error = wire::from_proto(part.error());
      out.error->with("partition", std::to_string(part.partition()));
    }
    uint64_t next = part.next_from();
    for (const v1::Entry& e : part.entries()) out.entries.push_back(wire::from_proto(e));
    if (part.entries_size() > 0) next = std::max(next, part.entries(part.entries_size() - 1).offset() + 1);
    out.next.emplace_back(part.partition(), next);
  }
  return out;
}

void check_same(const ReadAnswer& got, const ReadAnswer& want) {
  REQUIRE(got.entries.size() == want.entries.size());
  for (size_t i = 0; i < got.entries.size(); ++i) {
    CHECK(got.entries[i].partition == want.entries[i].partition);
    CHECK(got.entries[i].offset == want.entries[i].offset);
    CHECK(got.entries[i].appended_at_us == want.entries[i].appended_at_us);
    CHECK(got.entries[i].record == want.entries[i].record);
  }
  CHECK(got.next == want.next);
  REQUIRE(got.error.has_value() == want.error.has_value());
  if (got.error) CHECK(got.error->to_string() == want.error->to_string());
}

TEST_CASE("Read answers decode as the generated parser reads them") {
  std::mt19937 rng(20261129);
  for (int round = 0; round < 500; ++round) {
    const v1::ReadResponse response = random_read_response(rng);
    ReadAnswer got;
    REQUIRE(decode_read_response(response.SerializeAsString(), &got));
    check_same(got, expected(response));
  }
}

TEST_CASE("fields a newer broker adds are skipped") {
  v1::ReadResponse response;
  v1::PartitionRead* part = response.add_partitions();
  part->set_partition(1);
  part->add_entries()->set_offset(5);
  part->mutable_entries(0)->mutable_record()->set_payload("p");
  part->set_next_from(6);
  std::string bytes = response.SerializeAsString();
  // Unknown fields of every wire type at the top level: varint 20, fixed64 21, bytes 22, fixed32 23.
  bytes += std::string("\xa0\x01\x96\x01", 4);
  bytes += std::string("\xa9\x01", 2) + std::string(8, '\x01');
  bytes += std::string("\xb2\x01\x03xyz", 6);
  bytes += std::string("\xbd\x01", 2) + std::string(4, '\x02');
  ReadAnswer got;
  REQUIRE(decode_read_response(bytes, &got));
  REQUIRE(got.entries.size() == 1);
  CHECK(got.entries[0].offset == 5);
  CHECK(got.entries[0].record.payload == "p");
  CHECK(got.next == std::vector<std::pair<int32_t, uint64_t>>{{1, 6}});
}

TEST_CASE("malformed Read answers are refused, never read past their end") {
  std::mt19937 rng(7);
  const std::string good = random_read_response(rng).SerializeAsString() + "\x0a\x05\x08\x01\x18\x02";
  for (size_t cut = 1; cut < good.size(); ++cut) {
    ReadAnswer got;
    // A prefix either parses (it ended on a field boundary) or is refused; it must not crash.
    (void)decode_read_response(good.substr(0, cut), &got);
  }
  ReadAnswer got;
  CHECK_FALSE(decode_read_response(std::string("\x0a\x10\x08", 3), &got));  // length past the end
  CHECK_FALSE(decode_read_response(std::string("\x00\x01", 2), &got));      // field 0
  CHECK_FALSE(decode_read_response(std::string("\x0b", 1), &got));          // group wire type
  CHECK_FALSE(decode_read_response(std::string(11, '\xff'), &got));         // varint over 10 bytes
}

TEST_CASE("the Response envelope: id, error and body without parsing the body") {
  v1::Response response;
  response.set_id(300);
  response.mutable_read()->add_partitions()->set_partition(2);
  const std::string bytes = response.SerializeAsString();
  ResponseView view;
  REQUIRE(scan_response(bytes, &view));
  CHECK(view.id == 300);
  CHECK(view.error.empty());
  CHECK(view.body_field == 16);
  CHECK(view.body == response.read().SerializeAsString());

  v1::Response refused;
  refused.set_id(9);
  refused.mutable_error()->set_code(static_cast<uint32_t>(ErrorCode::kOffsetAhead));
  refused.mutable_error()->set_message("past the end");
  (*refused.mutable_error()->mutable_fields())["next"] = "10";
  const std::string refused_bytes = refused.SerializeAsString();
  ResponseView refused_view;
  REQUIRE(scan_response(refused_bytes, &refused_view));
  CHECK(refused_view.id == 9);
  CHECK(refused_view.body_field == 0);
  auto error = decode_error(refused_view.error);
  REQUIRE(error.has_value());
  CHECK(error->to_string() == "OFFSET_AHEAD: past the end (next=10)");  // the name comes from the code
}

}  // namespace
}  // namespace streamd::client
