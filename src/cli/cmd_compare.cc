// opdump compare TARGET REF -o OUT: the accuracy analyzer.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "compare/compare.h"
#include "util/progress.h"
#include "compare/reports.h"
#include "compare/op_arguments.h"
#include "read/dump_index.h"
#include "opdump/error.h"
#include "layout/layout.h"

namespace opdump::cli {

// The options of this subcommand, one value per command (CLI11's subcommands-in-files shape).
struct CompareCommandOptions {
  std::string target, reference, out, mapping, thresholds, fail_on, replay = "auto";
  bool kl = false, no_align = false, quiet = false, xlsx = false, list_ranks = false;
  std::vector<uint32_t> ranks;
  uint32_t rows_per_sheet = 0;
  unsigned threads = 0;
};

void add_compare_command(CLI::App& app, int* exit_code, CompareExtras extras) {
  auto opt = std::make_shared<CompareCommandOptions>();  // owned by the callback (CLI11 keeps it alive)
  auto* cmd = app.add_subcommand("compare",
                                 "Compare two dumps operator by operator and name the first operator where they part");
  cmd->add_option("TARGET", opt->target, "The dump under test (folder or file)")->required();
  cmd->add_option("REF", opt->reference, "The reference dump (folder or file)")->required();
  auto* output = cmd->add_option("-o,--output", opt->out, "Folder for compare_result.csv, compare_report.html (and .xlsx)");
  cmd->add_option("--mapping", opt->mapping, "CSV of target_name,reference_name rules (names or name-regex(...))");
  cmd->add_option("--thresholds", opt->thresholds, "JSON file overriding the verdict thresholds (docs/compare.md)");
  cmd->add_flag("--kl", opt->kl, "Also compute the KL divergence (a second pass over the data)");
  cmd->add_flag("--no-align", opt->no_align, "Match by name only (no alignment by execution order and op type)");
  cmd->add_option("--threads", opt->threads, "Worker threads (default: all cores)");
  cmd->add_flag("--xlsx", opt->xlsx, "Also write compare_result.xlsx (errors red, warnings yellow)");
  cmd->add_option("--rows-per-sheet", opt->rows_per_sheet, "xlsx rows per sheet (default 1048500)");
  cmd->add_flag("-q,--quiet", opt->quiet, "No progress on stderr (shown only when stderr is a terminal)");
  cmd->add_option("--ranks", opt->ranks, "Compare only these ranks (Ascend: devices), e.g. --ranks 0,1")->delimiter(',');
  cmd->add_flag("--list-ranks", opt->list_ranks,
                "Print the ranks both dumps hold files of, as JSON, and exit (-o is then not needed)");
  cmd->add_option("--replay", opt->replay,
                  "Cross-replay ops whose inputs already differ (re-run the reference's op on the target's inputs in "
                  "float64; needs the PyTorch adapter and both dumps' arguments): auto (when both dumps recorded "
                  "them), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  cmd->add_option("--fail-on", opt->fail_on,
                  "Exit 3 when a row is an error (error) or a warning or error (warning): a gate for CI jobs")
      ->check(CLI::IsMember({"error", "warning"}));
  cmd->callback([opt, exit_code, output, extras] {
    if (opt->list_ranks) {  // for launchers that split a compare across processes (python -m opdump compare)
      const std::vector<uint32_t> t = dump_ranks(opt->target), r = dump_ranks(opt->reference);
      std::string list;
      for (uint32_t x : t)
        if (std::find(r.begin(), r.end(), x) != r.end()) list += (list.empty() ? "" : ", ") + std::to_string(x);
      std::printf("[%s]\n", list.c_str());
      *exit_code = kExitOk;
      return;
    }
    if (output->count() == 0) throw CLI::RequiredError("--output");
    if (!extras.cross_replay && opt->replay != "off") {
      // The cross-replay needs ATen: the adapter's program runs this same compare with it.
      const std::string program = adapter_program("opdump_replay");
      if (program.empty() && opt->replay == "on")
        throw Error("--replay on needs the PyTorch adapter (opdump_replay beside this binary): this build has none");
      if (!program.empty() && (opt->replay == "on" || (detail::dump_has_kernel_args(opt->target) &&
                                                  detail::dump_has_kernel_args(opt->reference)))) {
        std::vector<std::string> args(command_line().begin() + 1, command_line().end());
        const int code = run_adapter_program(program, std::move(args));
        if (code != 127) {
          *exit_code = code;
          return;
        }
        // An install whose PyTorch libraries do not load: compare still works, without the re-runs.
        if (opt->replay == "on") throw Error("--replay on: " + program + " could not start (see above)");
        std::fprintf(stderr, "opdump: note: %s could not start: comparing without cross-replay\n", program.c_str());
      }
    }
    CompareOptions o;
    if (opt->replay != "off") o.cross_replay = extras.cross_replay;
    o.ranks.insert(opt->ranks.begin(), opt->ranks.end());
    o.metrics.kl_divergence = opt->kl;
    o.align_unmatched = !opt->no_align;
    o.threads = opt->threads;
    if (!opt->mapping.empty()) o.mapping = load_mapping(opt->mapping);
    if (!opt->thresholds.empty()) o.thresholds = load_thresholds(opt->thresholds);
    std::unique_ptr<Progress> progress;
    if (ProgressOptions shown = Progress::for_terminal(opt->quiet); shown.enabled)
      o.progress = [&progress, shown](size_t done, size_t total, uint64_t bytes) {
        if (!progress) progress = std::make_unique<Progress>("compare: tensor pairs", total, 0, shown);
        progress->done(done, bytes);
      };
    const auto t0 = std::chrono::steady_clock::now();
    CompareResult r = compare_dumps(opt->target, opt->reference, o);
    progress.reset();  // its last line before the results
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (o.cross_replay && extras.note) r.notes.push_back(extras.note());
    make_dirs(opt->out);
    write_compare_csv(r, opt->out + "/compare_result.csv");
    write_compare_summary(r, opt->out + "/compare_summary.json");
    write_compare_html(r, opt->out + "/compare_report.html", "opdump compare: " + opt->target + " vs " + opt->reference);
    if (opt->xlsx) write_compare_xlsx(r, opt->out + "/compare_result.xlsx", opt->rows_per_sheet);
    for (const auto& note : r.notes) std::fprintf(stderr, "opdump: note: %s\n", note.c_str());
    std::printf("compared %zu tensor pairs (%.1f MB in %.2f s, %.2f GB/s): %zu pass, %zu warning, %zu error, "
                "%zu not compared; %zu unmatched, %zu matched by execution order\n",
                r.rows.size() - r.unmatched, r.bytes_compared / 1e6, secs, r.bytes_compared / secs / 1e9, r.passed,
                r.warnings, r.errors, r.not_compared, r.unmatched, r.aligned);
    if (r.passed + r.warnings + r.errors == 0 && r.not_compared > 0) {
      // Nothing was compared: "no divergence" would say nothing. Name why, once.
      const auto row = std::find_if(r.rows.begin(), r.rows.end(), [](const CompareRow& x) {
        return x.verdict == Verdict::NotCompared && !x.reason.empty();
      });
      std::fprintf(stderr, "opdump: warning: none of the %zu matched pairs could be compared%s%s\n", r.not_compared,
                   row == r.rows.end() ? "" : ", e.g. ", row == r.rows.end() ? "" : row->reason.c_str());
    }
    const auto& f = r.first_divergence;
    if (f.found) {
      std::printf("first divergence: %s\n  why: %s\n", divergence_headline(f).c_str(), f.cause.c_str());
      if (!f.source.empty()) std::printf("  called from %s\n", f.source.c_str());
      for (size_t i = 0; i < f.reaches.size(); ++i)
        std::printf("  %s %s\n", i ? "       " : "reaches", divergent_op_text(f.reaches[i]).c_str());
    } else {
      std::printf("no divergence found%s%s\n", r.precision.empty() ? "" : ": ", r.precision.c_str());
    }
    std::printf("report: %s/compare_report.html\ncsv:    %s/compare_result.csv\n", opt->out.c_str(), opt->out.c_str());
    if ((opt->fail_on == "error" && r.errors) || (opt->fail_on == "warning" && (r.errors || r.warnings))) {
      std::fprintf(stderr, "opdump: compare found %zu error and %zu warning rows (--fail-on %s)\n", r.errors, r.warnings,
                   opt->fail_on.c_str());
      *exit_code = kExitFound;
      return;
    }
    *exit_code = kExitOk;
  });
}

}  // namespace opdump::cli
