// opdump_replay DUMP -o OUT [--fail-on error|warning] [--rank R] [-q]: the adapter-side program
// behind `opdump replay` (it needs ATen; the opdump CLI stays free of it and runs this one).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "cross_replay.h"
#include "engine.h"
#include "opdump/error.h"
#include "replay_report.h"

namespace {

// `opdump compare` handed over to this program: the same command, with the cross-replay.
int compare(int argc, char** argv) {
  namespace cli = opdump::cli;
  CLI::App app{"opdump compare with cross-replay"};
  app.name("opdump");
  app.require_subcommand(1);
  int exit_code = cli::kExitOk;
  cli::remember_command_line(argc, argv);
  opdump::replay::CrossReplayCount count;
  cli::CompareExtras extras;
  extras.cross_replay = opdump::replay::make_cross_replay(count);
  extras.note = [&count] {
    std::string note = "cross-replay: re-ran " + std::to_string(count.ran) +
                       " ops whose inputs already differ, the reference's op on the target's inputs in float64 (" +
                       std::to_string(count.could_not) + " could not be re-run and were judged by their error's growth)";
    if (!count.own_kernel_set_aside.empty()) {
      note += "; this PyTorch's kernel of ";
      for (const std::string& type : count.own_kernel_set_aside)
        note += (type == *count.own_kernel_set_aside.begin() ? "" : ", ") + type;
      note += " reads memory it never wrote, so the target's outputs of those ops were judged against float64 alone";
    }
    return note;
  };
  cli::add_compare_command(app, &exit_code, extras);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return cli::kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "opdump: error: %s\n", e.what());
    return cli::kExitFailure;
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "compare") return compare(argc, argv);
  CLI::App app{"Re-run every dumped op from its dumped inputs and recorded arguments on the CPU, at the dtypes it ran "
               "with and in float64, and judge each output by the precision standard of its dtype (docs/replay.md)"};
  app.name("opdump replay");
  std::string dump, out, fail_on;
  std::vector<uint32_t> ranks;
  bool quiet = false;
  app.add_option("DUMP", dump, "A tensor dump taken with save_kernel_args")->required();
  app.add_option("-o,--output", out, "Folder for replay_result.csv, replay_summary.json and replay_report.html")->required();
  app.add_option("--fail-on", fail_on, "Exit 3 when rows at this level exist")->check(CLI::IsMember({"error", "warning"}));
  app.add_option("--rank", ranks, "Only these ranks");
  app.add_flag("-q,--quiet", quiet, "No progress and no summary on stdout");
  CLI11_PARSE(app, argc, argv);
  try {
    opdump::replay::ReplayOptions options;
    options.ranks = {ranks.begin(), ranks.end()};
    options.quiet = quiet;
    const auto result = opdump::replay::replay_dump(dump, options);
    std::filesystem::create_directories(out);
    opdump::replay::write_replay_csv(result, out + "/replay_result.csv");
    opdump::replay::write_replay_summary(result, dump, out + "/replay_summary.json");
    opdump::replay::write_replay_html(result, dump, out + "/replay_report.html");
    for (const auto& w : result.warnings) std::fprintf(stderr, "opdump: warning: %s\n", w.c_str());
    if (!quiet) std::fputs(opdump::replay::summary_text(result).c_str(), stdout);
    bool failing = false;
    for (const auto& r : result.rows)
      failing |= (fail_on == "error" && r.judgement.result == opdump::replay::Result::Error) ||
                 (fail_on == "warning" && (r.judgement.result == opdump::replay::Result::Error ||
                                           r.judgement.result == opdump::replay::Result::Warning));
    return failing ? 3 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "opdump: %s\n", e.what());
    return 1;
  }
}
