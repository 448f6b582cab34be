// docs/CONFIG.md against the loader's own key list (server/config/config.h): every key documented with
// its flag and its default, and nothing documented that the loader does not know.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "server/config/config.h"

namespace streamd {
namespace {

struct DocumentedKey {
  std::string flag;
  std::string default_value;
};

// Rows of the "Every key" table: | `key` | `--flag` | `default` (note) | meaning |
std::map<std::string, DocumentedKey> documented_keys() {
  std::ifstream in(STREAMD_SOURCE_DIR "/docs/CONFIG.md");
  REQUIRE(in.good());
  const std::regex row(R"(^\| `([a-z_.]+)` \| `([^`]+)` \| `([^`]*)`[^|]*\|)");
  std::map<std::string, DocumentedKey> keys;
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    // An empty default is written `""`.
    const std::string value = m[3] == "\"\"" ? std::string() : std::string(m[3]);
    INFO(line);
    CHECK(keys.emplace(m[1], DocumentedKey{m[2], value}).second);
  }
  return keys;
}

TEST_CASE("docs/CONFIG.md documents every key with its flag and default") {
  const auto documented = documented_keys();
  const Config defaults;
  for (const ConfigKey& key : config_keys()) {
    INFO("key " << key.key);
    auto it = documented.find(std::string(key.key));
    REQUIRE(it != documented.end());
    CHECK(it->second.flag == flag_name(key.key));
    CHECK(it->second.default_value == key.show(defaults));
  }
}

TEST_CASE("docs/CONFIG.md documents no key the loader does not know") {
  for (const auto& [name, doc] : documented_keys()) {
    INFO("documented key " << name);
    bool known = false;
    for (const ConfigKey& key : config_keys()) known = known || key.key == name;
    CHECK(known);
  }
}

}  // namespace
}  // namespace streamd
