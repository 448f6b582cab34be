// JSON for the HTTP API (docs/HTTP.md): a writer for answers and a strict parser for request bodies.
// No JSON library is among the broker's dependencies; the API needs only this much.
//
// The writer escapes per RFC 8259, writes bytes that are not valid UTF-8 as U+FFFD (so its output is
// always valid JSON; callers that must keep bytes also send them base64-encoded) and writes '<' and
// '>' as \u escapes, so no answer can be mistaken for markup. The parser accepts RFC 8259 JSON only —
// no comments, no trailing commas, no duplicate keys, no unpaired surrogates — nested at most
// kMaxJsonDepth deep, and keeps a number's text, so a 64-bit offset is read exactly. Pure; a
// writer or value is used by one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "server/storage/status.h"

namespace streamd::http_api {

inline constexpr size_t kMaxJsonDepth = 32;

// Length (1–4) of the valid UTF-8 sequence that starts `bytes`, 0 when it does not start with one.
size_t utf8_sequence_length(std::string_view bytes);
bool is_valid_utf8(std::string_view bytes);

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
  JsonWriter& real(double d);
  JsonWriter& boolean(bool b);
  JsonWriter& null();
  // Already-written JSON, placed as one value.
  JsonWriter& raw(std::string_view json);

  JsonWriter& field(std::string_view name, std::string_view text) { return key(name).string(text); }
  JsonWriter& field(std::string_view name, const char* text) { return key(name).string(text); }
  JsonWriter& field(std::string_view name, const std::string& text) { return key(name).string(text); }
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
  std::vector<bool> has_element_;  // per open container: whether it holds an element yet
  bool after_key_ = false;
};

class JsonValue {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_object() const { return type_ == Type::kObject; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_string() const { return type_ == Type::kString; }

  // The member, or nullptr when absent (or this is not an object).
  const JsonValue* get(std::string_view name) const;
  const std::vector<JsonValue>& items() const { return items_; }
  const std::map<std::string, JsonValue, std::less<>>& members() const { return members_; }
  const std::string& text() const { return text_; }  // a string's value, a number's digits
  bool boolean() const { return boolean_; }
  // A number that is an integer in range; nullopt for anything else (1.5, 1e3, -1 for unsigned).
  std::optional<uint64_t> as_u64() const;
  std::optional<int64_t> as_i64() const;
  // The member `name` as_u64(); nullopt when absent or not one.
  std::optional<uint64_t> u64_of(std::string_view name) const;

 private:
  friend class JsonParser;
  Type type_ = Type::kNull;
  bool boolean_ = false;
  std::string text_;
  std::vector<JsonValue> items_;
  std::map<std::string, JsonValue, std::less<>> members_;
};

// PROTOCOL_ERROR naming the byte offset and what was wrong (fields `reason`, `at`).
Result<JsonValue> parse_json(std::string_view text);

}  // namespace streamd::http_api
