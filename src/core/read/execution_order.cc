// The execution order files an opdump dump writes beside its tensors
// ({run root}/execution_order/ms_execution_order_graph_{graph}.csv), read back for data flow.
#include "execution_order.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "opdump/error.h"
#include "format/statistic_csv.h"

namespace opdump {

const ExecutedOp* ExecutionOrder::find(int64_t iteration, const std::string& key_name, uint64_t occurrence) const {
  auto it = by_name.find({iteration, key_name, occurrence});
  return it == by_name.end() ? nullptr : &ops[it->second];
}

namespace {

std::vector<uint64_t> ids_of(const std::string& cell) {
  std::vector<uint64_t> out;
  for (size_t start = 0; start < cell.size();) {
    size_t space = cell.find(' ', start);
    if (space == std::string::npos) space = cell.size();
    const std::string token = cell.substr(start, space - start);
    if (!token.empty()) out.push_back(token == "-" ? 0 : std::strtoull(token.c_str(), nullptr, 10));
    start = space + 1;
  }
  return out;
}

}  // namespace

bool read_execution_order(const std::string& run_root, ExecutionOrder& out, std::vector<std::string>& warnings) {
  const std::string dir = run_root + "/execution_order";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return false;
  std::vector<std::string> files;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("ms_execution_order_graph_", 0) == 0 && name.size() > 4 && name.compare(name.size() - 4, 4, ".csv") == 0)
      files.push_back(dir + "/" + name);
  }
  ::closedir(d);
  std::sort(files.begin(), files.end());
  bool any = false;
  for (const std::string& path : files) {
    CsvTable t;
    try {
      t = read_csv(path);
    } catch (const Error& e) {
      warnings.push_back(std::string(e.what()) + " (its data flow is not used)");
      continue;
    }
    const int c_it = t.column("Iteration"), c_task = t.column("Task ID"), c_type = t.column("Op Type"),
              c_name = t.column("Op Name"), c_in = t.column("Input Tensors"), c_out = t.column("Output Tensors"),
              c_ts = t.column("Timestamp");
    if (c_it < 0 || c_task < 0 || c_name < 0 || c_in < 0 || c_out < 0) continue;  // not opdump's (MindSpore's own)
    any = true;
    for (const auto& row : t.rows) {
      ExecutedOp op;
      op.iteration = std::strtoll(row[c_it].c_str(), nullptr, 10);
      op.task_id = std::strtoull(row[c_task].c_str(), nullptr, 10);
      op.op_type = c_type >= 0 ? row[c_type] : "";
      op.op_name = row[c_name];
      op.key_name = sanitize_name(op.op_name);
      op.inputs = ids_of(row[c_in]);
      op.outputs = ids_of(row[c_out]);
      op.timestamp = c_ts >= 0 ? std::strtoull(row[c_ts].c_str(), nullptr, 10) : 0;
      out.ops.push_back(std::move(op));
    }
  }
  if (!any) return false;
  try {
    const std::string names = dir + "/tensor_names.csv";
    if (::access(names.c_str(), R_OK) == 0)
      for (const auto& row : read_csv(names).rows)
        if (row.size() >= 2) out.tensor_names[std::strtoull(row[0].c_str(), nullptr, 10)] = row[1];
  } catch (const Error& e) {
    warnings.push_back(std::string(e.what()) + " (parameters stay unnamed)");
  }
  std::stable_sort(out.ops.begin(), out.ops.end(), [](const ExecutedOp& a, const ExecutedOp& b) {
    return a.iteration != b.iteration ? a.iteration < b.iteration : a.task_id < b.task_id;
  });
  std::map<std::pair<int64_t, std::string>, uint64_t> occurrences;  // per (iteration, name): seen so far
  for (size_t i = 0; i < out.ops.size(); ++i) {
    const ExecutedOp& op = out.ops[i];
    if (i > 0 && out.ops[i - 1].iteration == op.iteration && out.ops[i - 1].task_id == op.task_id)
      throw Error(run_root + ": iteration " + std::to_string(op.iteration) + " was dumped more than once (task " +
                  std::to_string(op.task_id) + " twice in " + dir +
                  "): several runs wrote into this folder; dump each run into its own path");
    out.by_name.emplace(std::make_tuple(op.iteration, op.key_name, occurrences[{op.iteration, op.key_name}]++), i);
    out.by_stamp[{op.key_name, op.task_id, op.timestamp}] = i;
  }
  return true;
}

}  // namespace opdump
