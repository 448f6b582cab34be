#include "server/config/value_parsers.h"

#include <algorithm>
#include <limits>

#include "server/config/duration.h"

namespace streamd::config_values {

Error parse_endpoint(const std::string& value, Endpoint& out) {
  const size_t colon = value.rfind(':');
  if (colon == std::string::npos || colon == 0) return "expected HOST:PORT, got \"" + value + "\"";
  std::string host = value.substr(0, colon);
  // Brackets hold an IPv6 literal and nothing else, and a host with a colon is written in them: the
  // one spelling Endpoint::str() prints back, so that every accepted endpoint reloads as itself.
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return "bad IPv6 literal in \"" + value + "\"";
    host = host.substr(1, host.size() - 2);
    if (host.find(':') == std::string::npos || host.find_first_of("[]") != std::string::npos) {
      return "bad IPv6 literal in \"" + value + "\"";
    }
  } else if (host.find_first_of("[]:") != std::string::npos) {
    return "a host with ':' is an IPv6 literal, written in brackets ([::1]:PORT), in \"" + value + "\"";
  }
  const std::string port_text = value.substr(colon + 1);
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535 || port_text.empty()) {
    return "expected a port 0-65535 in \"" + value + "\"";
  }
  out.host = std::move(host);
  out.port = static_cast<uint16_t>(port);
  return std::nullopt;
}

namespace {

// The entries of a shard list: split at ';' and new lines outside single quotes (a DSN quotes a value
// that holds either), each trimmed; empty entries dropped.
std::vector<std::string> shard_entries(const std::string& value) {
  std::vector<std::string> out;
  std::string current;
  bool quoted = false;
  auto flush = [&] {
    const size_t b = current.find_first_not_of(" \t\r");
    const size_t e = current.find_last_not_of(" \t\r");
    if (b != std::string::npos) out.push_back(current.substr(b, e - b + 1));
    current.clear();
  };
  for (size_t i = 0; i < value.size(); ++i) {
    const char ch = value[i];
    if (ch == '\\' && quoted && i + 1 < value.size()) {
      current += ch;
      current += value[++i];
      continue;
    }
    if (ch == '\'') quoted = !quoted;
    if (!quoted && (ch == ';' || ch == '\n')) {
      flush();
      continue;
    }
    current += ch;
  }
  flush();
  return out;
}

bool shard_name_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
}

}  // namespace

Error parse_shards(const std::string& value, std::vector<PostgresShard>& out) {
  std::vector<PostgresShard> shards;
  for (const std::string& entry : shard_entries(value)) {
    const size_t colon = entry.find(':');
    const std::string name = colon == std::string::npos ? std::string() : entry.substr(0, colon);
    if (name.empty() || name.size() > 63 || !std::all_of(name.begin(), name.end(), shard_name_char)) {
      return "expected NAME: DSN entries separated by ';' (a name of 1-63 letters, digits, '_' or '-'), got \"" +
             redact_dsn(entry) + "\"";
    }
    const size_t start = entry.find_first_not_of(" \t", colon + 1);
    if (start == std::string::npos) return "shard " + name + " has no DSN";
    for (const PostgresShard& s : shards) {
      if (s.name == name) return "shard " + name + " is named twice";
    }
    shards.push_back({name, entry.substr(start)});
  }
  out = std::move(shards);
  return std::nullopt;
}

std::string show_shards(const std::vector<PostgresShard>& shards) {
  std::string out;
  for (const PostgresShard& s : shards) out += (out.empty() ? "" : "; ") + s.name + ": " + redact_dsn(s.dsn);
  return out;
}

Error parse_size(const std::string& value, uint64_t min, uint64_t max, uint64_t& out) {
  auto parsed = parse_byte_size(value);
  if (!parsed || *parsed < min || *parsed > max) {
    return "expected a byte size from " + std::to_string(min) + " to " + std::to_string(max) +
           " (an integer, optionally with KiB, MiB or GiB), got \"" + value + "\"";
  }
  out = *parsed;
  return std::nullopt;
}

Error parse_policy_size(const std::string& value, int64_t& out) {
  uint64_t parsed = 0;
  if (auto e = parse_size(value, 0, static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), parsed))
    return e;
  out = static_cast<int64_t>(parsed);
  return std::nullopt;
}

Error parse_dur(const std::string& value, std::chrono::milliseconds& out) {
  auto parsed = parse_duration(value);
  if (!parsed) return "expected a duration such as 500ms, 10s, 5m, 2h, 7d or 1h30m, got \"" + value + "\"";
  out = *parsed;
  return std::nullopt;
}

Error parse_bool(const std::string& value, bool& out) {
  if (value == "true" || value == "yes" || value == "on") {
    out = true;
  } else if (value == "false" || value == "no" || value == "off") {
    out = false;
  } else {
    return "expected true or false, got \"" + value + "\"";
  }
  return std::nullopt;
}

Error parse_level(const std::string& value, std::string& out) {
  for (const char* level : {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
    if (value == level) {
      out = value;
      return std::nullopt;
    }
  }
  return "expected one of trace, debug, info, warn, error, critical, off; got \"" + value + "\"";
}

std::string show_size(uint64_t n) {
  return std::to_string(n);
}
std::string show_dur(std::chrono::milliseconds d) {
  return format_duration(d);
}

Error parse_optional_endpoint(const std::string& value, std::optional<Endpoint>& out) {
  if (value.empty()) {
    out.reset();
    return std::nullopt;
  }
  Endpoint e;
  if (auto err = parse_endpoint(value, e)) return err;
  out = e;
  return std::nullopt;
}

std::string show_optional_endpoint(const std::optional<Endpoint>& e) { return e ? e->str() : std::string(); }

}  // namespace streamd::config_values
