#include "server/net/read_response.h"

#include <catch2/catch.hpp>

#include "server/net/frame.h"
#include "server/net/wire_convert.h"
#include "tests/net/entry_of.h"
#include "streamd.pb.h"

namespace streamd {
namespace {

using testing::entry_of;

// What generated code produces for the same answer: the reference the hand-written encoder must match.
std::string reference_frame(uint64_t id, const std::vector<PartitionRead>& reads) {
  v1::Response response;
  response.set_id(id);
  auto* body = response.mutable_read();
  for (const PartitionRead& p : reads) {
    auto* wp = body->add_partitions();
    wp->set_partition(p.partition.value);
    if (!p.status.ok()) {
      error_to_wire(p.status, wp->mutable_error());
      continue;
    }
    wp->set_next_from(p.result.next_from.value);
    for (const EntryView& e : p.result.entries) entry_to_wire(p.partition, e, wp->add_entries());
  }
  return encode_frame(response);
}

PartitionRead partition(int32_t id, uint64_t next_from, std::vector<EntryView> entries) {
  PartitionRead p;
  p.partition = PartitionId(id);
  p.result.next_from = Offset(next_from);
  p.result.entries = std::move(entries);
  return p;
}

TEST_CASE("the Read answer is byte for byte what generated code would write", "[read_response]") {
  const std::string big(300, 'b');  // lengths past one varint byte
  const std::string binary("\0\xff\x80 bytes", 9);
  std::vector<PartitionRead> reads;
  reads.push_back(
      partition(0, 3,
                {entry_of(Offset(0), Timestamp(0), "", "", {}),
                 entry_of(Offset(1), Timestamp(1'700'000'000'123'456), "key", big, {}),
                 entry_of(Offset(2), Timestamp(-5), binary, "", {{"h", ""}, {"", binary}, {"name", big}})}));
  reads.push_back(partition(7, 0, {}));
  reads.push_back(partition(-1, 0, {}));
  PartitionRead trimmed;
  trimmed.partition = PartitionId(2);
  trimmed.status = Status::of(Code::kOffsetTrimmed, {{"first", "10"}});
  reads.push_back(std::move(trimmed));
  reads.push_back(partition(3, 1ull << 40, {entry_of(Offset(1ull << 40), Timestamp(1), "k", "v", {})}));

  for (uint64_t id : {uint64_t{0}, uint64_t{1}, uint64_t{300}, ~uint64_t{0}}) {
    ReadStats stats;
    CHECK(encode_read_frame(id, reads, &stats) == reference_frame(id, reads));
    CHECK(stats.records == 4);
    CHECK(stats.bytes == 3 + 300 + (9 + 1 + 9 + 4 + 300) + 2);
  }
  ReadStats stats;
  CHECK(encode_read_frame(9, {}, &stats) == reference_frame(9, {}));
}

TEST_CASE("the Read answer parses back to the entries it was given", "[read_response]") {
  std::vector<PartitionRead> reads;
  reads.push_back(partition(1, 6, {entry_of(Offset(5), Timestamp(42), "k", "payload", {{"a", "b"}})}));
  ReadStats stats;
  const std::string frame = encode_read_frame(77, reads, &stats);
  REQUIRE(read_frame_length(frame.data()) == frame.size() - kFrameHeaderBytes);
  v1::Response response;
  REQUIRE(response.ParseFromArray(frame.data() + kFrameHeaderBytes, static_cast<int>(frame.size() - 4)));
  CHECK(response.id() == 77);
  REQUIRE(response.read().partitions_size() == 1);
  const auto& entry = response.read().partitions(0).entries(0);
  CHECK(entry.partition() == 1);
  CHECK(entry.offset() == 5);
  CHECK(entry.appended_at_us() == 42);
  CHECK(entry.record().payload() == "payload");
  CHECK(entry.record().headers(0).value() == "b");
  CHECK(response.read().partitions(0).next_from() == 6);
}

}  // namespace
}  // namespace streamd
