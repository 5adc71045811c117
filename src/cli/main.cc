// opdump: operator-level dump and accuracy analysis.
#include <cstdio>

#include "commands.h"
#include "opdump/error.h"
#include "opdump/version.h"

int main(int argc, char** argv) {
  CLI::App app{"opdump: operator-level data dump and accuracy analysis for deep-learning runtimes"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "opdump " OPDUMP_VERSION);
  int exit_code = opdump::cli::kExitOk;
  opdump::cli::remember_command_line(argc, argv);
  opdump::cli::add_config_command(app, &exit_code);
  opdump::cli::add_convert_command(app, &exit_code);
  opdump::cli::add_stats_command(app, &exit_code);
  opdump::cli::add_demo_command(app, &exit_code);
  opdump::cli::add_compare_command(app, &exit_code);
  opdump::cli::add_overflow_command(app, &exit_code);
  opdump::cli::add_replay_command(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return opdump::cli::kExitUsage;
  } catch (const opdump::Error& e) {
    std::fprintf(stderr, "opdump: error: %s\n", e.what());
    return opdump::cli::kExitFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "opdump: internal error: %s\n", e.what());
    return opdump::cli::kExitFailure;
  }
  return exit_code;
}
