// StreamPattern: which stream names a grant covers — one name exactly ("orders"), every name with a
// prefix ("orders.*" covers "orders.eu" and "orders." but not "orders"), or every name ("*"). A value type.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace streamd::auth {

class StreamPattern {
 public:
  // nullopt unless `text` is "*", a name, or a name prefix followed by one '*', in stream-name
  // characters ([A-Za-z0-9._-]).
  static std::optional<StreamPattern> parse(std::string_view text);

  bool matches(std::string_view stream) const;
  bool covers_all() const { return kind_ == Kind::kAll; }
  // As written: "*", "orders.*", "orders".
  std::string str() const;

 private:
  enum class Kind { kExact, kPrefix, kAll };
  StreamPattern(Kind kind, std::string text) : kind_(kind), text_(std::move(text)) {}
  Kind kind_;
  std::string text_;  // the name, or the prefix without its '*'
};

}  // namespace streamd::auth
