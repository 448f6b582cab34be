// validate_config: the rules no single key can check — the default policy as a whole, and settings
// that need one another.
#include "server/config/config.h"

namespace streamd {

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
  const TlsConfig& tls = config.tls;
  const bool tls_listener = config.tls_listen || config.http_tls_listen || config.kafka.tls_listen;
  if (tls_listener && (tls.cert_file.empty() || tls.key_file.empty())) {
    return ConfigError{tls.cert_file.empty() ? "tls.cert_file" : "tls.key_file",
                       "a TLS listener (tls_listen, http_tls_listen or kafka.tls_listen) needs tls.cert_file and "
                       "tls.key_file"};
  }
  if (!tls_listener && (!tls.cert_file.empty() || !tls.key_file.empty() || !tls.client_ca_file.empty())) {
    return ConfigError{"tls.cert_file",
                       "set, but no TLS listener is: set tls_listen, http_tls_listen or kafka.tls_listen"};
  }
  if (tls.client_auth != ClientAuth::kNone && tls.client_ca_file.empty()) {
    return ConfigError{"tls.client_ca_file", "tls.client_auth asks for client certificates: name the CAs that sign them"};
  }
  if (tls.client_auth == ClientAuth::kNone && !tls.client_ca_file.empty()) {
    return ConfigError{"tls.client_auth", "tls.client_ca_file is set: set client_auth to optional or required"};
  }
  if (!config.kafka.sasl_mechanisms.empty() && config.auth_token_file.empty()) {
    return ConfigError{"kafka.sasl_mechanisms", "SASL checks logins against the access file: set auth.token_file"};
  }
  if (!config.kafka.sasl_mechanisms.empty() && !config.kafka.listen && !config.kafka.tls_listen) {
    return ConfigError{"kafka.sasl_mechanisms", "set, but no Kafka listener is: set kafka.listen or kafka.tls_listen"};
  }
  if (!config.kafka.advertised_tls_listener.empty() && !config.kafka.tls_listen) {
    return ConfigError{"kafka.advertised_tls_listener", "set, but kafka.tls_listen is not"};
  }
  if (config.auth_http_require_token && config.auth_token_file.empty()) {
    return ConfigError{"auth.http_require_token", "bearer tokens are checked against the access file: set auth.token_file"};
  }
  if (!config.storage.postgres_shards.empty() && !config.storage.postgres_dsn.empty()) {
    return ConfigError{"storage.postgres.shards",
                       "set together with storage.postgres.dsn: name one database there, or every database here"};
  }
  if (!config.storage.postgres_shards.empty() && config.storage.engine != EngineKind::kPostgres) {
    return ConfigError{"storage.postgres.shards", "set, but storage.engine is not postgres"};
  }
  return std::nullopt;
}

}  // namespace streamd
