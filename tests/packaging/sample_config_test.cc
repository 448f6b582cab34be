// The configurations that ship — config/streamd.yaml (development), deploy/streamd.yaml (production,
// installed as /etc/streamd/streamd.yaml), the unit's and the container's command lines — read through
// the daemon's own command-line and config loader (parse_command_line, as server/main.cc calls it).
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "server/config/config.h"
#include "server/config/duration.h"

namespace streamd {
namespace {

const std::string kSource = STREAMD_SOURCE_DIR;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

CommandLine parse(std::vector<std::string> args) {
  args.insert(args.begin(), "streamd");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return parse_command_line(static_cast<int>(argv.size()), argv.data());
}

void collect_keys(const YAML::Node& node, const std::string& path, std::set<std::string>& out) {
  if (!node.IsMap()) {
    out.insert(path);
    return;
  }
  for (const auto& item : node) {
    const std::string name = item.first.as<std::string>();
    collect_keys(item.second, path.empty() ? name : path + "." + name, out);
  }
}

// The value of `Directive=` in deploy/streamd.service.
std::string unit_directive(const std::string& directive) {
  std::istringstream unit(read_file(kSource + "/deploy/streamd.service"));
  std::string line;
  while (std::getline(unit, line)) {
    if (line.rfind(directive + "=", 0) == 0) return line.substr(directive.size() + 1);
  }
  FAIL("deploy/streamd.service has no " << directive << "=");
  return {};
}

TEST_CASE("both sample configs load through the daemon's loader") {
  for (const char* file : {"config/streamd.yaml", "deploy/streamd.yaml"}) {
    INFO(file);
    const CommandLine cl = parse({"--config", kSource + "/" + file});
    INFO(cl.output);
    REQUIRE(cl.options.has_value());
    CHECK(cl.exit_code == 0);
  }
}

TEST_CASE("both sample configs set every key, so each is a complete reference") {
  std::set<std::string> all;
  for (const ConfigKey& key : config_keys()) all.insert(std::string(key.key));
  for (const char* file : {"config/streamd.yaml", "deploy/streamd.yaml"}) {
    INFO(file);
    std::set<std::string> set;
    collect_keys(YAML::LoadFile(kSource + "/" + file), "", set);
    CHECK(set == all);
  }
}

TEST_CASE("the production config keeps data in /var/lib/streamd and listens on loopback") {
  const CommandLine cl = parse({"--config", kSource + "/deploy/streamd.yaml"});
  REQUIRE(cl.options.has_value());
  const Config& c = cl.options->config;
  CHECK(c.data_dir == "/var/lib/streamd");
  CHECK(c.listen == Endpoint{"127.0.0.1", 7411});
  CHECK(c.http_listen == Endpoint{"127.0.0.1", 7412});
  CHECK(c.log_file.empty());  // standard error: the journal, or docker logs
}

TEST_CASE("the unit starts streamd on the installed production config") {
  CHECK(unit_directive("ExecStart") == "/usr/bin/streamd --config /etc/streamd/streamd.yaml");
  CHECK(unit_directive("StateDirectory") == "streamd");
}

TEST_CASE("SIGTERM's drain fits in the unit's stop timeout") {
  const CommandLine cl = parse({"--config", kSource + "/deploy/streamd.yaml"});
  REQUIRE(cl.options.has_value());
  const auto stop_timeout = parse_duration(unit_directive("TimeoutStopSec"));
  REQUIRE(stop_timeout.has_value());
  CHECK(cl.options->config.shutdown_timeout < *stop_timeout);
}

TEST_CASE("the container's default command listens on every interface with the production config") {
  const std::string dockerfile = read_file(kSource + "/Dockerfile");
  std::smatch cmd;
  REQUIRE(std::regex_search(dockerfile, cmd, std::regex(R"(\nCMD \[([^\]]*)\])")));
  std::vector<std::string> args;
  const std::string list = cmd[1];
  const std::regex quoted(R"re("([^"]*)")re");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), quoted); it != std::sregex_iterator(); ++it) {
    std::string arg = (*it)[1];
    // The image carries deploy/streamd.yaml at the path the command names.
    if (arg == "/etc/streamd/streamd.yaml") arg = kSource + "/deploy/streamd.yaml";
    args.push_back(arg);
  }
  const CommandLine cl = parse(args);
  INFO(cl.output);
  REQUIRE(cl.options.has_value());
  CHECK(cl.options->config.listen == Endpoint{"0.0.0.0", 7411});
  CHECK(cl.options->config.http_listen == Endpoint{"0.0.0.0", 7412});
  CHECK(cl.options->config.data_dir == "/var/lib/streamd");
  CHECK(dockerfile.find("VOLUME /var/lib/streamd") != std::string::npos);
}

}  // namespace
}  // namespace streamd
