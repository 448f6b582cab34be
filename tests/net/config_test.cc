#include "server/config/config.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace streamd {
namespace {

using std::chrono::milliseconds;

// A config file in the temp directory, removed at scope end.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/streamd_config_test_XXXXXX";
    const int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    close(fd);
    path_ = name;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

CommandLine run(const std::vector<std::string>& args) {
  std::vector<const char*> argv{"streamd"};
  for (const auto& a : args) argv.push_back(a.c_str());
  return parse_command_line(static_cast<int>(argv.size()), argv.data());
}

TEST_CASE("defaults match the documented ones", "[config]") {
  const Config c;
  CHECK(c.listen.str() == "127.0.0.1:7411");
  CHECK(c.http_listen.str() == "127.0.0.1:7412");
  CHECK(c.auto_create_streams);
  CHECK(c.log_format == LogFormat::kText);
  CHECK(c.compaction_period == milliseconds(0));
}

TEST_CASE("YAML sets nested keys, durations and sizes", "[config]") {
  Config c;
  auto error = apply_yaml(R"(
listen: 0.0.0.0:9000
http_listen: "[::1]:9001"
data_dir: /var/lib/streamd
log_format: json
auto_create_streams: false
default_policy:
  partitions: 8
  retain_for: 7d
  max_bytes: 1GiB
  block_timeout: 1h30m
limits:
  max_frame_bytes: 4MiB
  idle_timeout: 30s
storage_threads: 2
compaction_period: 1h
)",
                          c);
  REQUIRE_FALSE(error.has_value());
  CHECK(c.listen == Endpoint{"0.0.0.0", 9000});
  CHECK(c.http_listen == Endpoint{"::1", 9001});
  CHECK(c.http_listen.str() == "[::1]:9001");
  CHECK(c.data_dir == "/var/lib/streamd");
  CHECK(c.log_format == LogFormat::kJson);
  CHECK_FALSE(c.auto_create_streams);
  CHECK(c.default_policy.partitions == 8);
  CHECK(c.default_policy.retain_for == milliseconds(7 * 24 * 3600 * 1000LL));
  CHECK(c.default_policy.max_bytes == 1LL << 30);
  CHECK(c.default_policy.block_timeout == milliseconds(5'400'000));
  CHECK(c.limits.max_frame_bytes == 4u << 20);
  CHECK(c.limits.idle_timeout == milliseconds(30'000));
  CHECK(c.storage_threads == 2);
  CHECK(c.compaction_period == milliseconds(3'600'000));
  CHECK_FALSE(validate_config(c).has_value());
}

TEST_CASE("a bad value in the file names its key", "[config]") {
  struct Case {
    const char* yaml;
    const char* key;
  };
  for (const Case& bad : {Case{"limits:\n  max_frame_bytes: lots\n", "limits.max_frame_bytes"},
                          Case{"listen: localhost\n", "listen"}, Case{"listen: 127.0.0.1:70000\n", "listen"},
                          Case{"default_policy:\n  retain_for: 10 days\n", "default_policy.retain_for"},
                          Case{"log_level: loud\n", "log_level"}, Case{"log_format: xml\n", "log_format"},
                          Case{"auto_create_streams: maybe\n", "auto_create_streams"},
                          Case{"storage_threads: 0\n", "storage_threads"},
                          Case{"limits:\n  max_connectoins: 5\n", "limits.max_connectoins"},
                          Case{"data_dir: [a, b]\n", "data_dir"}}) {
    Config c;
    auto error = apply_yaml(bad.yaml, c);
    INFO(bad.yaml);
    REQUIRE(error.has_value());
    CHECK(error->key == bad.key);
    CHECK(error->str().find(bad.key) != std::string::npos);
  }
}

TEST_CASE("a file that is not YAML, or not a map, is refused as the config itself", "[config]") {
  Config c;
  auto error = apply_yaml("listen: [unclosed\n", c);
  REQUIRE(error.has_value());
  CHECK(error->key == "config");
  error = apply_yaml("- just\n- a list\n", c);
  REQUIRE(error.has_value());
  CHECK(error->key == "config");
  CHECK_FALSE(apply_yaml("", c).has_value());
}

// Found by fuzz/config: "[[x]:0" was taken as host "[x" and printed back as "[x:0", which no longer
// loaded.
TEST_CASE("an endpoint's host is a name, an IPv4 address or a bracketed IPv6 literal", "[config]") {
  for (const char* bad : {"[[x]:0", "[x]:0", "[a:b]]:1", "a]:1", "::1:7411", "a[b:1"}) {
    Config c;
    INFO(bad);
    auto error = apply_yaml(std::string("listen: \"") + bad + "\"\n", c);
    REQUIRE(error.has_value());
    CHECK(error->key == "listen");
    CHECK(c.listen.str() == "127.0.0.1:7411");
  }
  for (const char* good : {"[::1]:7411", "[fe80::1%lo]:1", "localhost:0", "10.0.0.1:9"}) {
    Config c;
    INFO(good);
    REQUIRE_FALSE(apply_yaml(std::string("listen: \"") + good + "\"\n", c).has_value());
    CHECK(c.listen.str() == good);
  }
}

// Found by fuzz/config: an empty key was refused as "config key : unknown key".
TEST_CASE("an empty key is refused naming the map that holds it", "[config]") {
  Config c;
  auto error = apply_yaml("\"\": 1\n", c);
  REQUIRE(error.has_value());
  CHECK(error->key == "config");
  CHECK(error->message == "a key in this map is empty");
  error = apply_yaml("limits:\n  \"\": 5\n", c);
  REQUIRE(error.has_value());
  CHECK(error->key == "limits");
}

TEST_CASE("the default policy is validated as a whole, naming the field", "[config]") {
  Config c;
  REQUIRE_FALSE(apply_yaml("default_policy:\n  block_timeout: 5s\n", c).has_value());
  auto error = validate_config(c);
  REQUIRE(error.has_value());
  CHECK(error->key == "default_policy.block_timeout");
}

TEST_CASE("a default policy with more partitions than limits.max_partitions stops start-up", "[config]") {
  Config c;
  REQUIRE_FALSE(apply_yaml("default_policy:\n  partitions: 9\nlimits:\n  max_partitions: 8\n", c).has_value());
  auto error = validate_config(c);
  REQUIRE(error.has_value());
  CHECK(error->key == "default_policy.partitions");
  REQUIRE_FALSE(apply_yaml("limits:\n  max_partitions: 9\n", c).has_value());
  CHECK_FALSE(validate_config(c).has_value());
}

TEST_CASE("a flag wins over the file, the file's other keys stay", "[config]") {
  TempFile file("listen: 127.0.0.1:9000\ndata_dir: /from/file\nlimits:\n  max_connections: 7\n");
  auto cl = run({"--config", file.path(), "--listen", "127.0.0.1:9100", "--limits.max-connections", "9"});
  REQUIRE(cl.options.has_value());
  CHECK(cl.options->config.listen.port == 9100);
  CHECK(cl.options->config.data_dir == "/from/file");
  CHECK(cl.options->config.limits.max_connections == 9);
  CHECK(cl.options->config_path == file.path());
}

TEST_CASE("a flag given twice takes its last value", "[config]") {
  auto cl = run({"--listen", "127.0.0.1:1", "--listen", "127.0.0.1:2"});
  REQUIRE(cl.options.has_value());
  CHECK(cl.options->config.listen.port == 2);
}

TEST_CASE("start-up errors exit 78 naming the key", "[config]") {
  SECTION("a bad flag value") {
    auto cl = run({"--default-policy.retain-for", "forever"});
    CHECK_FALSE(cl.options.has_value());
    CHECK(cl.exit_code == kExitConfig);
    CHECK(cl.output.find("default_policy.retain_for") != std::string::npos);
  }
  SECTION("a bad value in the file") {
    TempFile file("limits:\n  idle_timeout: soon\n");
    auto cl = run({"--config", file.path()});
    CHECK(cl.exit_code == kExitConfig);
    CHECK(cl.output.find("limits.idle_timeout") != std::string::npos);
  }
  SECTION("a missing file") {
    auto cl = run({"--config", "/nonexistent/streamd.yaml"});
    CHECK(cl.exit_code == kExitConfig);
    CHECK(cl.output.find("/nonexistent/streamd.yaml") != std::string::npos);
  }
  SECTION("an unknown flag") {
    auto cl = run({"--no-such-flag", "1"});
    CHECK(cl.exit_code == kExitConfig);
  }
}

TEST_CASE("storage.postgres.shards reads NAME: DSN entries and refuses anything else", "[config]") {
  Config c;
  REQUIRE_FALSE(apply_yaml("storage:\n  engine: postgres\n  postgres:\n    shards: |\n"
                           "      a: host=db1,db2 dbname=s password=secret\n"
                           "      b-2: host=db3 dbname='s;t'\n",
                           c)
                    .has_value());
  REQUIRE(c.storage.postgres_shards.size() == 2);
  CHECK(c.storage.postgres_shards[0] == PostgresShard{"a", "host=db1,db2 dbname=s password=secret"});
  CHECK(c.storage.postgres_shards[1] == PostgresShard{"b-2", "host=db3 dbname='s;t'"});
  CHECK_FALSE(validate_config(c).has_value());
  const ConfigKey* key = nullptr;
  for (const ConfigKey& k : config_keys()) {
    if (k.key == "storage.postgres.shards") key = &k;
  }
  REQUIRE(key != nullptr);
  CHECK(key->show(c).find("secret") == std::string::npos);

  auto cl = run({"--storage.engine", "postgres", "--storage.postgres.shards", "x: host=1 ; y: host=2"});
  REQUIRE(cl.options.has_value());
  CHECK(cl.options->config.storage.postgres_shards ==
        std::vector<PostgresShard>{{"x", "host=1"}, {"y", "host=2"}});

  for (const char* bad : {"a host=1", ": host=1", "a:", "a: x; a: y", "a.b: x", "a,b: x"}) {
    INFO(bad);
    Config d;
    CHECK(key->apply(d, bad).has_value());
    CHECK(d.storage.postgres_shards.empty());
  }
  Config both = c;
  both.storage.postgres_dsn = "host=db0";
  auto e = validate_config(both);
  REQUIRE(e.has_value());
  CHECK(e->key == "storage.postgres.shards");
  Config file_engine = c;
  file_engine.storage.engine = EngineKind::kFile;
  CHECK(validate_config(file_engine).has_value());
}

TEST_CASE("the --help text lists a flag for every key and exits 0", "[config]") {
  auto cl = run({"--help"});
  CHECK_FALSE(cl.options.has_value());
  CHECK(cl.exit_code == 0);
  for (const ConfigKey& key : config_keys()) {
    INFO(key.key);
    CHECK(cl.output.find(flag_name(key.key)) != std::string::npos);
  }
  CHECK(cl.output.find("--config") != std::string::npos);
  CHECK(cl.output.find("--ready-file") != std::string::npos);
}

TEST_CASE("every key reads back what it shows", "[config]") {
  Config c;
  REQUIRE_FALSE(apply_yaml("default_policy:\n  retain_for: 1h30m\nlog_file: /tmp/x.log\n", c).has_value());
  Config copy;
  for (const ConfigKey& key : config_keys()) {
    INFO(key.key);
    REQUIRE_FALSE(key.apply(copy, key.show(c)).has_value());
    CHECK(key.show(copy) == key.show(c));
  }
}

TEST_CASE("the sample config documents every key and loads as the defaults it states", "[config]") {
  std::ifstream in(STREAMD_SOURCE_DIR "/config/streamd.yaml");
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const std::string sample = text.str();
  for (const ConfigKey& key : config_keys()) {
    const std::string leaf(
        key.key.substr(key.key.rfind('.') == std::string_view::npos ? 0 : key.key.rfind('.') + 1));
    INFO(key.key);
    CHECK(sample.find(leaf + ":") != std::string::npos);
  }
  Config c;
  REQUIRE_FALSE(apply_yaml(sample, c).has_value());
  CHECK_FALSE(validate_config(c).has_value());
  CHECK(c.auto_create_streams);
  CHECK(c.data_dir == "./data");
}

}  // namespace
}  // namespace streamd
