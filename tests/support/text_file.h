// Reading a test's own files whole (logs, pid files, ready files) and cutting a log to its tail for a
// failure message.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace streamd::testing {

// The whole file at `path`; nullopt when it cannot be opened.
std::optional<std::string> read_text_file(const std::string& path);

// The last `bytes` of `text`, all of it when shorter.
std::string last_bytes(const std::string& text, size_t bytes);

}  // namespace streamd::testing
