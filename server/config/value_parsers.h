// The value parsers behind every config key (docs/CONFIG.md §Values): each reads one text value into
// its field, or returns the error text that start-up prints after the key. Internal to server/config.
#pragma once

#include <charconv>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/config/config.h"

namespace streamd::config_values {

using Error = std::optional<std::string>;

Error parse_endpoint(const std::string& value, Endpoint& out);
// An endpoint, or nullopt for the empty value (the listener is off).
Error parse_optional_endpoint(const std::string& value, std::optional<Endpoint>& out);
Error parse_size(const std::string& value, uint64_t min, uint64_t max, uint64_t& out);
// Policy sizes are int64 fields whose zero means "default"; negatives cannot be spelled here.
Error parse_policy_size(const std::string& value, int64_t& out);
Error parse_dur(const std::string& value, std::chrono::milliseconds& out);
Error parse_bool(const std::string& value, bool& out);
Error parse_level(const std::string& value, std::string& out);
// storage.postgres.shards: "NAME: DSN" entries separated by ';' or new lines (docs/CONFIG.md).
Error parse_shards(const std::string& value, std::vector<PostgresShard>& out);
std::string show_shards(const std::vector<PostgresShard>& shards);  // passwords redacted
std::string show_size(uint64_t n);
std::string show_dur(std::chrono::milliseconds d);
std::string show_optional_endpoint(const std::optional<Endpoint>& e);

template <class Int>
Error parse_int(const std::string& value, Int min, Int max, Int& out) {
  Int parsed{};
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (ec != std::errc() || end != value.data() + value.size() || value.empty() || parsed < min ||
      parsed > max) {
    return "expected an integer from " + std::to_string(min) + " to " + std::to_string(max) + ", got \"" +
           value + "\"";
  }
  out = parsed;
  return std::nullopt;
}

}  // namespace streamd::config_values
