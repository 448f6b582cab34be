// server/storage/producer_state.cc: Kafka's sequence rules one case each, the wrap at 2^31 - 1, the
// five batches kept, staging and settling, expiry and eviction, and the snapshot.
#include "server/storage/producer_state.h"

#include <catch2/catch.hpp>

#include <limits>

namespace streamd {
namespace {

using Verdict = ProducerState::Verdict;

constexpr int64_t kId = 7;
constexpr int32_t kMaxSeq = std::numeric_limits<int32_t>::max();

ProducerStamp stamp(int32_t first, int16_t epoch = 0, int64_t id = kId) { return {id, epoch, first, TxnRole::kNone}; }
AppendRange range(uint64_t first, uint64_t last) { return {Offset(first), Offset(last)}; }

// Checks and, when it is to be written, stages and settles a batch of `records` at `first_offset`.
ProducerState::Check append(ProducerState& s, ProducerStamp p, uint32_t records, uint64_t first_offset,
                            Timestamp at = Timestamp(1)) {
  ProducerState::Check c = s.check(p, records - 1);
  if (c.verdict == Verdict::kAppend) {
    s.stage(p, records - 1, range(first_offset, first_offset + records - 1), at);
    s.settle(1, at);
  }
  return c;
}

TEST_CASE("producer state: a producer never seen is taken at any sequence") {
  ProducerState s;
  CHECK(append(s, stamp(42), 3, 0).verdict == Verdict::kAppend);
  CHECK(s.size() == 1);
  // ... and from then on must follow on.
  CHECK(append(s, stamp(45), 1, 3).verdict == Verdict::kAppend);
  const auto gap = s.check(stamp(47), 0);
  CHECK(gap.verdict == Verdict::kRefused);
  CHECK(gap.refusal.code() == Code::kOutOfOrderSequence);
  CHECK(gap.refusal.fields().at("expected") == "46");
}

TEST_CASE("producer state: a batch without a producer is never checked") {
  ProducerState s;
  CHECK(append(s, ProducerStamp{}, 5, 0).verdict == Verdict::kAppend);
  CHECK(s.empty());
}

TEST_CASE("producer state: a resend of any of the last five batches answers its offsets") {
  ProducerState s;
  for (int b = 0; b < 5; ++b) REQUIRE(append(s, stamp(b * 2), 2, 100 + b * 2).verdict == Verdict::kAppend);
  for (int b = 0; b < 5; ++b) {
    const auto dup = s.check(stamp(b * 2), 1);
    REQUIRE(dup.verdict == Verdict::kDuplicate);
    CHECK(dup.original == range(100 + b * 2, 101 + b * 2));
  }
  // A sixth batch pushes the first out: its resend is now out of order, as Kafka answers.
  REQUIRE(append(s, stamp(10), 2, 110).verdict == Verdict::kAppend);
  const auto oldest = s.check(stamp(0), 1);
  CHECK(oldest.verdict == Verdict::kRefused);
  CHECK(oldest.refusal.code() == Code::kOutOfOrderSequence);
  CHECK(s.check(stamp(2), 1).verdict == Verdict::kDuplicate);
}

TEST_CASE("producer state: a resend with a different range is not a duplicate") {
  ProducerState s;
  REQUIRE(append(s, stamp(0), 3, 0).verdict == Verdict::kAppend);
  CHECK(s.check(stamp(0), 1).verdict == Verdict::kRefused);
}

TEST_CASE("producer state: an older epoch is fenced, a newer one must start at 0") {
  ProducerState s;
  REQUIRE(append(s, stamp(0, 3), 1, 0).verdict == Verdict::kAppend);
  const auto stale = s.check(stamp(1, 2), 0);
  CHECK(stale.verdict == Verdict::kRefused);
  CHECK(stale.refusal.code() == Code::kProducerFenced);
  CHECK(stale.refusal.fields().at("current_epoch") == "3");
  const auto late_start = s.check(stamp(5, 4), 0);
  CHECK(late_start.verdict == Verdict::kRefused);
  CHECK(late_start.refusal.code() == Code::kOutOfOrderSequence);
  REQUIRE(append(s, stamp(0, 4), 1, 1).verdict == Verdict::kAppend);
  // The new epoch's batches replace the old one's: a resend under the old epoch is fenced.
  CHECK(s.check(stamp(0, 3), 0).refusal.code() == Code::kProducerFenced);
  CHECK(s.check(stamp(0, 4), 0).verdict == Verdict::kDuplicate);
}

TEST_CASE("producer state: sequences wrap from 2^31 - 1 to 0") {
  ProducerState s;
  REQUIRE(append(s, stamp(kMaxSeq - 1), 2, 0).verdict == Verdict::kAppend);  // kMaxSeq - 1, kMaxSeq
  CHECK(append(s, stamp(0), 1, 2).verdict == Verdict::kAppend);
  // A batch whose own range wraps: kMaxSeq - 1, kMaxSeq, 0.
  ProducerState t;
  REQUIRE(append(t, stamp(kMaxSeq - 1), 3, 0).verdict == Verdict::kAppend);
  CHECK(t.check(stamp(kMaxSeq - 1), 2).verdict == Verdict::kDuplicate);
  CHECK(append(t, stamp(1), 1, 3).verdict == Verdict::kAppend);
}

TEST_CASE("producer state: staged batches are seen by the next check and undone unless settled durable") {
  ProducerState s;
  REQUIRE(append(s, stamp(0), 1, 0).verdict == Verdict::kAppend);
  // A group of three: the second follows the first before either is durable; a resend of the first
  // within the group is a duplicate of it.
  REQUIRE(s.check(stamp(1), 0).verdict == Verdict::kAppend);
  s.stage(stamp(1), 0, range(1, 1), Timestamp(2));
  REQUIRE(s.check(stamp(2), 0).verdict == Verdict::kAppend);
  s.stage(stamp(2), 0, range(2, 2), Timestamp(2));
  CHECK(s.check(stamp(1), 0).original == range(1, 1));
  // Another producer's first batch, in the same group.
  s.stage(stamp(0, 0, 9), 0, range(3, 3), Timestamp(2));
  REQUIRE(s.size() == 2);
  // Only the first batch of the group became durable.
  s.settle(1, Timestamp(2));
  CHECK(s.size() == 1);
  CHECK(s.check(stamp(2), 0).verdict == Verdict::kAppend);
  CHECK(s.check(stamp(1), 0).verdict == Verdict::kDuplicate);
}

TEST_CASE("producer state: idle producers expire, and past the broker-wide bound the least recent go") {
  ProducerLimits limits({3, std::chrono::microseconds(100)});
  {
    ProducerState s(&limits);
    for (int64_t id = 0; id < 3; ++id) append(s, stamp(0, 0, id), 1, static_cast<uint64_t>(id), Timestamp(1000 + id));
    CHECK(limits.count == 3);
    // A fourth: the least recently used one (id 0) goes.
    append(s, stamp(0, 0, 3), 1, 3, Timestamp(1010));
    CHECK(limits.count == 3);
    CHECK(limits.evictions == 1);
    CHECK(s.check(stamp(5, 0, 0), 0).verdict == Verdict::kAppend);  // no state left: any sequence
    CHECK(s.check(stamp(5, 0, 1), 0).verdict == Verdict::kRefused);
    // Ids 1 and 2 were last used at 1001 and 1002: idle past 100 µs at 1105; id 3 (1010) is not.
    CHECK(s.expire(Timestamp(1105)) == 2);
    CHECK(limits.expirations == 2);
    CHECK(s.size() == 1);
  }
  CHECK(limits.count == 0);
}

TEST_CASE("producer state: a producer's later batch makes it the most recently used again") {
  ProducerLimits limits({3, std::chrono::microseconds(100)});
  ProducerState s(&limits);
  for (int64_t id = 0; id < 3; ++id) append(s, stamp(0, 0, id), 1, static_cast<uint64_t>(id), Timestamp(1000 + id));
  append(s, stamp(1, 0, 0), 1, 3, Timestamp(1003));  // id 0 again: now id 1 is the least recent
  append(s, stamp(0, 0, 3), 1, 4, Timestamp(1004));
  CHECK(limits.evictions == 1);
  CHECK(s.check(stamp(2, 0, 0), 0).verdict == Verdict::kAppend);  // id 0 kept: it expects sequence 2
  CHECK(s.check(stamp(1, 0, 0), 0).verdict == Verdict::kDuplicate);
  CHECK(s.check(stamp(5, 0, 1), 0).verdict == Verdict::kAppend);  // id 1 gone: no state, any sequence
  CHECK(s.check(stamp(5, 0, 2), 0).verdict == Verdict::kRefused);
}

TEST_CASE("producer state: InitProducer's next epoch, and a new id once the epoch is exhausted") {
  CHECK(next_epoch({5, 0}) == ProducerIdentity{5, 1});
  CHECK(next_epoch({5, 32765}) == ProducerIdentity{5, 32766});
  CHECK_FALSE(next_epoch({5, 32766}).has_value());
  CHECK_FALSE(next_epoch({-1, 0}).has_value());
}

TEST_CASE("producer state: a snapshot loads back exactly, and a damaged one is refused") {
  ProducerState s;
  for (int b = 0; b < 7; ++b) append(s, stamp(b), 1, static_cast<uint64_t>(b));
  append(s, stamp(0, 2, 99), 4, 7);
  const std::string bytes = s.snapshot(Offset(11));
  ProducerState t;
  REQUIRE(t.load(bytes) == Offset(11));
  CHECK(t.snapshot(Offset(11)) == bytes);
  CHECK(t.check(stamp(6), 0).original == range(6, 6));
  CHECK(t.check(stamp(1), 0).verdict == Verdict::kRefused);  // pushed out of the last five
  CHECK(t.check(stamp(4, 2, 99), 0).verdict == Verdict::kAppend);
  for (size_t at : {size_t{0}, size_t{5}, bytes.size() / 2, bytes.size() - 1}) {
    std::string bad = bytes;
    bad[at] = static_cast<char>(bad[at] ^ 0x20);
    ProducerState u;
    CHECK_FALSE(u.load(bad).has_value());
    CHECK(u.empty());
  }
  CHECK_FALSE(ProducerState().load(bytes.substr(0, bytes.size() - 1)).has_value());
}

TEST_CASE("producer state: some producers' states merged into another's, replacing what it held of them") {
  ProducerState s;
  append(s, stamp(0, 0, 1), 2, 0);
  append(s, stamp(0, 0, 2), 1, 2);
  append(s, stamp(2, 0, 1), 1, 3);
  const std::string one = s.snapshot_of({1});
  ProducerState t;
  append(t, stamp(0, 0, 1), 9, 100);  // a stale view of producer 1
  append(t, stamp(0, 0, 3), 1, 109);
  REQUIRE(t.merge(one));
  CHECK(t.size() == 2);
  CHECK(t.check(stamp(2, 0, 1), 0).original == range(3, 3));
  CHECK(t.check(stamp(3, 0, 1), 0).verdict == Verdict::kAppend);
  CHECK(t.check(stamp(1, 0, 3), 0).verdict == Verdict::kAppend);
  CHECK(t.check(stamp(0, 0, 2), 0).verdict == Verdict::kAppend);  // not merged: unknown to t
  CHECK_FALSE(t.merge(one.substr(1)));
}

}  // namespace
}  // namespace streamd
