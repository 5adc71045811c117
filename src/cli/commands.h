// The subcommands of the opdump CLI. Each adds itself to the app; its callback stores the
// process exit code in *exit_code. Errors are thrown as opdump::Error and reported by main.
#pragma once
#include <CLI/CLI.hpp>

#include <string>

namespace opdump::cli {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // bad input file/config, a failed check, lost data
inline constexpr int kExitUsage = 2;    // bad command line
inline constexpr int kExitFound = 3;    // compare --fail-on: rows at or above the level were found

void add_config_command(CLI::App& app, int* exit_code);
void add_convert_command(CLI::App& app, int* exit_code);
void add_stats_command(CLI::App& app, int* exit_code);
void add_demo_command(CLI::App& app, int* exit_code);
void add_compare_command(CLI::App& app, int* exit_code);
void add_overflow_command(CLI::App& app, int* exit_code);
void add_replay_command(CLI::App& app, int* exit_code);

// A program of the PyTorch adapter's side built beside this binary (opdump_demo, opdump_replay):
// its path, or "" when this build has no adapter.
std::string adapter_program(const std::string& name);

}  // namespace opdump::cli
