#include "server/config/config.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

#include "server/config/duration.h"
#include "server/config/value_parsers.h"

namespace streamd {
namespace {

using namespace config_values;

const std::vector<ConfigKey> kKeys = {
    {"listen", "HOST:PORT", "address of the protocol listener (port 0 picks a free one)",
     [](Config& c, const std::string& v) { return parse_endpoint(v, c.listen); },
     [](const Config& c) { return c.listen.str(); }},
    {"tls_listen", "HOST:PORT",
     "address of the protocol listener over TLS (needs tls.cert_file and tls.key_file); empty: none",
     [](Config& c, const std::string& v) { return parse_optional_endpoint(v, c.tls_listen); },
     [](const Config& c) { return show_optional_endpoint(c.tls_listen); }},
    {"http_listen", "HOST:PORT", "address of the HTTP listener serving /healthz, /readyz and /metrics",
     [](Config& c, const std::string& v) { return parse_endpoint(v, c.http_listen); },
     [](const Config& c) { return c.http_listen.str(); }},
    {"metrics.per_partition", "BOOL",
     "also serve each partition's bounds, bytes and segments on /metrics (default: per-stream sums only)",
     [](Config& c, const std::string& v) { return parse_bool(v, c.metrics_per_partition); },
     [](const Config& c) { return std::string(c.metrics_per_partition ? "true" : "false"); }},
    {"http_tls_listen", "HOST:PORT", "address of the same HTTP endpoints over TLS (HTTPS); empty: none",
     [](Config& c, const std::string& v) { return parse_optional_endpoint(v, c.http_tls_listen); },
     [](const Config& c) { return show_optional_endpoint(c.http_tls_listen); }},
    {"console.enabled", "BOOL", "serve the HTTP API (/api/v1) and the web console (/ui/) on the HTTP listeners",
     [](Config& c, const std::string& v) { return parse_bool(v, c.console.enabled); },
     [](const Config& c) { return std::string(c.console.enabled ? "true" : "false"); }},
    {"console.export", "BOOL", "allow exporting records as NDJSON through the API and the console",
     [](Config& c, const std::string& v) { return parse_bool(v, c.console.export_enabled); },
     [](const Config& c) { return std::string(c.console.export_enabled ? "true" : "false"); }},
    {"console.allowed_hosts", "LIST",
     "host names the API and console answer to besides localhost and loopback addresses (without an access file)",
     [](Config& c, const std::string& v) -> Error {
       std::vector<std::string> hosts;
       std::string_view rest = v;
       while (!rest.empty()) {
         const size_t comma = rest.find(',');
         std::string_view h = rest.substr(0, comma);
         while (!h.empty() && h.front() == ' ') h.remove_prefix(1);
         while (!h.empty() && h.back() == ' ') h.remove_suffix(1);
         if (h.empty() || h.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-[]:") !=
                              std::string_view::npos) {
           return "expected a comma list of host names (no port), got \"" + v + "\"";
         }
         hosts.emplace_back(h);
         rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
       }
       c.console.allowed_hosts = std::move(hosts);
       return std::nullopt;
     },
     [](const Config& c) {
       std::string out;
       for (const std::string& h : c.console.allowed_hosts) out += (out.empty() ? "" : ",") + h;
       return out;
     }},
    {"console.max_body_bytes", "BYTES", "largest HTTP request body (a produce batch); a larger one is refused 413 unread",
     [](Config& c, const std::string& v) { return parse_size(v, 1024, 1ull << 30, c.console.max_body_bytes); },
     [](const Config& c) { return show_size(c.console.max_body_bytes); }},
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
     "the access file: principals, their tokens' SHA-256 digests and their grants on streams; mode 600; "
     "SIGHUP reloads it (empty: every connection may do everything)",
     [](Config& c, const std::string& v) -> Error {
       c.auth_token_file = v;
       return std::nullopt;
     },
     [](const Config& c) { return c.auth_token_file; }},
    {"auth.http_require_token", "BOOL",
     "HTTP: every path but /healthz and /readyz wants \"Authorization: Bearer TOKEN\" of a principal "
     "granted read on *",
     [](Config& c, const std::string& v) { return parse_bool(v, c.auth_http_require_token); },
     [](const Config& c) { return std::string(c.auth_http_require_token ? "true" : "false"); }},
    {"tls.cert_file", "PATH",
     "PEM certificate chain of every TLS listener, the server's own first (SIGHUP reloads)",
     [](Config& c, const std::string& v) -> Error {
       c.tls.cert_file = v;
       return std::nullopt;
     },
     [](const Config& c) { return c.tls.cert_file; }},
    {"tls.key_file", "PATH", "PEM private key of tls.cert_file's first certificate (SIGHUP reloads)",
     [](Config& c, const std::string& v) -> Error {
       c.tls.key_file = v;
       return std::nullopt;
     },
     [](const Config& c) { return c.tls.key_file; }},
    {"tls.client_ca_file", "PATH", "PEM CA certificates that sign accepted client certificates (mTLS)",
     [](Config& c, const std::string& v) -> Error {
       c.tls.client_ca_file = v;
       return std::nullopt;
     },
     [](const Config& c) { return c.tls.client_ca_file; }},
    {"tls.client_auth", "none|optional|required",
     "client certificates: not asked for, verified when sent, or required (needs tls.client_ca_file)",
     [](Config& c, const std::string& v) -> Error {
       if (v == "none") {
         c.tls.client_auth = ClientAuth::kNone;
       } else if (v == "optional") {
         c.tls.client_auth = ClientAuth::kOptional;
       } else if (v == "required") {
         c.tls.client_auth = ClientAuth::kRequired;
       } else {
         return "expected none, optional or required, got \"" + v + "\"";
       }
       return std::nullopt;
     },
     [](const Config& c) -> std::string {
       switch (c.tls.client_auth) {
         case ClientAuth::kOptional:
           return "optional";
         case ClientAuth::kRequired:
           return "required";
         case ClientAuth::kNone:
           break;
       }
       return "none";
     }},
    {"tls.min_version", "1.2|1.3", "oldest TLS version a client may use; older ones fail the handshake",
     [](Config& c, const std::string& v) -> Error {
       if (v != "1.2" && v != "1.3") return "expected 1.2 or 1.3, got \"" + v + "\"";
       c.tls.min_version = v;
       return std::nullopt;
     },
     [](const Config& c) { return c.tls.min_version; }},
    {"tls.ciphers", "LIST", "TLS 1.2 cipher suites, in OpenSSL's syntax (TLS 1.3 keeps its own AEAD suites)",
     [](Config& c, const std::string& v) -> Error {
       if (v.empty()) return "must not be empty";
       c.tls.ciphers = v;
       return std::nullopt;
     },
     [](const Config& c) { return c.tls.ciphers; }},
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
    {"default_policy.timestamp_type", "TYPE",
     "what Kafka consumers see as a record's time: CreateTime (the producer's) or LogAppendTime",
     [](Config& c, const std::string& v) -> Error {
       auto type = parse_timestamp_type(v);
       if (!type) return "expected CreateTime or LogAppendTime, got \"" + v + "\"";
       c.default_policy.timestamp_type = *type;
       return std::nullopt;
     },
     [](const Config& c) { return std::string(timestamp_type_name(c.default_policy.timestamp_type)); }},
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
    {"limits.max_producers", "N",
     "idempotent producers' states over all partitions; past it a partition drops its least recently used",
     [](Config& c, const std::string& v) { return parse_int<uint64_t>(v, 1, 1ull << 32, c.limits.max_producers); },
     [](const Config& c) { return std::to_string(c.limits.max_producers); }},
    {"limits.producer_idle_expiry", "DURATION",
     "an idempotent producer's state unused this long is dropped (its resends from before are then new)",
     [](Config& c, const std::string& v) -> Error {
       if (Error e = parse_dur(v, c.limits.producer_idle_expiry)) return e;
       if (c.limits.producer_idle_expiry.count() > 0) return std::nullopt;
       return std::string("a producer's state must be kept for some time: give a duration above 0");
     },
     [](const Config& c) { return show_dur(c.limits.producer_idle_expiry); }},
    {"limits.max_transaction_timeout", "DURATION",
     "the longest transaction timeout a transactional producer may ask for; its open transaction is aborted after it",
     [](Config& c, const std::string& v) -> Error {
       if (Error e = parse_dur(v, c.limits.max_transaction_timeout)) return e;
       if (c.limits.max_transaction_timeout.count() > 0) return std::nullopt;
       return std::string("transactions need some time: give a duration above 0");
     },
     [](const Config& c) { return show_dur(c.limits.max_transaction_timeout); }},
    {"limits.max_transactional_ids", "N",
     "transactional ids the coordinator holds; past it a new one is refused TOO_MANY_TRANSACTIONAL_IDS",
     [](Config& c, const std::string& v) {
       return parse_int<uint64_t>(v, 1, 1ull << 32, c.limits.max_transactional_ids);
     },
     [](const Config& c) { return std::to_string(c.limits.max_transactional_ids); }},
    {"limits.transactional_id_expiry", "DURATION",
     "a transactional id with no transaction open, unused this long, is forgotten (its producer must initialise again)",
     [](Config& c, const std::string& v) -> Error {
       if (Error e = parse_dur(v, c.limits.transactional_id_expiry)) return e;
       if (c.limits.transactional_id_expiry.count() > 0) return std::nullopt;
       return std::string("an idle id must be kept for some time: give a duration above 0");
     },
     [](const Config& c) { return show_dur(c.limits.transactional_id_expiry); }},
    {"storage.engine", "file|memory|postgres",
     "where streams are kept: file (data_dir, durable), memory (gone at restart) or postgres (one database)",
     [](Config& c, const std::string& v) -> Error {
       if (v == "file") {
         c.storage.engine = EngineKind::kFile;
       } else if (v == "memory") {
         c.storage.engine = EngineKind::kMemory;
       } else if (v == "postgres") {
         c.storage.engine = EngineKind::kPostgres;
       } else {
         return "expected file, memory or postgres, got \"" + v + "\"";
       }
       return std::nullopt;
     },
     [](const Config& c) {
       switch (c.storage.engine) {
         case EngineKind::kMemory:
           return std::string("memory");
         case EngineKind::kPostgres:
           return std::string("postgres");
         case EngineKind::kFile:
           break;
       }
       return std::string("file");
     }},
    {"storage.max_open_files", "N|auto",
     "the file engine keeps at most this many partition files open; idle partitions close (auto: from the "
     "open-file and memory-map limits)",
     [](Config& c, const std::string& v) -> Error {
       if (v == "auto") {
         c.storage.max_open_files = 0;
         return std::nullopt;
       }
       return parse_int<uint64_t>(v, 64, 1ull << 32, c.storage.max_open_files);
     },
     [](const Config& c) {
       return c.storage.max_open_files == 0 ? std::string("auto") : std::to_string(c.storage.max_open_files);
     }},
    {"storage.journal_group_bytes", "BYTES",
     "the file engine's groups of appends up to this size are synced through one journal shared by every "
     "partition; larger ones sync their own segment (0: no journal)",
     [](Config& c, const std::string& v) {
       return parse_size(v, 0, 1ull << 30, c.storage.journal_group_bytes);
     },
     [](const Config& c) { return show_size(c.storage.journal_group_bytes); }},
    {"storage.journal_file_bytes", "BYTES",
     "a journal checkpoint syncs the segments the journal made durable and removes its file each time "
     "the file holds this many bytes",
     [](Config& c, const std::string& v) { return parse_size(v, 64 << 10, 1ull << 32, c.storage.journal_file_bytes); },
     [](const Config& c) { return show_size(c.storage.journal_file_bytes); }},
    {"storage.memory.max_bytes", "BYTES",
     "the memory engine holds at most this many bytes of records; appends past it are STREAM_FULL",
     [](Config& c, const std::string& v) {
       return parse_size(v, 1 << 20, 1ull << 50, c.storage.memory_max_bytes);
     },
     [](const Config& c) { return show_size(c.storage.memory_max_bytes); }},
    {"storage.postgres.dsn", "DSN",
     "libpq connection string of the postgres engine's database (multi-host strings follow a failover)",
     [](Config& c, const std::string& v) -> Error {
       c.storage.postgres_dsn = v;
       return std::nullopt;
     },
     [](const Config& c) { return redact_dsn(c.storage.postgres_dsn); }},
    {"storage.postgres.pool", "N", "connections to PostgreSQL, and threads that append and commit over them",
     [](Config& c, const std::string& v) { return parse_int<uint32_t>(v, 2, 256, c.storage.postgres_pool); },
     [](const Config& c) { return std::to_string(c.storage.postgres_pool); }},
    {"storage.postgres.poll_interval", "DURATION",
     "re-read what other brokers created, appended and committed at least this often (10ms to 1h)",
     [](Config& c, const std::string& v) -> Error {
       std::chrono::milliseconds d{};
       if (Error e = parse_dur(v, d)) return e;
       if (d < std::chrono::milliseconds(10) || d > std::chrono::hours(1))
         return "expected 10ms to 1h, got " + v;
       c.storage.postgres_poll_interval = d;
       return std::nullopt;
     },
     [](const Config& c) { return show_dur(c.storage.postgres_poll_interval); }},
    {"storage.postgres.notify", "BOOL", "LISTEN/NOTIFY between brokers (false: they learn by polling alone)",
     [](Config& c, const std::string& v) { return parse_bool(v, c.storage.postgres_notify); },
     [](const Config& c) { return std::string(c.storage.postgres_notify ? "true" : "false"); }},
    {"storage.postgres.reply_timeout", "DURATION",
     "give a PostgreSQL connection up when a statement goes unanswered this long (a hung server); the "
     "statement's outcome is unknown (0: wait forever)",
     [](Config& c, const std::string& v) { return parse_dur(v, c.storage.postgres_reply_timeout); },
     [](const Config& c) { return show_dur(c.storage.postgres_reply_timeout); }},
    {"storage.postgres.resend_unknown_for", "DURATION",
     "send an idempotent producer's batch whose commit went unanswered again, from the broker, until "
     "the database answers or this long has passed; keep it below clients' request timeouts (0: answer "
     "the unknown outcome at once)",
     [](Config& c, const std::string& v) { return parse_dur(v, c.storage.postgres_resend_unknown_for); },
     [](const Config& c) { return show_dur(c.storage.postgres_resend_unknown_for); }},
    {"storage.postgres.shards", "LIST",
     "several databases, each holding whole streams: \"NAME: DSN; NAME: DSN …\" (instead of "
     "storage.postgres.dsn)",
     [](Config& c, const std::string& v) { return parse_shards(v, c.storage.postgres_shards); },
     [](const Config& c) { return show_shards(c.storage.postgres_shards); }},
    {"storage_threads", "N", "most threads that write and fdatasync partitions at once (group commit)",
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
    {"kafka.tls_listen", "HOST:PORT",
     "address of the Kafka listener over TLS (security.protocol ssl or sasl_ssl); empty: none",
     [](Config& c, const std::string& v) { return parse_optional_endpoint(v, c.kafka.tls_listen); },
     [](const Config& c) { return show_optional_endpoint(c.kafka.tls_listen); }},
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
    {"kafka.advertised_tls_listener", "HOST:PORT",
     "the address clients of kafka.tls_listen are told to connect to; empty: its host and bound port",
     [](Config& c, const std::string& v) -> Error {
       if (!v.empty()) {
         Endpoint e;
         if (auto err = parse_endpoint(v, e)) return err;
         if (e.host.empty()) return "expected HOST:PORT with a host, got \"" + v + "\"";
       }
       c.kafka.advertised_tls_listener = v;
       return std::nullopt;
     },
     [](const Config& c) { return c.kafka.advertised_tls_listener; }},
    {"kafka.node_id", "N", "the broker id Kafka clients see in Metadata and FindCoordinator",
     [](Config& c, const std::string& v) { return parse_int<int32_t>(v, 0, 2147483647, c.kafka.node_id); },
     [](const Config& c) { return std::to_string(c.kafka.node_id); }},
    {"kafka.enforce_placement", "BOOL",
     "refuse a Kafka batch whose keyed records do not hash (FNV-1a) to the partition it was sent to",
     [](Config& c, const std::string& v) { return parse_bool(v, c.kafka.enforce_placement); },
     [](const Config& c) { return std::string(c.kafka.enforce_placement ? "true" : "false"); }},
    {"kafka.sasl_mechanisms", "LIST",
     "SASL mechanisms the Kafka listeners offer, of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (needs "
     "auth.token_file)",
     [](Config& c, const std::string& v) -> Error {
       std::vector<std::string> mechanisms;
       std::string_view rest = v;
       while (!rest.empty()) {
         const size_t comma = rest.find(',');
         std::string_view m = rest.substr(0, comma);
         while (!m.empty() && m.front() == ' ') m.remove_prefix(1);
         while (!m.empty() && m.back() == ' ') m.remove_suffix(1);
         if (m != "PLAIN" && m != "SCRAM-SHA-256" && m != "SCRAM-SHA-512")
           return "expected a comma list of PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, got \"" + v + "\"";
         for (const std::string& known : mechanisms) {
           if (known == m) return "\"" + known + "\" is listed twice";
         }
         mechanisms.emplace_back(m);
         rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
       }
       c.kafka.sasl_mechanisms = std::move(mechanisms);
       return std::nullopt;
     },
     [](const Config& c) {
       std::string out;
       for (const std::string& m : c.kafka.sasl_mechanisms) out += (out.empty() ? "" : ",") + m;
       return out;
     }},
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

std::string redact_dsn(std::string dsn) {
  if (const auto at = dsn.find('@'); dsn.find("://") != std::string::npos && at != std::string::npos) {
    const auto colon = dsn.find(':', dsn.find("://") + 3);
    if (colon != std::string::npos && colon < at) dsn.replace(colon + 1, at - colon - 1, "***");
  }
  for (size_t p = dsn.find("password"); p != std::string::npos; p = dsn.find("password", p + 1)) {
    const auto eq = dsn.find('=', p);
    if (eq == std::string::npos) break;
    size_t value = eq + 1;
    while (value < dsn.size() && dsn[value] == ' ') ++value;
    size_t end = value;
    if (end < dsn.size() && dsn[end] == '\'') {
      end = dsn.find('\'', end + 1);
      end = end == std::string::npos ? dsn.size() : end + 1;
    } else {
      while (end < dsn.size() && dsn[end] != ' ' && dsn[end] != '&') ++end;
    }
    dsn.replace(value, end - value, "***");
  }
  return dsn;
}


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

}  // namespace streamd
