// Config: everything streamd reads at start-up, from a YAML file and from command-line flags.
//
// Every setting has one dotted key ("limits.max_frame_bytes"); the same key names it in YAML (as
// nested maps), as a flag ("--limits.max-frame-bytes": dots kept, underscores become dashes), in
// `streamd --help`, and in every error message. A flag wins over the file. Values are checked as they
// are read, so a bad file or value stops start-up naming the key (exit code 78, EX_CONFIG).
// Config is a plain value; the functions here are pure apart from reading the config file.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/storage/policy.h"

namespace streamd {

// A TCP address to listen on: a host name or IP literal (IPv6 in brackets in text) and a port.
struct Endpoint {
  std::string host;
  uint16_t port = 0;
  std::string str() const;
  bool operator==(const Endpoint&) const = default;
};

enum class LogFormat { kText, kJson };

struct Limits {
  uint64_t max_frame_bytes = 16ull << 20;
  uint32_t max_connections = 1024;
  // Per connection: request bytes read but not yet answered plus answer bytes not yet written. Past
  // it the connection stops reading its socket until answers drain.
  uint64_t max_inflight_bytes = 64ull << 20;
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(10)};  // 0: never
  // A frame must arrive whole within this long of its first byte (slow-loris clients); 0: never.
  std::chrono::milliseconds frame_timeout{std::chrono::seconds(30)};
  // Per connection: long-poll reads waiting at once; one more is refused with UNAVAILABLE.
  uint32_t max_waiting_reads = 1000;
  // The broker's: partitions across all streams; a create past it is refused (BrokerOptions).
  uint32_t max_partitions = 100000;
  // Idempotent producers' states over all partitions, and how long one may go unused before it goes
  // (docs/SEMANTICS.md §11).
  uint64_t max_producers = 100000;
  std::chrono::milliseconds producer_idle_expiry{std::chrono::hours(24 * 7)};
  // The longest transaction timeout a transactional producer may ask for, how many transactional ids
  // the coordinator holds, and how long one with no transaction open is kept unused
  // (docs/TRANSACTIONS.md).
  std::chrono::milliseconds max_transaction_timeout{std::chrono::minutes(15)};
  uint64_t max_transactional_ids = 100000;
  std::chrono::milliseconds transactional_id_expiry{std::chrono::hours(24 * 7)};
};

// The Kafka wire-protocol listener (docs/KAFKA.md).
struct KafkaConfig {
  std::optional<Endpoint> listen;    // nullopt (the built-in default): no Kafka listener
  std::optional<Endpoint> tls_listen;  // the same protocol over TLS; nullopt: none
  std::string advertised_listener;   // HOST:PORT told to clients; empty: the listen address, bound port
  std::string advertised_tls_listener;  // the same for clients of tls_listen
  int32_t node_id = 0;
  bool enforce_placement = false;    // refuse keyed batches off their FNV-1a partition
  // SASL mechanisms offered (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512); empty: no SASL APIs at all.
  std::vector<std::string> sasl_mechanisms;
};

enum class ClientAuth { kNone, kOptional, kRequired };

// The certificate and policy of every TLS listener (docs/SECURITY.md): one identity per broker.
struct TlsConfig {
  std::string cert_file;       // PEM certificate chain, the server's first
  std::string key_file;        // PEM private key of the first certificate
  std::string client_ca_file;  // PEM CAs whose client certificates are accepted (mTLS)
  ClientAuth client_auth = ClientAuth::kNone;
  std::string min_version = "1.2";  // "1.2" or "1.3"
  // TLS 1.2 cipher suites (OpenSSL's list syntax): forward-secret AEAD only. TLS 1.3's own suites
  // are all AEAD and stay OpenSSL's default.
  std::string ciphers =
      "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
      "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
};

// Where streams are kept (docs/ENGINES.md).
enum class EngineKind { kFile, kMemory, kPostgres };

// One of storage.postgres.shards: the shard's name (its identity, recorded in its database) and the
// libpq connection string of that database.
struct PostgresShard {
  std::string name;
  std::string dsn;
  bool operator==(const PostgresShard&) const = default;
};

struct StorageConfig {
  EngineKind engine = EngineKind::kFile;
  uint64_t memory_max_bytes = 1ull << 30;  // the memory engine's capacity
  std::string postgres_dsn;                // libpq connection string of the postgres engine's database
  uint32_t postgres_pool = 4;              // its connections (and threads that append and commit)
  // How often the engine re-reads what other brokers changed, NOTIFY or not.
  std::chrono::milliseconds postgres_poll_interval{250};
  bool postgres_notify = true;  // LISTEN/NOTIFY between brokers
  // How long a statement may go unanswered before its connection is given up (0: forever).
  std::chrono::milliseconds postgres_reply_timeout{30000};
  std::chrono::milliseconds postgres_resend_unknown_for{20000};
  // Several databases, each a shard holding whole streams (instead of postgres_dsn's one).
  std::vector<PostgresShard> postgres_shards;
  // The file engine keeps at most this many partition files open (idle partitions close and reopen
  // on use); 0: derived at start-up from the open-file and memory-map limits (docs/CONFIG.md).
  uint64_t max_open_files = 0;
  // The file engine's groups of at most this many bytes are made durable by the shared journal, one
  // sync for many partitions; 0: no journal, every group syncs its partition's segment.
  uint64_t journal_group_bytes = 64 << 10;
  // A journal checkpoint (the segments it made durable synced, its file removed) starts each time its
  // file holds this many bytes.
  uint64_t journal_file_bytes = 64ull << 20;
};

// The HTTP API and the web console on the HTTP listeners (docs/HTTP.md, docs/CONSOLE.md).
struct ConsoleConfig {
  bool enabled = true;         // /api/v1 and /ui/; off: the HTTP listeners serve the probes and /metrics only
  bool export_enabled = true;  // GET …/export (NDJSON); off for brokers whose data must not leave in bulk
  // Host names the API and console answer to besides localhost and loopback addresses, when no access
  // file is set (with one, any name: a page on another name gets no credentials).
  std::vector<std::string> allowed_hosts;
  uint64_t max_body_bytes = 4ull << 20;  // largest HTTP request body (a produce batch); larger is 413
};

struct Config {
  Endpoint listen{"127.0.0.1", 7411};
  std::optional<Endpoint> tls_listen;  // the protocol over TLS; nullopt (the default): none
  Endpoint http_listen{"127.0.0.1", 7412};
  std::optional<Endpoint> http_tls_listen;  // HTTPS beside http_listen; nullopt: none
  // /metrics: per-partition series besides the per-stream ones (server/stream_metrics.h).
  bool metrics_per_partition = false;
  std::string data_dir = "./data";
  std::string log_level = "info";
  LogFormat log_format = LogFormat::kText;
  std::string log_file;  // empty: standard error
  std::string auth_token_file;  // the access file; empty: none, and every connection may do everything
  bool auth_http_require_token = false;  // /metrics (all but /healthz, /readyz) wants a bearer token
  TlsConfig tls;
  bool auto_create_streams = true;
  Policy default_policy;
  Limits limits;
  StorageConfig storage;
  uint32_t storage_threads = 16;
  std::chrono::milliseconds retention_check_period{std::chrono::seconds(5)};  // 0: off
  std::chrono::milliseconds compaction_period{0};                             // 0: off (opt-in)
  // How long SIGTERM waits for in-flight requests to be answered before closing connections anyway.
  std::chrono::milliseconds shutdown_timeout{std::chrono::seconds(5)};
  KafkaConfig kafka;
  ConsoleConfig console;
};

struct ConfigError {
  std::string key;  // the dotted key, or "config" for the file itself
  std::string message;
  // "streamd: config key KEY: MESSAGE", the line start-up prints.
  std::string str() const;
};

// One setting: its key, its help line, how to read a value into a Config and how to print it back.
struct ConfigKey {
  std::string_view key;
  std::string_view value_name;  // what --help shows after the flag: DURATION, BYTES, HOST:PORT, …
  std::string_view help;
  std::optional<std::string> (*apply)(Config& config, const std::string& value);  // error text, or nullopt
  std::string (*show)(const Config& config);
};

// Every setting, in the order the sample config and --help list them.
const std::vector<ConfigKey>& config_keys();
// A libpq DSN as logs and --help print it: a password=… (keyword form) or user:password@ (URI form)
// replaced by ***.
std::string redact_dsn(std::string dsn);
// "limits.max_frame_bytes" → "--limits.max-frame-bytes".
std::string flag_name(std::string_view key);

// Applies a YAML document on top of `config`. Unknown keys are errors: a typo must not be ignored.
std::optional<ConfigError> apply_yaml(std::string_view yaml, Config& config);
std::optional<ConfigError> load_config_file(const std::string& path, Config& config);
// Checks what single values cannot: the default policy as a whole (Policy::validate), and settings
// that need each other (a TLS listener and a certificate, SASL and an access file, …).
std::optional<ConfigError> validate_config(const Config& config);

struct StartupOptions {
  Config config;
  std::string config_path;  // empty: defaults and flags only
  // Where to write the bound ports once listening (ready_file.h), for supervisors and tests.
  std::string ready_file;
  // Create (or check) the postgres engine's schema in storage.postgres.dsn, then exit.
  bool init_postgres = false;
};

// What the command line asks for: run with options, or print `output` and exit with `exit_code`
// (--help, --version, or a configuration error).
struct CommandLine {
  std::optional<StartupOptions> options;
  int exit_code = 0;
  std::string output;
};

inline constexpr int kExitConfig = 78;

CommandLine parse_command_line(int argc, const char* const* argv);

}  // namespace streamd
