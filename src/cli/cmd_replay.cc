// opdump replay DUMP -o OUT [--fail-on error|warning] [--rank R] [-q]: runs opdump_replay, the
// adapter-side program that re-executes dumped ops with ATen (src/replay/).
#include "commands.h"
#include "opdump/error.h"

namespace opdump::cli {

void add_replay_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "replay", "Re-run every dumped op from its dumped inputs and recorded arguments on the CPU, in float64 as well "
                "as at its own dtypes, and judge each output by its dtype's precision standard: finds a faulty kernel "
                "from one run (needs a tensor dump taken with save_kernel_args; see docs/replay.md). "
                "Options: DUMP -o OUT [--fail-on error|warning] [--rank R] [-q]");
  cmd->prefix_command();  // everything after `replay` goes to opdump_replay as it is
  cmd->set_help_flag();   // --help too: opdump_replay's own help lists its options
  cmd->callback([cmd, exit_code] {
    const std::string program = adapter_program("opdump_replay");
    if (program.empty())
      throw Error("replay needs the PyTorch adapter (opdump_replay beside this binary): this build has none");
    *exit_code = kExitFailure;
    exec_adapter_program(program, cmd->remaining());
  });
}

}  // namespace opdump::cli
