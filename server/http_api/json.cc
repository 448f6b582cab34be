#include "server/http_api/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace streamd::http_api {
namespace {

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

size_t utf8_sequence_length(std::string_view bytes) {
  if (bytes.empty()) return 0;
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  if (b[0] < 0x80) return 1;
  if (b[0] >= 0xC2 && b[0] <= 0xDF) return n >= 2 && is_continuation(b[1]) ? 2 : 0;
  if (b[0] >= 0xE0 && b[0] <= 0xEF) {
    if (n < 3 || !is_continuation(b[1]) || !is_continuation(b[2])) return 0;
    if (b[0] == 0xE0 && b[1] < 0xA0) return 0;   // overlong
    if (b[0] == 0xED && b[1] >= 0xA0) return 0;  // UTF-16 surrogates
    return 3;
  }
  if (b[0] >= 0xF0 && b[0] <= 0xF4) {
    if (n < 4 || !is_continuation(b[1]) || !is_continuation(b[2]) || !is_continuation(b[3])) return 0;
    if (b[0] == 0xF0 && b[1] < 0x90) return 0;   // overlong
    if (b[0] == 0xF4 && b[1] >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

bool is_valid_utf8(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    if (static_cast<unsigned char>(bytes[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t length = utf8_sequence_length(bytes.substr(i));
    if (length == 0) return false;
    i += length;
  }
  return true;
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_element_.empty()) {
    if (has_element_.back()) out_ += ',';
    has_element_.back() = true;
  }
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  has_element_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  out_ += '}';
  has_element_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  has_element_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  out_ += ']';
  has_element_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  before_value();
  append_escaped(name);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::string(std::string_view text) {
  before_value();
  append_escaped(text);
  return *this;
}

JsonWriter& JsonWriter::number(int64_t n) {
  before_value();
  out_ += std::to_string(n);
  return *this;
}

JsonWriter& JsonWriter::unsigned_number(uint64_t n) {
  before_value();
  out_ += std::to_string(n);
  return *this;
}

JsonWriter& JsonWriter::real(double d) {
  before_value();
  if (!std::isfinite(d)) {
    out_ += "null";
    return *this;
  }
  char buf[32];
  const int n = std::snprintf(buf, sizeof buf, "%.6g", d);
  out_.append(buf, static_cast<size_t>(n));
  return *this;
}

JsonWriter& JsonWriter::boolean(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  before_value();
  out_ += json;
  return *this;
}

void JsonWriter::append_escaped(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out_ += '"';
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const size_t length = utf8_sequence_length(text.substr(i));
      if (length == 0) {
        out_ += "\xEF\xBF\xBD";  // U+FFFD
        ++i;
      } else {
        out_.append(text.substr(i, length));
        i += length;
      }
      continue;
    }
    switch (c) {
      case '"':
        out_ += "\\\"";
        break;
      case '\\':
        out_ += "\\\\";
        break;
      case '\n':
        out_ += "\\n";
        break;
      case '\r':
        out_ += "\\r";
        break;
      case '\t':
        out_ += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f || c == '<' || c == '>') {
          out_ += "\\u00";
          out_ += kHex[c >> 4];
          out_ += kHex[c & 0xf];
        } else {
          out_ += static_cast<char>(c);
        }
    }
    ++i;
  }
  out_ += '"';
}

const JsonValue* JsonValue::get(std::string_view name) const {
  if (type_ != Type::kObject) return nullptr;
  auto it = members_.find(name);
  return it == members_.end() ? nullptr : &it->second;
}

std::optional<uint64_t> JsonValue::as_u64() const {
  if (type_ != Type::kNumber) return std::nullopt;
  uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text_.data(), text_.data() + text_.size(), v);
  if (ec != std::errc() || ptr != text_.data() + text_.size()) return std::nullopt;
  return v;
}

std::optional<uint64_t> JsonValue::u64_of(std::string_view name) const {
  const JsonValue* v = get(name);
  if (v == nullptr) return std::nullopt;
  return v->as_u64();
}

std::optional<int64_t> JsonValue::as_i64() const {
  if (type_ != Type::kNumber) return std::nullopt;
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text_.data(), text_.data() + text_.size(), v);
  if (ec != std::errc() || ptr != text_.data() + text_.size()) return std::nullopt;
  return v;
}

// Recursive descent over RFC 8259's grammar; the first error ends the parse.
class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : text_(text) {}

  Result<JsonValue> parse() {
    JsonValue v;
    skip_blanks();
    if (!value(v, 0)) return error();
    skip_blanks();
    if (pos_ != text_.size()) {
      problem_ = "text after the value";
      return error();
    }
    return v;
  }

 private:
  Status error() const {
    return Status(Code::kProtocolError, "the request body is not valid JSON: " + problem_,
                  {{"reason", problem_}, {"at", std::to_string(pos_)}});
  }

  bool fail(const char* why) {
    problem_ = why;
    return false;
  }

  void skip_blanks() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return fail("an unknown literal");
    pos_ += word.size();
    return true;
  }

  bool value(JsonValue& out, size_t depth) {
    if (depth >= kMaxJsonDepth) return fail("nested too deep");
    if (pos_ >= text_.size()) return fail("the text ends where a value belongs");
    const char c = text_[pos_];
    switch (c) {
      case '{':
        return object(out, depth);
      case '[':
        return array(out, depth);
      case '"':
        out.type_ = JsonValue::Type::kString;
        return string(out.text_);
      case 't':
        out.type_ = JsonValue::Type::kBool;
        out.boolean_ = true;
        return literal("true");
      case 'f':
        out.type_ = JsonValue::Type::kBool;
        return literal("false");
      case 'n':
        return literal("null");
      default:
        return number(out);
    }
  }

  bool object(JsonValue& out, size_t depth) {
    out.type_ = JsonValue::Type::kObject;
    ++pos_;
    skip_blanks();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return true;
    }
    for (;;) {
      skip_blanks();
      if (pos_ >= text_.size() || text_[pos_] != '"') return fail("an object key must be a string");
      std::string name;
      if (!string(name)) return false;
      skip_blanks();
      if (pos_ >= text_.size() || text_[pos_] != ':') return fail("':' expected after an object key");
      ++pos_;
      skip_blanks();
      JsonValue member;
      if (!value(member, depth + 1)) return false;
      if (!out.members_.emplace(std::move(name), std::move(member)).second) return fail("a duplicate key");
      skip_blanks();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return fail("',' or '}' expected in an object");
    }
  }

  bool array(JsonValue& out, size_t depth) {
    out.type_ = JsonValue::Type::kArray;
    ++pos_;
    skip_blanks();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return true;
    }
    for (;;) {
      skip_blanks();
      JsonValue item;
      if (!value(item, depth + 1)) return false;
      out.items_.push_back(std::move(item));
      skip_blanks();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return fail("',' or ']' expected in an array");
    }
  }

  bool hex4(uint32_t& out) {
    if (pos_ + 4 > text_.size()) return fail("a short \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_++];
      out <<= 4;
      if (h >= '0' && h <= '9') {
        out |= static_cast<uint32_t>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        out |= static_cast<uint32_t>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        out |= static_cast<uint32_t>(h - 'A' + 10);
      } else {
        return fail("a bad \\u escape");
      }
    }
    return true;
  }

  bool string(std::string& out) {
    ++pos_;  // the opening quote
    for (;;) {
      if (pos_ >= text_.size()) return fail("an unterminated string");
      const auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return fail("a control character in a string");
      if (c >= 0x80) {
        const size_t length = utf8_sequence_length(text_.substr(pos_));
        if (length == 0) return fail("a string that is not UTF-8");
        out.append(text_.substr(pos_, length));
        pos_ += length;
        continue;
      }
      ++pos_;
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (pos_ >= text_.size()) return fail("an unterminated string");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low = 0;
            if (text_.substr(pos_, 2) != "\\u") return fail("an unpaired surrogate");
            pos_ += 2;
            if (!hex4(low)) return false;
            if (low < 0xDC00 || low > 0xDFFF) return fail("an unpaired surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return fail("an unpaired surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default:
          return fail("an unknown escape");
      }
    }
  }

  bool number(JsonValue& out) {
    const size_t start = pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '0') {
      ++pos_;
    } else if (digits() == 0) {
      return fail("an unexpected character");
    }
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      if (digits() == 0) return fail("a number without digits after '.'");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (digits() == 0) return fail("a number without digits in its exponent");
    }
    out.type_ = JsonValue::Type::kNumber;
    out.text_ = std::string(text_.substr(start, pos_ - start));
    return true;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string problem_;
};

Result<JsonValue> parse_json(std::string_view text) { return JsonParser(text).parse(); }

}  // namespace streamd::http_api
