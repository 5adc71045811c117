// opdump config check FILE [--json]
#include <cstdio>
#include <memory>

#include "commands.h"
#include "config/config.h"
#include "opdump/error.h"

namespace opdump::cli {

// The options of this subcommand, one value per command (CLI11's subcommands-in-files shape).
struct ConfigCommandOptions {
  std::string file;
  bool as_json = false;
};

void add_config_command(CLI::App& app, int* exit_code) {
  auto opt = std::make_shared<ConfigCommandOptions>();  // owned by the callback (CLI11 keeps it alive)
  auto* config = app.add_subcommand("config", "Work with dump configs (acl.json, MindSpore, session options, msprobe config.json)");
  config->require_subcommand(1);
  auto* check = config->add_subcommand("check", "Validate a config and print it normalized; exit 0 when valid");
  check->add_option("FILE", opt->file, "The config file")->required();
  check->add_flag("--json", opt->as_json, "Print the normalized config as JSON");
  check->callback([opt, exit_code] {
    try {
      DumpConfig c = load_config(opt->file);
      std::fputs((opt->as_json ? config_to_json(c) : describe_config(c)).c_str(), stdout);
      *exit_code = kExitOk;
    } catch (const ConfigError& e) {
      std::fprintf(stderr, "opdump: invalid config: %s\n", e.what());
      *exit_code = kExitFailure;
    }
  });
}

}  // namespace opdump::cli
