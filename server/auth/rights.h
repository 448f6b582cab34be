// The rights a grant gives on streams (docs/SECURITY.md §Rights): read (read, bounds, peek, seek,
// committed offsets and groups, and committing a group's progress), write (append, and so
// auto-create) and admin (create, delete, trim, compact). Describing a stream takes any of them. A
// set of rights is a small bit set; a value type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace streamd::auth {

enum class Right : uint8_t { kRead = 1, kWrite = 2, kAdmin = 4 };

std::string_view right_name(Right right);

class Rights {
 public:
  constexpr Rights() = default;
  constexpr Rights(Right r) : bits_(static_cast<uint8_t>(r)) {}  // NOLINT(google-explicit-constructor)
  static constexpr Rights all() { return Rights(7); }

  constexpr bool has(Right r) const { return (bits_ & static_cast<uint8_t>(r)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr Rights operator|(Rights other) const { return Rights(static_cast<uint8_t>(bits_ | other.bits_)); }
  Rights& operator|=(Rights other) {
    bits_ |= other.bits_;
    return *this;
  }
  constexpr bool operator==(const Rights&) const = default;

  // "read,write", "all", "none".
  std::string str() const;
  // "read", "write", "admin", a comma list of them, or "all"; nullopt otherwise.
  static std::optional<Rights> parse(std::string_view text);

 private:
  constexpr explicit Rights(uint8_t bits) : bits_(bits) {}
  uint8_t bits_ = 0;
};

}  // namespace streamd::auth
