// The console's static files (server/console/*.html, *.js, *.css), compiled into the daemon by
// cmake/embed_assets.cmake: the binary serves its own console, offline, with nothing to install
// beside it. Read-only data; thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

namespace streamd::console {

struct ConsoleAsset {
  std::string_view path;          // under /ui/: "index.html", "app.js"
  std::string_view content_type;
  std::string_view bytes;
  std::string_view etag;          // quoted, as the ETag header carries it
};

// The asset at `path` (no leading slash), or nullptr.
const ConsoleAsset* find_console_asset(std::string_view path);
size_t console_asset_count();

}  // namespace streamd::console
