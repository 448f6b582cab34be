#include "tests/support/text_file.h"

#include <cstdio>

namespace streamd::testing {

std::optional<std::string> read_text_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return std::nullopt;
  std::string text;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  return text;
}

std::string last_bytes(const std::string& text, size_t bytes) {
  return text.size() > bytes ? text.substr(text.size() - bytes) : text;
}

}  // namespace streamd::testing
