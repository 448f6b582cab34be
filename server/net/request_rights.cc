#include "server/net/request_rights.h"

namespace streamd {
namespace {

NeededRight on(auth::Right right, std::string_view stream) {
  return NeededRight{NeededRight::Kind::kRight, right, stream};
}

NeededRight anywhere(auth::Right right) {
  return NeededRight{NeededRight::Kind::kRightAnywhere, right, {}};
}

}  // namespace

NeededRight needed_right(const v1::Request& r) {
  using auth::Right;
  switch (r.body_case()) {
    case v1::Request::kRead:
      return on(Right::kRead, r.read().stream());
    case v1::Request::kBounds:
      return on(Right::kRead, r.bounds().stream());
    case v1::Request::kPeek:
      return on(Right::kRead, r.peek().stream());
    case v1::Request::kOffsetAt:
      return on(Right::kRead, r.offset_at().stream());
    case v1::Request::kCommit:  // a group's progress on a stream is part of reading it
      return on(Right::kRead, r.commit().stream());
    case v1::Request::kCommitted:
      return on(Right::kRead, r.committed().stream());
    case v1::Request::kListGroups:
      return on(Right::kRead, r.list_groups().stream());
    case v1::Request::kAppend:
      return on(Right::kWrite, r.append().stream());
    case v1::Request::kCreateStream:
      return on(Right::kAdmin, r.create_stream().name());
    case v1::Request::kDeleteStream:
      return on(Right::kAdmin, r.delete_stream().name());
    case v1::Request::kAlterStream:
      return on(Right::kAdmin, r.alter_stream().name());
    case v1::Request::kTrim:
      return on(Right::kAdmin, r.trim().stream());
    case v1::Request::kCompact:
      return on(Right::kAdmin, r.compact().stream());
    // A transactional id writes: it takes the right to write somewhere; each append it makes needs
    // write on its stream, and each group offset it stages read on that stream.
    case v1::Request::kInitProducer:
      if (r.init_producer().transactional_id().empty()) break;
      return anywhere(Right::kWrite);
    case v1::Request::kEndTxn:
      return anywhere(Right::kWrite);
    case v1::Request::kTxnCommitOffsets:
      return on(Right::kRead, r.txn_commit_offsets().stream());
    // The operator's view and end of any transaction, which spans streams.
    case v1::Request::kListTransactions:
    case v1::Request::kDescribeTransaction:
    case v1::Request::kAbortTransaction:
      return NeededRight{NeededRight::Kind::kRightEverywhere, Right::kAdmin, {}};
    case v1::Request::kDescribeStream:
      // A producer learns the partition count from it, and a reader the bounds: any right will do.
      return NeededRight{NeededRight::Kind::kAnyRight, Right::kRead, r.describe_stream().name()};
    case v1::Request::kHello:
    case v1::Request::kHealth:
    case v1::Request::kListStreams:
    case v1::Request::BODY_NOT_SET:
      break;
  }
  return NeededRight{};
}

}  // namespace streamd
