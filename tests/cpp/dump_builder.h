// Writes small dumps in opdump's MindSpore layout for the reader and compare tests: npy files of
// each op's inputs and outputs, a statistic.csv when asked, and the execution order file with the
// tensor ids that give the data flow.
#pragma once
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "compare/compare.h"
#include "layout/layout.h"
#include "format/npy.h"
#include "format/statistic_csv.h"
#include "stats/stats.h"
#include "test_util.h"

namespace opdump::test {

struct OpSpec {
  std::string type, name;
  std::vector<std::vector<float>> inputs, outputs;  // values of 1-D tensors
  std::vector<uint64_t> input_ids, output_ids;      // data flow: one id per tensor (0: none)
  std::vector<uint32_t> scalar_inputs;              // input slots written as 0-dim tensors (one value each)
};

struct DumpSpec {
  bool tensors = true;      // npy files
  bool statistics = false;  // statistic.csv
  DType statistics_dtype = DType::Float32;  // the dtype its rows name (a bfloat16 run's: BFloat16)
  bool inputs = true;       // dump inputs too (outputs always)
  bool execution_order = true;
};

// Writes `ops` as iteration `iteration` of rank `rank` below `root` ({root}/rank_{r}/net/0/{it}).
inline std::string write_dump(const std::string& root, uint32_t rank, int64_t iteration, const std::vector<OpSpec>& ops,
                              const DumpSpec& spec = {}) {
  const std::string run = root + "/rank_" + std::to_string(rank);
  const std::string folder = run + "/net/0/" + std::to_string(iteration);
  std::filesystem::create_directories(folder);
  std::filesystem::create_directories(run + "/execution_order");
  std::string order, stats = statistic_csv_header(default_stat_categories());
  const std::vector<StatCategory> cats = {StatCategory::Max, StatCategory::Min, StatCategory::Avg, StatCategory::L2Norm};
  stats = statistic_csv_header(cats);
  auto ids = [](const std::vector<uint64_t>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + (v[i] ? std::to_string(v[i]) : std::string("-"));
    return s;
  };
  uint64_t task = 0;
  for (const OpSpec& op : ops) {
    const uint64_t timestamp = 1000000 + static_cast<uint64_t>(iteration) * 1000 + task;
    OpIdentity id{op.type, op.name, task, 0, timestamp};
    for (int pass = 0; pass < 2; ++pass) {
      const IoKind io = pass == 0 ? IoKind::Input : IoKind::Output;
      if (io == IoKind::Input && !spec.inputs) continue;
      const auto& list = pass == 0 ? op.inputs : op.outputs;
      for (size_t slot = 0; slot < list.size(); ++slot) {
        const bool scalar = io == IoKind::Input &&
                            std::find(op.scalar_inputs.begin(), op.scalar_inputs.end(), slot) != op.scalar_inputs.end();
        const TensorView v{list[slot].data(), DType::Float32,
                           scalar ? Shape{} : Shape{static_cast<int64_t>(list[slot].size())}};
        if (spec.tensors) write_npy(folder + "/" + mindspore_file_name(id, io, static_cast<uint32_t>(slot)), v);
        if (spec.statistics) {
          StatisticRow row = statistic_row(id, io, slot, v);
          row.stats = compute_stats(v);
          row.dtype = spec.statistics_dtype;
          stats += statistic_csv_row(row, cats);
        }
      }
    }
    order += std::to_string(iteration) + "," + std::to_string(task) + "," + op.type + "," + csv_escape(op.name) +
             ",net," + ids(op.input_ids) + "," + ids(op.output_ids) + "," + std::to_string(timestamp) + "\n";
    ++task;
  }
  if (spec.statistics) write_text(folder + "/statistic.csv", stats);
  if (spec.execution_order) {
    const std::string path = run + "/execution_order/ms_execution_order_graph_0.csv";
    const bool fresh = !std::filesystem::exists(path);
    std::ofstream(path, std::ios::app)
        << (fresh ? "Iteration,Task ID,Op Type,Op Name,Model,Input Tensors,Output Tensors,Timestamp\n" : "") << order;
  }
  return run;
}

// Compares the target dump written under dir/t against the reference under dir/r.
inline CompareResult compare_pair(const TempDir& dir, CompareOptions options = {}) {
  return compare_dumps(dir / "t", dir / "r", options);
}

}  // namespace opdump::test
