#include "server/net/request_rights.h"

namespace streamd {
namespace {

NeededRight on(auth::Right right, std::string_view stream) {
  return NeededRight{NeededRight::Kind::kRight, right, stream};
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
    case v1::Request::kDescribeStream:
      // A producer learns the partition count from it, and a reader the bounds: any right will do.
      return NeededRight{NeededRight::Kind::kAnyRight, Right::kRead, r.describe_stream().name()};
    case v1::Request::kHello:
    case v1::Request::kHealth:
    // An identity grants nothing: every append it stamps needs write on its stream.
    case v1::Request::kInitProducer:
    case v1::Request::kListStreams:
    case v1::Request::BODY_NOT_SET:
      break;
  }
  return NeededRight{};
}

}  // namespace streamd
