#include "server/config/config.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <fstream>
#include <limits>
#include <sstream>

#include "server/config/duration.h"

namespace streamd {
namespace {

using Error = std::optional<std::string>;

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

Error parse_size(const std::string& value, uint64_t min, uint64_t max, uint64_t& out) {
  auto parsed = parse_byte_size(value);
  if (!parsed || *parsed < min || *parsed > max) {
    return "expected a byte size from " + std::to_string(min) + " to " + std::to_string(max) +
           " (an integer, optionally with KiB, MiB or GiB), got \"" + value + "\"";
  }
  out = *parsed;
  return std::nullopt;
}

// Policy sizes are int64 fields whose zero means "default"; negatives cannot be spelled here.
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

const std::vector<ConfigKey> kKeys = {
    {"listen", "HOST:PORT", "address of the protocol listener (port 0 picks a free one)",
     [](Config& c, const std::string& v) { return parse_endpoint(v, c.listen); },
     [](const Config& c) { return c.listen.str(); }},
    {"http_listen", "HOST:PORT", "address of the HTTP listener serving /healthz, /readyz and /metrics",
     [](Config& c, const std::string& v) { return parse_endpoint(v, c.http_listen); },
     [](const Config& c) { return c.http_listen.str(); }},
    {"metrics.per_partition", "BOOL",
     "also serve each partition's bounds, bytes and segments on /metrics (default: per-stream sums only)",
     [](Config& c, const std::string& v) { return parse_bool(v, c.metrics_per_partition); },
     [](const Config& c) { return std::string(c.metrics_per_partition ? "true" : "false"); }},
    {"data_dir", "PATH", "directory holding every stream (mode 0700; locked by one broker)",
     [](Config& c, const std::string& v) -> Error {
       if (v.empty()) return "must not be empty";
       c.data_dir = v;
       return std::nullopt;
     },
     [](const Config& c) { return c.data_dir; }},
    {"log_level", "LEVEL", "trace, debug, info, warn, error, critical or off",
     [](Config& c, const std::string& v) { return parse_level(v, c.log_level); },
     [](const Config& c) { return c.log_level; }},
    {"log_format", "text|json", "text or json (one JSON object per line)",
     [](Config& c, const std::string& v) -> Error {
       if (v == "text") {
         c.log_format = LogFormat::kText;
       } else if (v == "json") {
         c.log_format = LogFormat::kJson;
       } else {
         return "expected text or json, got \"" + v + "\"";
       }
       return std::nullopt;
     },
     [](const Config& c) { return std::string(c.log_format == LogFormat::kJson ? "json" : "text"); }},
    {"log_file", "PATH", "log to this file instead of standard error; SIGHUP reopens it (log rotation)",
     [](Config& c, const std::string& v) -> Error {
       c.log_file = v;
       return std::nullopt;
     },
     [](const Config& c) { return c.log_file; }},
    {"auth.token_file", "PATH",
     "access tokens, one \"read|write|admin TOKEN\" per line, mode 600; Hello must carry one (SIGHUP reloads)",
     [](Config& c, const std::string& v) -> Error {
       c.auth_token_file = v;
       return std::nullopt;
     },
     [](const Config& c) { return c.auth_token_file; }},
    {"auto_create_streams", "BOOL", "create a stream with default_policy on its first append",
     [](Config& c, const std::string& v) { return parse_bool(v, c.auto_create_streams); },
     [](const Config& c) { return std::string(c.auto_create_streams ? "true" : "false"); }},
    {"default_policy.partitions", "N", "partitions of an auto-created stream (0 means 1)",
     [](Config& c, const std::string& v) {
       return parse_int<int32_t>(v, 0, 1 << 20, c.default_policy.partitions);
     },
     [](const Config& c) { return std::to_string(c.default_policy.partitions); }},
    {"default_policy.max_record_bytes", "BYTES", "largest record, key + payload + headers (0 means 1MiB)",
     [](Config& c, const std::string& v) { return parse_policy_size(v, c.default_policy.max_record_bytes); },
     [](const Config& c) { return std::to_string(c.default_policy.max_record_bytes); }},
    {"default_policy.retain_for", "DURATION", "drop whole segments older than this (0 keeps forever)",
     [](Config& c, const std::string& v) { return parse_dur(v, c.default_policy.retain_for); },
     [](const Config& c) { return show_dur(c.default_policy.retain_for); }},
    {"default_policy.retain_bytes", "BYTES", "keep at most this many bytes per partition (0 is unbounded)",
     [](Config& c, const std::string& v) { return parse_policy_size(v, c.default_policy.retain_bytes); },
     [](const Config& c) { return std::to_string(c.default_policy.retain_bytes); }},
    {"default_policy.max_bytes", "BYTES",
     "appends wait for room above this many bytes per stream (0 is unbounded)",
     [](Config& c, const std::string& v) { return parse_policy_size(v, c.default_policy.max_bytes); },
     [](const Config& c) { return std::to_string(c.default_policy.max_bytes); }},
    {"default_policy.block_timeout", "DURATION",
     "how long a full stream's append waits before STREAM_FULL (needs max_bytes)",
     [](Config& c, const std::string& v) { return parse_dur(v, c.default_policy.block_timeout); },
     [](const Config& c) { return show_dur(c.default_policy.block_timeout); }},
    {"default_policy.segment_bytes", "BYTES",
     "segment file size, the unit retention releases (0 means 64MiB)",
     [](Config& c, const std::string& v) { return parse_policy_size(v, c.default_policy.segment_bytes); },
     [](const Config& c) { return std::to_string(c.default_policy.segment_bytes); }},
    {"default_policy.compact_after", "DURATION", "records this old may be compacted away (0 never compacts)",
     [](Config& c, const std::string& v) { return parse_dur(v, c.default_policy.compact_after); },
     [](const Config& c) { return show_dur(c.default_policy.compact_after); }},
    {"limits.max_frame_bytes", "BYTES", "largest protocol frame; a larger one is FRAME_TOO_LARGE and a close",
     [](Config& c, const std::string& v) {
       return parse_size(v, 1024, 1ull << 30, c.limits.max_frame_bytes);
     },
     [](const Config& c) { return show_size(c.limits.max_frame_bytes); }},
    {"limits.max_connections", "N", "protocol connections at once; the next one gets UNAVAILABLE",
     [](Config& c, const std::string& v) {
       return parse_int<uint32_t>(v, 1, 1u << 20, c.limits.max_connections);
     },
     [](const Config& c) { return std::to_string(c.limits.max_connections); }},
    {"limits.max_inflight_bytes", "BYTES",
     "per connection: unanswered bytes before it stops reading its socket",
     [](Config& c, const std::string& v) {
       return parse_size(v, 1024, 1ull << 40, c.limits.max_inflight_bytes);
     },
     [](const Config& c) { return show_size(c.limits.max_inflight_bytes); }},
    {"limits.idle_timeout", "DURATION",
     "close a connection silent this long with nothing in flight, or not reading its answers (0 never)",
     [](Config& c, const std::string& v) { return parse_dur(v, c.limits.idle_timeout); },
     [](const Config& c) { return show_dur(c.limits.idle_timeout); }},
    {"limits.frame_timeout", "DURATION",
     "close a connection whose frame has not arrived whole this long after its first byte (0 never)",
     [](Config& c, const std::string& v) { return parse_dur(v, c.limits.frame_timeout); },
     [](const Config& c) { return show_dur(c.limits.frame_timeout); }},
    {"limits.max_waiting_reads", "N",
     "per connection: long-poll reads waiting at once; the next one is refused with UNAVAILABLE",
     [](Config& c, const std::string& v) {
       return parse_int<uint32_t>(v, 1, 1u << 24, c.limits.max_waiting_reads);
     },
     [](const Config& c) { return std::to_string(c.limits.max_waiting_reads); }},
    {"limits.max_partitions", "N",
     "partitions across all streams; a create that would pass it is refused STREAM_MISCONFIGURED",
     [](Config& c, const std::string& v) {
       return parse_int<uint32_t>(v, 1, 1u << 24, c.limits.max_partitions);
     },
     [](const Config& c) { return std::to_string(c.limits.max_partitions); }},
    {"storage.engine", "file|memory",
     "where streams are kept: file (data_dir, durable) or memory (gone at restart)",
     [](Config& c, const std::string& v) -> Error {
       if (v == "file") {
         c.storage.engine = EngineKind::kFile;
       } else if (v == "memory") {
         c.storage.engine = EngineKind::kMemory;
       } else if (v == "postgres") {
         return "the postgres engine is not available in this version of streamd; expected file or memory";
       } else {
         return "expected file or memory, got \"" + v + "\"";
       }
       return std::nullopt;
     },
     [](const Config& c) { return std::string(c.storage.engine == EngineKind::kMemory ? "memory" : "file"); }},
    {"storage.memory.max_bytes", "BYTES",
     "the memory engine holds at most this many bytes of records; appends past it are STREAM_FULL",
     [](Config& c, const std::string& v) { return parse_size(v, 1 << 20, 1ull << 50, c.storage.memory_max_bytes); },
     [](const Config& c) { return show_size(c.storage.memory_max_bytes); }},
    {"storage_threads", "N", "threads that write and fdatasync partitions (group commit)",
     [](Config& c, const std::string& v) { return parse_int<uint32_t>(v, 1, 256, c.storage_threads); },
     [](const Config& c) { return std::to_string(c.storage_threads); }},
    {"retention_check_period", "DURATION",
     "how often retain_for and retain_bytes are applied (0 turns retention off)",
     [](Config& c, const std::string& v) { return parse_dur(v, c.retention_check_period); },
     [](const Config& c) { return show_dur(c.retention_check_period); }},
    {"compaction_period", "DURATION",
     "opt-in: compact every stream with a compact_after this often (0 is off)",
     [](Config& c, const std::string& v) { return parse_dur(v, c.compaction_period); },
     [](const Config& c) { return show_dur(c.compaction_period); }},
    {"shutdown_timeout", "DURATION",
     "on SIGTERM, how long in-flight requests get to be answered before connections close",
     [](Config& c, const std::string& v) { return parse_dur(v, c.shutdown_timeout); },
     [](const Config& c) { return show_dur(c.shutdown_timeout); }},
    {"kafka.listen", "HOST:PORT",
     "address of the Kafka wire-protocol listener (port 0 picks a free one); empty, the default, disables it",
     [](Config& c, const std::string& v) -> Error {
       if (v.empty()) {
         c.kafka.listen.reset();
         return std::nullopt;
       }
       Endpoint e;
       if (auto err = parse_endpoint(v, e)) return err;
       c.kafka.listen = e;
       return std::nullopt;
     },
     [](const Config& c) { return c.kafka.listen ? c.kafka.listen->str() : std::string(); }},
    {"kafka.advertised_listener", "HOST:PORT",
     "the address Kafka clients are told to connect to; empty: kafka.listen's host and bound port",
     [](Config& c, const std::string& v) -> Error {
       if (!v.empty()) {
         Endpoint e;
         if (auto err = parse_endpoint(v, e)) return err;
         if (e.host.empty()) return "expected HOST:PORT with a host, got \"" + v + "\"";
       }
       c.kafka.advertised_listener = v;
       return std::nullopt;
     },
     [](const Config& c) { return c.kafka.advertised_listener; }},
    {"kafka.node_id", "N", "the broker id Kafka clients see in Metadata and FindCoordinator",
     [](Config& c, const std::string& v) { return parse_int<int32_t>(v, 0, 2147483647, c.kafka.node_id); },
     [](const Config& c) { return std::to_string(c.kafka.node_id); }},
    {"kafka.enforce_placement", "BOOL",
     "refuse a Kafka batch whose keyed records do not hash (FNV-1a) to the partition it was sent to",
     [](Config& c, const std::string& v) { return parse_bool(v, c.kafka.enforce_placement); },
     [](const Config& c) { return std::string(c.kafka.enforce_placement ? "true" : "false"); }},
};

const ConfigKey* find_key(std::string_view key) {
  for (const ConfigKey& k : kKeys) {
    if (k.key == key) return &k;
  }
  return nullptr;
}

std::optional<ConfigError> apply_node(const YAML::Node& node, const std::string& path, Config& config) {
  if (node.IsMap()) {
    for (const auto& item : node) {
      const std::string name = item.first.as<std::string>();
      // Named after the map it is in: an error naming no key at all would read "config key : …".
      if (name.empty()) return ConfigError{path.empty() ? "config" : path, "a key in this map is empty"};
      const std::string key = path.empty() ? name : path + "." + name;
      if (auto e = apply_node(item.second, key, config)) return e;
    }
    return std::nullopt;
  }
  const ConfigKey* k = find_key(path);
  if (k == nullptr) return ConfigError{path, "unknown key"};
  if (node.IsSequence()) return ConfigError{path, "expected a single value, got a list"};
  const std::string value = node.IsNull() ? std::string() : node.Scalar();
  if (auto e = k->apply(config, value)) return ConfigError{path, *e};
  return std::nullopt;
}

}  // namespace

std::string Endpoint::str() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string ConfigError::str() const {
  return "streamd: config key " + key + ": " + message;
}

const std::vector<ConfigKey>& config_keys() {
  return kKeys;
}

std::string flag_name(std::string_view key) {
  std::string flag = "--";
  for (char ch : key) flag += ch == '_' ? '-' : ch;
  return flag;
}

std::optional<ConfigError> apply_yaml(std::string_view yaml, Config& config) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return ConfigError{"config", "not valid YAML: " + std::string(e.what())};
  }
  if (root.IsNull()) return std::nullopt;  // an empty file keeps every default
  if (!root.IsMap()) return ConfigError{"config", "expected a map of keys at the top level"};
  try {
    return apply_node(root, "", config);
  } catch (const YAML::Exception& e) {
    return ConfigError{"config", "not valid YAML: " + std::string(e.what())};
  }
}

std::optional<ConfigError> load_config_file(const std::string& path, Config& config) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ConfigError{"config", "cannot read " + path};
  std::stringstream text;
  text << in.rdbuf();
  if (auto e = apply_yaml(text.str(), config)) {
    if (e->key == "config") e->message = path + ": " + e->message;
    return e;
  }
  return std::nullopt;
}

std::optional<ConfigError> validate_config(const Config& config) {
  Status s = config.default_policy.validate();
  if (!s.ok()) {
    const std::string field = s.field("field");
    return ConfigError{"default_policy" + (field.empty() ? std::string() : "." + field), s.message()};
  }
  if (config.default_policy.normalized().partitions > static_cast<int64_t>(config.limits.max_partitions)) {
    return ConfigError{"default_policy.partitions",
                       "more than limits.max_partitions (" + std::to_string(config.limits.max_partitions) +
                           "): no stream could be auto-created"};
  }
  return std::nullopt;
}

}  // namespace streamd
