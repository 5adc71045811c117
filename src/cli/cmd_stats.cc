// opdump stats PATH [--csv OUT] [--categories LIST]
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "commands.h"
#include "read/dump_index.h"
#include "format/dump_files.h"
#include "format/ascend_bin.h"
#include "opdump/error.h"
#include "format/npy.h"
#include "format/placeholders_csv.h"
#include "format/statistic_csv.h"
#include "stats/helper_pool.h"
#include "writer/atomic_file.h"

namespace opdump::cli {
namespace {

std::vector<StatCategory> parse_categories(const std::string& list) {
  if (list.empty())
    return {StatCategory::Count, StatCategory::Max, StatCategory::Min, StatCategory::Avg, StatCategory::L2Norm,
            StatCategory::NanCount, StatCategory::NegativeInfCount, StatCategory::PositiveInfCount};
  if (list == "all") return all_stat_categories();
  std::vector<StatCategory> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string key = list.substr(start, comma - start);
    std::replace(key.begin(), key.end(), '_', ' ');
    auto c = stat_category_from_key(key);
    if (!c) throw Error("--categories: \"" + key + "\" is not a statistic; allowed: max, min, avg, count, "
                        "negative zero count, positive zero count, nan count, negative inf count, "
                        "positive inf count, zero count, l2norm, md5, xxhash (or all)");
    out.push_back(*c);
    start = comma + 1;
  }
  return out;
}

struct Row {
  StatisticRow row;
  std::string label;               // file (and tensor) shown in the table
  std::vector<std::string> cells;  // one per category
  std::string placeholder;         // the dump holds no data for this tensor, and why
};

// Each folder's placeholders.csv, read once.
class FolderPlaceholders {
 public:
  std::string of(const std::string& folder, const OpIdentity& op, IoKind io, uint32_t slot,
                 std::vector<std::string>& warnings) {
    auto it = folders_.find(folder);
    if (it == folders_.end()) {
      Placeholders p;
      try {
        p = read_placeholders(folder);
      } catch (const Error& e) {
        warnings.push_back(e.what());
      }
      it = folders_.emplace(folder, std::move(p)).first;
    }
    return placeholder_reason(it->second, op.op_name, op.task_id, io, slot);
  }

 private:
  std::map<std::string, Placeholders> folders_;
};

// A statistic another tool recorded (msprobe's dump.json): "" where it recorded none.
std::string recorded_cell(const RecordedStats& s, StatCategory c) {
  auto number = [&](const std::optional<double>& v) { return v ? fmt::format("{}", *v) : std::string(); };
  switch (c) {
    case StatCategory::Max: return number(s.max);
    case StatCategory::Min: return number(s.min);
    case StatCategory::Avg: return number(s.avg);
    case StatCategory::L2Norm: return number(s.l2norm);
    case StatCategory::Count: return s.count ? std::to_string(*s.count) : "";
    default: return "";
  }
}

// What the categories ask for; a large tensor split over the command's helper threads.
StatsOptions stats_options(const std::vector<StatCategory>& cats, const ParallelRunner& helpers) {
  StatsOptions so = stats_options_for(cats);
  so.runner = helpers;
  return so;
}

// msprobe's dump.json: each tensor's statistics computed from its file in dump_tensor_data/ when
// there is one, else as dump.json recorded them. An .h5 dump: each tensor dataset's, by its path.
int add_indexed_rows(const DumpFile& f, const std::vector<StatCategory>& cats, const StatsOptions& so,
                     std::vector<Row>& rows, std::vector<std::string>& warnings) {
  const DumpIndex index = index_dump(f.path);
  warnings.insert(warnings.end(), index.warnings.begin(), index.warnings.end());
  int failed = 0;
  for (const DumpEntry& e : index.entries) {
    Row r;
    r.label = e.source == DumpEntry::Source::H5 ? e.object
                                                : e.op_name + " " + std::string(to_string(e.io)) + "." + std::to_string(e.slot);
    r.row.op = OpIdentity{e.op_type, e.op_name, e.order, 0, 0};
    r.row.io = e.io;
    r.row.slot = e.slot;
    r.row.dtype = e.dtype;
    r.row.shape = e.shape;
    if (!e.placeholder.empty()) {
      r.placeholder = e.placeholder;
      r.cells.assign(cats.size(), "");
    } else if (e.source == DumpEntry::Source::Statistics) {
      for (auto c : cats) r.cells.push_back(recorded_cell(*e.stats, c));
    } else {
      try {  // one unreadable tensor file: named, and the other tensors go on
        const Tensor t = load_entry(e);
        r.row.data_size = t.nbytes();
        r.row.stats = compute_stats(t.view(), so);
      } catch (const Error& err) {
        std::fprintf(stderr, "opdump: %s\n", err.what());
        ++failed;
        continue;
      }
      for (auto c : cats) r.cells.push_back(r.row.stats.cell(c, r.row.dtype));
    }
    rows.push_back(std::move(r));
  }
  return failed;
}

void add_rows(const DumpFile& f, const std::vector<StatCategory>& cats, const StatsOptions& so, OriginalNames& names,
              FolderPlaceholders& holes, std::vector<Row>& rows, std::vector<std::string>& warnings) {
  const std::string name = names.of(f.path);  // as written, before a long name was shortened
  const std::string label = f.relative.empty() ? base_name(f.path) : f.relative;
  ParsedDumpName parsed;
  const bool named = parse_dump_file_name(name, &parsed);
  auto make = [&](const Tensor& t, IoKind io, uint32_t slot, const std::string& shown) {
    Row r;
    r.label = shown;
    r.row.op = named ? parsed.op : OpIdentity{"", label, 0, 0, 0};
    r.row.io = io;
    r.row.slot = slot;
    r.row.data_size = t.nbytes();
    r.row.dtype = t.dtype;
    r.row.shape = t.shape;
    r.row.stats = compute_stats(t.view(), so);
    for (auto c : cats) r.cells.push_back(r.row.stats.cell(c, r.row.dtype));
    if (named) r.placeholder = holes.of(folder_of(f.path), r.row.op, io, slot, warnings);
    rows.push_back(std::move(r));
  };
  if (f.kind == DumpFileKind::Npy) {
    make(read_npy(f.path), named && parsed.has_io ? parsed.io : IoKind::Output, named ? parsed.slot : 0, label);
  } else if (f.kind == DumpFileKind::Bin) {
    BinDump d = read_ascend_bin(f.path);
    for (size_t i = 0; i < d.inputs.size(); ++i)
      make(d.tensor(d.inputs[i]), IoKind::Input, static_cast<uint32_t>(i), label + " input." + std::to_string(i));
    for (size_t i = 0; i < d.outputs.size(); ++i)
      make(d.tensor(d.outputs[i]), IoKind::Output, static_cast<uint32_t>(i), label + " output." + std::to_string(i));
  }
}

void print_table(const std::vector<Row>& rows, const std::vector<StatCategory>& cats) {
  std::vector<std::string> head = {"Tensor", "Data Type", "Shape"};
  for (auto c : cats) head.emplace_back(stat_category_label(c));
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows) {
    std::vector<std::string> line = {r.label, std::string(dtype_name(r.row.dtype)), shape_to_string(r.row.shape)};
    line.insert(line.end(), r.cells.begin(), r.cells.end());
    cells.push_back(std::move(line));
  }
  std::vector<size_t> width(head.size());
  for (size_t i = 0; i < head.size(); ++i) width[i] = head[i].size();
  for (const auto& line : cells)
    for (size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  auto print_line = [&](const std::vector<std::string>& line) {
    std::string s;
    for (size_t i = 0; i < line.size(); ++i) s += fmt::format("{:<{}}  ", line[i], width[i]);
    while (!s.empty() && s.back() == ' ') s.pop_back();
    std::puts(s.c_str());
  };
  print_line(head);
  for (const auto& line : cells) print_line(line);
}

// Placeholders are listed apart: an empty tensor in the table is data, these are not.
void print_placeholders(const std::vector<Row>& rows) {
  size_t n = 0;
  for (const auto& r : rows) n += !r.placeholder.empty();
  if (!n) return;
  std::printf("\n%zu placeholder(s): the dump holds no data for these tensors\n", n);
  for (const auto& r : rows)
    if (!r.placeholder.empty()) std::printf("  %s: %s\n", r.label.c_str(), r.placeholder.c_str());
}

}  // namespace

// The options of this subcommand, one value per command (CLI11's subcommands-in-files shape).
struct StatsCommandOptions {
  std::string path, csv, categories;
};

void add_stats_command(CLI::App& app, int* exit_code) {
  auto opt = std::make_shared<StatsCommandOptions>();  // owned by the callback (CLI11 keeps it alive)
  auto* cmd = app.add_subcommand("stats", "Statistics of npy/bin/.h5 dump files or folders (and msprobe dumps), as a table or a statistic.csv");
  cmd->add_option("PATH", opt->path, "A dump file or a folder of them")->required();
  cmd->add_option("--csv", opt->csv, "Write a statistic.csv (MindSpore's columns) to this file instead of a table");
  cmd->add_option("--categories", opt->categories,
                  "Comma-separated statistics (max,min,avg,count,nan_count,l2norm,md5,xxhash,...; or all)");
  cmd->callback([opt, exit_code] {
    const auto cats = parse_categories(opt->categories);
    const std::shared_ptr<HelperPool> helpers = HelperPool::make();
    const StatsOptions so = stats_options(cats, helpers->runner());
    std::vector<Row> rows;
    int failed = 0;
    OriginalNames names;
    FolderPlaceholders holes;
    std::vector<std::string> warnings;
    const auto files = scan_dump(opt->path);
    const std::set<std::string> msprobe_data = msprobe_tensor_folders(files);  // read through their dump.json
    for (const auto& f : files) {
      const bool msprobe_file = msprobe_data.count(folder_of(f.path)) > 0;
      if (f.kind != DumpFileKind::Npy && f.kind != DumpFileKind::Bin && f.kind != DumpFileKind::MsprobeDump &&
          f.kind != DumpFileKind::H5)
        continue;
      if (msprobe_file) continue;
      try {
        if (f.kind == DumpFileKind::MsprobeDump || f.kind == DumpFileKind::H5) failed += add_indexed_rows(f, cats, so, rows, warnings);
        else add_rows(f, cats, so, names, holes, rows, warnings);
      } catch (const Error& e) {
        std::fprintf(stderr, "opdump: %s\n", e.what());
        ++failed;
      } catch (const std::exception& e) {  // out of memory, say: this file fails, the others go on
        std::fprintf(stderr, "opdump: %s: %s\n", f.path.c_str(), e.what());
        ++failed;
      }
    }
    warnings.insert(warnings.end(), names.warnings.begin(), names.warnings.end());
    for (const auto& w : warnings) std::fprintf(stderr, "opdump: warning: %s\n", w.c_str());
    if (!opt->csv.empty()) {
      AtomicFileWriter out(opt->csv);
      out.write(statistic_csv_header(cats));
      for (const auto& r : rows) out.write(statistic_csv_row(r.row, r.cells));
      out.commit();
      std::printf("wrote %zu row(s) to %s\n", rows.size(), opt->csv.c_str());
    } else {
      print_table(rows, cats);
    }
    print_placeholders(rows);
    if (rows.empty() && failed == 0)
      std::fprintf(stderr, "opdump: no npy, bin, .h5 or msprobe dump.json files in %s\n", opt->path.c_str());
    *exit_code = failed || rows.empty() ? kExitFailure : kExitOk;
  });
}

}  // namespace opdump::cli
