// opdump config check FILE [--json]
#include <cstdio>

#include "commands.h"
#include "config/config.h"
#include "opdump/error.h"

namespace opdump::cli {

void add_config_command(CLI::App& app, int* exit_code) {
  auto* config = app.add_subcommand("config", "Work with dump configs (acl.json, MindSpore, session options)");
  config->require_subcommand(1);
  auto* check = config->add_subcommand("check", "Validate a config and print it normalized; exit 0 when valid");
  static std::string file;
  static bool as_json = false;
  check->add_option("FILE", file, "The config file")->required();
  check->add_flag("--json", as_json, "Print the normalized config as JSON");
  check->callback([exit_code] {
    try {
      DumpConfig c = load_config(file);
      std::fputs((as_json ? config_to_json(c) : describe_config(c)).c_str(), stdout);
      *exit_code = kExitOk;
    } catch (const ConfigError& e) {
      std::fprintf(stderr, "opdump: invalid config: %s\n", e.what());
      *exit_code = kExitFailure;
    }
  });
}

}  // namespace opdump::cli
