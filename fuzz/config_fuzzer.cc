// The config loader (server/config/config.h) over hostile YAML: apply_yaml() either refuses with a
// ConfigError naming a key or yields a Config, and a Config it accepted prints back (ConfigKey::show,
// what --help and the docs show) to values that load again to the same Config: every printed default
// is a value the loader takes.
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/config/config.h"

using namespace streamd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  Config config;
  if (auto error = apply_yaml(yaml, config)) {
    if (error->key.empty() || error->message.empty()) std::abort();
    return 0;
  }
  (void)validate_config(config);

  Config again;
  for (const ConfigKey& key : config_keys()) {
    const std::string shown = key.show(config);
    if (auto error = key.apply(again, shown)) std::abort();  // a shown value must load
    if (key.show(again) != shown) std::abort();
  }
  return 0;
}
