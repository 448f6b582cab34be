#include <CLI/CLI.hpp>

#include "server/config/config.h"

namespace streamd {

CommandLine parse_command_line(int argc, const char* const* argv) {
  CLI::App app{"streamd: a broker daemon for durable, partitioned, offset-addressed logs", "streamd"};
  app.set_version_flag("--version", "streamd " STREAMD_VERSION);
  app.get_formatter()->column_width(40);

  // A flag given twice takes its last value, as shells and supervisors that append flags expect.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

  StartupOptions options;
  app.add_option("--config", options.config_path, "YAML config file; flags below override its keys")
      ->type_name("FILE");
  app.add_option("--ready-file", options.ready_file,
                 "once listening, write {\"listen_port\",\"http_port\",\"kafka_port\",\"tls_port\",\"http_tls_port\","
                 "\"kafka_tls_port\",\"pid\"} as JSON to this path (0: a listener not configured)")
      ->type_name("FILE");
  app.add_flag("--init-postgres", options.init_postgres,
               "create or check the postgres engine's schema in storage.postgres.dsn, then exit (the broker also "
               "creates it at its first start)");

  const Config defaults;
  const auto& keys = config_keys();
  std::vector<std::string> values(keys.size());
  std::vector<CLI::Option*> flags(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string help(keys[i].help);
    help += " [config key " + std::string(keys[i].key) + ", default \"" + keys[i].show(defaults) + "\"]";
    flags[i] = app.add_option(flag_name(keys[i].key), values[i], help);
    flags[i]->type_name(std::string(keys[i].value_name));
  }

  CommandLine out;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out.output = app.help();
    return out;
  } catch (const CLI::CallForVersion& e) {
    out.output = std::string(e.what()) + "\n";
    return out;
  } catch (const CLI::ParseError& e) {
    out.exit_code = kExitConfig;
    out.output = "streamd: " + std::string(e.what()) + "\nRun with --help for the list of flags.\n";
    return out;
  }

  auto fail = [&out](const ConfigError& e) {
    out.exit_code = kExitConfig;
    out.output = e.str() + "\n";
    return out;
  };
  if (!options.config_path.empty()) {
    if (auto e = load_config_file(options.config_path, options.config)) return fail(*e);
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if (flags[i]->count() == 0) continue;
    if (auto e = keys[i].apply(options.config, values[i])) {
      return fail(ConfigError{std::string(keys[i].key) + " (" + flag_name(keys[i].key) + ")", *e});
    }
  }
  if (auto e = validate_config(options.config)) return fail(*e);
  out.options = std::move(options);
  return out;
}

}  // namespace streamd
