// The subcommands of the opdump CLI. Each adds itself to the app; its callback stores the
// process exit code in *exit_code. Errors are thrown as opdump::Error and reported by main.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "compare/compare.h"

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
// What the adapter side (opdump_replay, which has ATen) gives compare: the cross-replay, and a note
// on what it did for the compare's notes. The opdump CLI runs compare in opdump_replay when both
// dumps recorded their ops' arguments (--replay auto), so that the cross-replay is used.
struct CompareExtras {
  CrossReplay cross_replay;
  std::function<std::string()> note;
};
void add_compare_command(CLI::App& app, int* exit_code, CompareExtras extras = {});
void add_overflow_command(CLI::App& app, int* exit_code);
void add_replay_command(CLI::App& app, int* exit_code);

// A program of the PyTorch adapter's side built beside this binary (opdump_demo, opdump_replay):
// its path, or "" when this build has no adapter.
std::string adapter_program(const std::string& name);
// Runs `program` with `args` in place of this process; throws opdump::Error when it cannot.
[[noreturn]] void exec_adapter_program(const std::string& program, std::vector<std::string> args);
// Runs `program` with `args` as a child and returns its exit code (128 + the signal that ended it;
// 127 when it could not start: not found, or its libraries would not load).
int run_adapter_program(const std::string& program, std::vector<std::string> args);
// The command line main() was given (for a subcommand that hands itself to an adapter program).
void remember_command_line(int argc, char** argv);
const std::vector<std::string>& command_line();

}  // namespace opdump::cli
