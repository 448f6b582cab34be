// What each request of the native protocol needs from the connection's principal (docs/SECURITY.md
// §Rights): read, write or admin on the stream it names, any right on it (describe), a right on some
// stream (a transactional producer's requests), a right on every stream (the operator's transaction
// requests), or nothing (hello, health, and list, whose answer is filtered to the streams the
// principal may read).
// Pure; thread-safe.
#pragma once

#include <string_view>

#include "server/auth/rights.h"
#include "streamd.pb.h"

namespace streamd {

struct NeededRight {
  enum class Kind { kNothing, kRight, kAnyRight, kRightAnywhere, kRightEverywhere };
  Kind kind = Kind::kNothing;
  auth::Right right = auth::Right::kRead;
  std::string_view stream;  // into the request; empty for kRightAnywhere and kRightEverywhere
};

NeededRight needed_right(const v1::Request& request);

}  // namespace streamd
