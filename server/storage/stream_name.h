// Stream names (docs/SEMANTICS.md §1): 1–200 bytes of [A-Za-z0-9._-], not starting with '.'.
//
// A stream's directory is named after the stream, so validation runs before any path is formed from a
// name: "", "..", "../x", "a/b" or a name with a NUL can never reach the filesystem. Names starting with
// '.' are refused so that the store's own entries (".creating.*", ".deleted.*") can never collide with a
// stream's directory.
#pragma once

#include <cstddef>
#include <string_view>

#include "server/storage/status.h"

namespace streamd {

inline constexpr size_t kMaxStreamNameBytes = 200;

// ok, or STREAM_MISCONFIGURED with fields field=name, reason, length (and index of the first bad byte).
// The refused name itself is not echoed: it may be arbitrary bytes.
Status validate_stream_name(std::string_view name);

}  // namespace streamd
