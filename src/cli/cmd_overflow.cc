// opdump overflow PATH [--fp16-range] [--ignore OP]... [--json OUT]
#include <fmt/format.h>

#include "commands.h"
#include "debug_scenes/overflow_scan.h"
#include "writer/atomic_file.h"

namespace opdump::cli {

void add_overflow_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "overflow", "List the ops of an existing dump (npy, bin or statistic.csv) whose outputs hold NaN/Inf, or that "
                  "CANN's Opdebug records flag, in execution order, and the root cause: the first op whose inputs "
                  "were finite and outputs not");
  struct Args {
    std::string path, json;
    bool fp16 = false;
    std::vector<std::string> ignore;
    bool no_default_ignores = false;
  };
  auto args = std::make_shared<Args>();
  cmd->add_option("PATH", args->path, "dump folder or file")->required();
  cmd->add_flag("--fp16-range", args->fp16,
                "also flag finite values beyond float16's range (|x| > 65504; float16 itself: |x| >= 65504)");
  cmd->add_option("--ignore", args->ignore, "op types never reported (added to empty, empty_like, ...)");
  cmd->add_flag("--no-default-ignores", args->no_default_ignores, "do not ignore empty, empty_like, ... by default");
  cmd->add_option("--json", args->json, "also write the result as JSON to this file");
  cmd->callback([args, exit_code] {
    OverflowScanOptions options;
    options.check_fp16_range = args->fp16;
    if (args->no_default_ignores) options.ignore_ops.clear();
    options.ignore_ops.insert(options.ignore_ops.end(), args->ignore.begin(), args->ignore.end());
    const OverflowScan scan = scan_overflow(args->path, options);
    for (const std::string& w : scan.warnings) fmt::print(stderr, "opdump: warning: {}\n", w);
    fmt::print("{} ops, {} tensors checked{}; {} overflowing ops\n", scan.ops, scan.tensors,
               scan.records ? fmt::format(", {} CANN Opdebug records read", scan.records) : std::string(),
               scan.events.size());
    for (const std::string& f : scan.statistics_without_counts)
      fmt::print(stderr,
                 "opdump: warning: {} has no NaN/Inf count columns; only tensors without any finite value are seen\n",
                 f);
    for (const OverflowEvent& e : scan.events)
      fmt::print("  [rank {}, iteration {}] task {:>6}  {} ({}){}{}\n", e.rank, e.iteration, e.op.task_id, e.op.op_name,
                 e.op.op_type, e.inputs_finite ? "" : "  (inputs already overflowed)",
                 e.recorded.empty() ? "" : "  recorded by CANN: " + e.recorded);
    if (scan.root_cause)
      fmt::print("root cause: {} ({}) on rank {}, iteration {}, task {}, in {}\n", scan.root_cause->op.op_name,
                 scan.root_cause->op.op_type, scan.root_cause->rank, scan.root_cause->iteration,
                 scan.root_cause->op.task_id, scan.root_cause->folder);
    if (!args->json.empty()) {
      const std::string text = overflow_summary_json(scan.events, scan.root_cause, args->fp16);
      write_file_atomic(args->json, text.data(), text.size(), nullptr, 0);
    }
    *exit_code = kExitOk;
  });
}

}  // namespace opdump::cli
