// server/storage/producer_state.cc's transactions and txn_marker.cc: a transaction opens with its first
// batch and ends with its marker, aborted ranges, INVALID_TXN_STATE and fencing, epoch bumps by marker,
// staged markers undone, open transactions never expired, the version 2 snapshot and version 1's.
#include <catch2/catch.hpp>

#include "server/storage/batch_builder.h"
#include "server/storage/coding.h"
#include "server/storage/crc32c.h"
#include "server/storage/producer_state.h"
#include "server/storage/record_reader.h"
#include "server/storage/txn_marker.h"

namespace streamd {
namespace {

using Verdict = ProducerState::Verdict;

ProducerStamp data(int64_t id, int32_t seq, int16_t epoch = 0) {
  return {id, epoch, seq, TxnRole::kData};
}
ProducerStamp plain(int64_t id, int32_t seq, int16_t epoch = 0) {
  return {id, epoch, seq, TxnRole::kNone};
}
ProducerStamp commit_marker(int64_t id, int16_t epoch = 0) {
  return {id, epoch, -1, TxnRole::kCommit};
}
ProducerStamp abort_marker(int64_t id, int16_t epoch = 0) {
  return {id, epoch, -1, TxnRole::kAbort};
}

// Checks a batch of `records` at `first`; when it is to be written, stages it and settles it durable.
ProducerState::Check write(ProducerState& s, const ProducerStamp& p, uint64_t first, uint32_t records = 1,
                           Timestamp at = Timestamp(1)) {
  ProducerState::Check c = s.check(p, records - 1);
  if (c.verdict == Verdict::kAppend) {
    s.stage(p, records - 1, {Offset(first), Offset(first + records - 1)}, at);
    s.settle(1, at);
  }
  return c;
}

Code refusal(const ProducerState::Check& c) {
  return c.verdict == Verdict::kRefused ? c.refusal.code() : Code::kOk;
}

TEST_CASE("transactions: the first transactional batch opens, the commit marker ends, nothing is aborted") {
  ProducerState s;
  CHECK_FALSE(s.first_open());
  REQUIRE(write(s, data(1, 0), 10, 3).verdict == Verdict::kAppend);
  CHECK(s.first_open() == Offset(10));
  REQUIRE(write(s, data(1, 3), 13, 2).verdict == Verdict::kAppend);
  CHECK(s.first_open() == Offset(10));
  REQUIRE(write(s, commit_marker(1), 15).verdict == Verdict::kAppend);
  CHECK_FALSE(s.first_open());
  CHECK(s.aborted_between(Offset(0), Offset(100)).empty());
  // Sequences go on across transactions of one epoch, as Kafka's producers number them.
  CHECK(refusal(s.check(data(1, 0), 0)) == Code::kOutOfOrderSequence);
  CHECK(write(s, data(1, 5), 16).verdict == Verdict::kAppend);
  CHECK(s.first_open() == Offset(16));
}

TEST_CASE("transactions: an abort keeps the range its records took, and readers find it by overlap") {
  ProducerState s;
  REQUIRE(write(s, data(1, 0), 10, 5).verdict == Verdict::kAppend);
  REQUIRE(write(s, abort_marker(1), 20).verdict == Verdict::kAppend);
  const AbortedTxn expected{1, Offset(10), Offset(20)};
  CHECK(s.aborted_between(Offset(0), Offset(100)) == std::vector<AbortedTxn>{expected});
  CHECK(s.aborted_between(Offset(0), Offset(10)).empty());  // ends before its first record
  CHECK(s.aborted_between(Offset(0), Offset(11)).size() == 1);
  CHECK(s.aborted_between(Offset(19), Offset(30)).size() == 1);
  CHECK(s.aborted_between(Offset(20), Offset(30)).empty());  // from its marker on
  s.forget_aborted_before(Offset(20));
  CHECK(s.aborted_between(Offset(0), Offset(100)).size() == 1);
  s.forget_aborted_before(Offset(21));
  CHECK(s.aborted_between(Offset(0), Offset(100)).empty());
}

TEST_CASE("transactions: the last stable offset is the earliest open transaction's first offset") {
  ProducerState s;
  REQUIRE(write(s, data(1, 0), 10).verdict == Verdict::kAppend);
  REQUIRE(write(s, data(2, 0), 11).verdict == Verdict::kAppend);
  REQUIRE(write(s, plain(3, 0), 12).verdict == Verdict::kAppend);
  CHECK(s.open_transactions() == 2);
  CHECK(s.first_open() == Offset(10));
  REQUIRE(write(s, commit_marker(1), 13).verdict == Verdict::kAppend);
  CHECK(s.first_open() == Offset(11));
  REQUIRE(write(s, abort_marker(2), 14).verdict == Verdict::kAppend);
  CHECK_FALSE(s.first_open());
  CHECK(s.open_transactions() == 0);
}

TEST_CASE("transactions: a batch outside the open transaction, or of a newer epoch, is INVALID_TXN_STATE") {
  ProducerState s;
  REQUIRE(write(s, data(1, 0), 0, 2).verdict == Verdict::kAppend);
  const auto outside = s.check(plain(1, 2), 0);
  CHECK(refusal(outside) == Code::kInvalidTxnState);
  CHECK(outside.refusal.fields().at("producer_id") == "1");
  CHECK(refusal(s.check(data(1, 0, 1), 0)) == Code::kInvalidTxnState);
  // A resend of the transaction's own batch is still a duplicate, and an older epoch still fenced.
  CHECK(s.check(data(1, 0), 1).verdict == Verdict::kDuplicate);
  // Other producers are not held up.
  CHECK(write(s, plain(2, 0), 2).verdict == Verdict::kAppend);
}

TEST_CASE("transactions: a marker is written once, and only by the producer's current epoch or a newer one") {
  ProducerState s;
  CHECK(refusal(s.check(commit_marker(1), 0)) == Code::kInvalidTxnState);  // a producer never seen
  REQUIRE(write(s, plain(1, 0), 0).verdict == Verdict::kAppend);
  CHECK(refusal(s.check(abort_marker(1), 0)) == Code::kInvalidTxnState);  // nothing open
  REQUIRE(write(s, data(1, 1, 2), 1).verdict == Verdict::kRefused);       // a newer epoch starts at 0
  REQUIRE(write(s, data(1, 0, 2), 1).verdict == Verdict::kAppend);
  CHECK(refusal(s.check(commit_marker(1, 1), 0)) == Code::kProducerFenced);
  REQUIRE(write(s, commit_marker(1, 2), 2).verdict == Verdict::kAppend);
  CHECK(refusal(s.check(commit_marker(1, 2), 0)) ==
        Code::kInvalidTxnState);  // the resend after it was written
}

TEST_CASE(
    "transactions: an abort marker with a newer epoch fences the old epoch, whose successor starts at 0") {
  ProducerState s;
  REQUIRE(write(s, data(1, 0, 3), 0, 4).verdict == Verdict::kAppend);
  REQUIRE(write(s, abort_marker(1, 4), 4).verdict == Verdict::kAppend);
  CHECK(s.aborted_between(Offset(0), Offset(5)) == std::vector<AbortedTxn>{{1, Offset(0), Offset(4)}});
  CHECK(refusal(s.check(data(1, 4, 3), 0)) == Code::kProducerFenced);
  const auto gap = s.check(data(1, 7, 4), 0);
  CHECK(refusal(gap) == Code::kOutOfOrderSequence);
  CHECK(gap.refusal.fields().at("expected") == "0");
  CHECK(write(s, data(1, 0, 4), 5).verdict == Verdict::kAppend);
}

TEST_CASE("transactions: a marker staged but never durable leaves the transaction open and nothing aborted") {
  ProducerState s;
  REQUIRE(write(s, data(1, 0), 0, 2).verdict == Verdict::kAppend);
  REQUIRE(s.check(abort_marker(1), 0).verdict == Verdict::kAppend);
  s.stage(abort_marker(1), 0, {Offset(2), Offset(2)}, Timestamp(2));
  // Staged, not settled: readers still see the transaction open; the writer's next check sees it ended.
  CHECK(s.first_open() == Offset(0));
  CHECK(refusal(s.check(abort_marker(1), 0)) == Code::kInvalidTxnState);
  s.settle(0, Timestamp(2));
  CHECK(s.first_open() == Offset(0));
  CHECK(s.aborted_between(Offset(0), Offset(10)).empty());
  // A transaction opened by a batch that was never durable is gone with it.
  REQUIRE(s.check(data(2, 0), 0).verdict == Verdict::kAppend);
  s.stage(data(2, 0), 0, {Offset(2), Offset(2)}, Timestamp(2));
  s.settle(0, Timestamp(2));
  CHECK(s.open_transactions() == 1);
  CHECK(write(s, commit_marker(1), 2).verdict == Verdict::kAppend);
  CHECK_FALSE(s.first_open());
}

TEST_CASE("transactions: a producer with a transaction open is neither expired nor evicted") {
  ProducerLimits limits(ProducerBounds{2, std::chrono::microseconds(100)});
  ProducerState s(&limits);
  REQUIRE(write(s, data(1, 0), 0, 1, Timestamp(1)).verdict == Verdict::kAppend);
  REQUIRE(write(s, plain(2, 0), 1, 1, Timestamp(1)).verdict == Verdict::kAppend);
  CHECK(s.expire(Timestamp(1000)) == 1);  // producer 2 only
  CHECK(s.first_open() == Offset(0));
  for (int64_t id = 3; id < 6; ++id)
    REQUIRE(write(s, plain(id, 0), 2, 1, Timestamp(1000)).verdict == Verdict::kAppend);
  CHECK(s.size() == 2);  // producer 1 and the one used last
  CHECK(write(s, commit_marker(1), 3, 1, Timestamp(1000)).verdict == Verdict::kAppend);
}

TEST_CASE("transactions: a snapshot keeps open and aborted transactions, and version 1 still loads") {
  ProducerState s;
  REQUIRE(write(s, data(1, 0), 0, 2).verdict == Verdict::kAppend);
  REQUIRE(write(s, abort_marker(1, 1), 2).verdict == Verdict::kAppend);  // epoch 1, no batches yet
  REQUIRE(write(s, data(2, 0), 3).verdict == Verdict::kAppend);
  ProducerState loaded;
  REQUIRE(loaded.load(s.snapshot(Offset(4))) == Offset(4));
  CHECK(loaded.first_open() == Offset(3));
  CHECK(loaded.aborted_between(Offset(0), Offset(4)) == std::vector<AbortedTxn>{{1, Offset(0), Offset(2)}});
  CHECK(loaded.check(data(1, 0, 1), 0).verdict == Verdict::kAppend);
  CHECK(refusal(loaded.check(plain(2, 1), 0)) == Code::kInvalidTxnState);
  CHECK(loaded.snapshot(Offset(4)) == s.snapshot(Offset(4)));

  // Version 1: one producer (id 9, epoch 2, last used 5) with one batch, sequences 0..1 at offsets 7..8.
  std::string v1(1, '\1');
  char b8[8];
  char b4[4];
  coding::put_fixed64(b8, 9);  // end
  v1.append(b8, 8);
  coding::put_fixed32(b4, 1);
  v1.append(b4, 4);
  coding::put_fixed64(b8, 9);  // id
  v1.append(b8, 8);
  v1.append("\x02\x00", 2);
  coding::put_fixed64(b8, 5);
  v1.append(b8, 8);
  v1.push_back('\1');
  for (uint32_t v : {0u, 1u}) {
    coding::put_fixed32(b4, v);
    v1.append(b4, 4);
  }
  for (uint64_t v : {7u, 8u}) {
    coding::put_fixed64(b8, v);
    v1.append(b8, 8);
  }
  coding::put_fixed32(b4, crc32c(v1));
  v1.append(b4, 4);
  ProducerState old;
  REQUIRE(old.load(v1) == Offset(9));
  const auto dup = old.check(plain(9, 0, 2), 1);
  REQUIRE(dup.verdict == Verdict::kDuplicate);
  CHECK(dup.original == AppendRange{Offset(7), Offset(8)});
  CHECK_FALSE(old.first_open());
}

TEST_CASE("transactions: merging some producers' states replaces their open and aborted transactions") {
  ProducerState rows;
  REQUIRE(write(rows, data(1, 0), 0).verdict == Verdict::kAppend);
  REQUIRE(write(rows, abort_marker(1), 1).verdict == Verdict::kAppend);
  REQUIRE(write(rows, data(1, 1), 2).verdict == Verdict::kAppend);
  REQUIRE(write(rows, data(2, 0), 3).verdict == Verdict::kAppend);
  ProducerState view;
  REQUIRE(write(view, data(1, 0), 0).verdict == Verdict::kAppend);  // an older view of producer 1
  REQUIRE(view.merge(rows.snapshot_of({1})));
  CHECK(view.first_open() == Offset(2));
  CHECK(view.open_transactions() == 1);
  CHECK(view.aborted_between(Offset(0), Offset(10)) == std::vector<AbortedTxn>{{1, Offset(0), Offset(1)}});
}

TEST_CASE("transaction markers: Kafka's control record, read back by stamp_of") {
  std::string marker = build_txn_marker(42, 3, MarkerType::kCommit, 7);
  seal_batch(marker, Offset(100), Timestamp(5));
  BatchHeader h;
  REQUIRE(check_batch(marker, h) == BatchCheck::kOk);
  CHECK(check_records(marker));
  CHECK(h.transactional());
  CHECK(h.control());
  CHECK(h.record_count == 1);
  const ProducerStamp stamp = stamp_of(h, marker);
  CHECK(stamp.id == 42);
  CHECK(stamp.epoch == 3);
  CHECK(stamp.first_sequence == -1);
  CHECK(stamp.txn == TxnRole::kCommit);
  CHECK(parse_txn_marker(build_txn_marker(42, 3, MarkerType::kAbort, 0)) == MarkerType::kAbort);

  // Kafka's key bytes, big-endian: version 0, type 1; the value: version 0, coordinator epoch 7.
  RecordReader records(marker);
  RecordView r;
  REQUIRE(records.next(r));
  CHECK(r.key == std::string_view("\x00\x00\x00\x01", 4));
  CHECK(r.payload == std::string_view("\x00\x00\x00\x00\x00\x07", 6));

  // A control record of another type ends nothing; a transactional data batch is data.
  BatchBuilder other(BatchOptions{false, true, true, {42, 3, -1}});
  other.add(std::string_view("\x00\x00\x00\x05", 4), "x");
  const std::string other_batch = std::move(other).finish();
  CHECK(stamp_of(peek_header(other_batch), other_batch).txn == TxnRole::kOtherControl);
  BatchBuilder txn_data(BatchOptions{false, true, false, {42, 3, 0}});
  txn_data.add("k", "v");
  const std::string data_batch = std::move(txn_data).finish();
  CHECK(stamp_of(peek_header(data_batch), data_batch).txn == TxnRole::kData);
}

}  // namespace
}  // namespace streamd
