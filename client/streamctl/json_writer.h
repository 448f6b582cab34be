// JsonWriter: the small JSON emitter behind streamctl's --json output (no JSON library is among our
// dependencies, and streamctl only ever writes JSON). Compact output, keys in the order written.
// Strings are escaped per RFC 8259; bytes that are not valid UTF-8 become U+FFFD so that the output
// is always valid JSON (callers that must keep bytes send them base64-encoded).
//
// The caller nests begin/end calls correctly and puts key() before each value inside an object; the
// writer does not check the grammar beyond placing commas. Not thread-safe: one writer per document.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace streamd::streamctl {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);

  JsonWriter& string(std::string_view text);
  JsonWriter& number(int64_t n);
  JsonWriter& unsigned_number(uint64_t n);
  JsonWriter& boolean(bool b);
  JsonWriter& null();

  // key(name) followed by the value.
  JsonWriter& field(std::string_view name, std::string_view text) { return key(name).string(text); }
  JsonWriter& field(std::string_view name, const char* text) { return key(name).string(text); }
  JsonWriter& field(std::string_view name, bool b) { return key(name).boolean(b); }
  template <class Int, std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>, int> = 0>
  JsonWriter& field(std::string_view name, Int n) {
    key(name);
    if constexpr (std::is_signed_v<Int>) {
      return number(n);
    } else {
      return unsigned_number(n);
    }
  }

  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void before_value();
  void append_escaped(std::string_view text);

  std::string out_;
  // One flag per open container: whether it already holds an element.
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

}  // namespace streamd::streamctl
