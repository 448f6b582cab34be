#include "client/append_encoding.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "client/wire.h"
#include "streamd.pb.h"

namespace streamd::client {
namespace {

// What the generated code writes for the same request, fields after the id.
std::string generated(const std::string& stream, const std::vector<Record>& records) {
  v1::Request request;
  request.mutable_append()->set_stream(stream);
  for (const Record& r : records) wire::to_proto(r, request.mutable_append()->add_records());
  return request.SerializeAsString();
}

std::string encoded(const std::string& stream, const std::vector<Record>& records) {
  std::string buffer;
  for (const Record& r : records) append_encoded_record(&buffer, r);
  return encode_append_head(stream, buffer.size()) + buffer;
}

TEST_CASE("append requests are encoded byte for byte as the generated code encodes them") {
  std::string all_bytes;
  for (int i = 0; i < 256; ++i) all_bytes.push_back(static_cast<char>(i));
  const std::vector<std::vector<Record>> cases = {
      {Record{"k", "v", {}}},
      {Record{"", "", {}}},                                   // empty record: a present, empty message
      {Record{"key", "", {}}},                                // tombstone
      {Record{"", std::string(300, 'p'), {}}},                // two-byte length
      {Record{all_bytes, std::string(70'000, 'x'), {}}},      // three-byte length
      {Record{"k", "v", {{"h", "1"}, {"", ""}, {"n", ""}}}},  // headers, one empty
      {Record{"a", "1", {}}, Record{"", "2", {{"trace", all_bytes}}}, Record{"c", "", {}}},
  };
  for (const auto& records : cases) {
    CHECK(encoded("orders", records) == generated("orders", records));
  }
  CHECK(encoded("", {Record{"k", "v", {}}}) == generated("", {Record{"k", "v", {}}}));
  CHECK(encoded(std::string(200, 's'), {}) == generated(std::string(200, 's'), {}));
}

TEST_CASE("the generated parser reads the encoded request back") {
  std::vector<Record> records;
  for (int i = 0; i < 50; ++i) {
    records.push_back(Record{std::string(static_cast<size_t>(i), 'k'),
                             std::string(static_cast<size_t>(i * 7), 'v'),
                             {{"i", std::to_string(i)}}});
  }
  v1::Request parsed;
  REQUIRE(parsed.ParseFromString(encoded("s", records)));
  REQUIRE(parsed.append().records_size() == 50);
  for (int i = 0; i < 50; ++i)
    CHECK(wire::from_proto(parsed.append().records(i)) == records[static_cast<size_t>(i)]);
}

TEST_CASE("an idempotent producer's stamp is read back by the generated parser") {
  const std::vector<Record> records{Record{"k", "v", {}}, Record{"", "w", {}}};
  std::string buffer;
  for (const Record& r : records) append_encoded_record(&buffer, r);
  for (const AppendStamp& stamp : {AppendStamp{0, 0, 0, 0, {}}, AppendStamp{4'000'000'000'000LL, 32766, 2'147'483'647, 9, {}},
                                   AppendStamp{7, 1, 30, 2, "billing-worker-1"}}) {
    v1::Request parsed;
    REQUIRE(parsed.ParseFromString(encode_append_head("orders", buffer.size(), stamp) + buffer));
    const auto& append = parsed.append();
    CHECK(append.stream() == "orders");
    REQUIRE(append.records_size() == 2);
    CHECK(append.producer().producer_id() == stamp.producer_id);
    CHECK(append.producer().epoch() == stamp.epoch);
    CHECK(append.producer().sequence() == stamp.sequence);
    REQUIRE(append.has_partition());  // present even when 0
    CHECK(append.partition() == stamp.partition);
    CHECK(append.transactional_id() == stamp.transactional_id);
  }
  // Without a stamp, neither field is there.
  v1::Request plain;
  REQUIRE(plain.ParseFromString(encode_append_head("orders", buffer.size()) + buffer));
  CHECK_FALSE(plain.append().has_producer());
  CHECK_FALSE(plain.append().has_partition());
}

}  // namespace
}  // namespace streamd::client
