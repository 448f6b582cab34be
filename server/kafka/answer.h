// A Kafka answer as its connection writes it: bytes of its own, with views of bytes held elsewhere
// placed between them — the record regions of the stored batches a Fetch read — so that one gathered
// write sends those regions without their being copied into the answer first (docs/KAFKA.md
// §"Record batches").
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace streamd::kafka {

struct Answer {
  Answer() = default;
  // Most answers are bytes of their own only.
  Answer(std::string own) : bytes(std::move(own)) {}  // NOLINT(google-explicit-constructor)

  // From the size prefix on; each view goes out after bytes[0, view.at).
  std::string bytes;
  struct View {
    size_t at = 0;
    std::string_view bytes;
  };
  std::vector<View> views;  // in order of `at`
  // Keep the views' bytes alive until the answer is written.
  std::vector<std::shared_ptr<const void>> owners;

  size_t size() const {
    size_t n = bytes.size();
    for (const View& v : views) n += v.bytes.size();
    return n;
  }

  // Appends the answer's pieces in the order they go out.
  void pieces(std::vector<std::string_view>& out) const {
    size_t from = 0;
    for (const View& v : views) {
      if (v.at > from) out.emplace_back(bytes.data() + from, v.at - from);
      out.push_back(v.bytes);
      from = v.at;
    }
    if (bytes.size() > from) out.emplace_back(bytes.data() + from, bytes.size() - from);
  }
};

}  // namespace streamd::kafka
