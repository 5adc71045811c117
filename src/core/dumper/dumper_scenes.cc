// The Dumper's debug scenes: overflow records and their root cause, exception dumps, and the
// watcher's checks (the CANN aclmdlSetDump reference dump_debug / dump_scene; MindSpore op_debug_mode 3 and 4).
#include <nlohmann/json.hpp>

#include "dumper/dumper.h"
#include "util/log.h"

namespace opdump {

bool Dumper::overflow_ignored(std::string_view op_type) const {
  for (const std::string& ignored : config_.overflow_ignore_ops)
    if (ignored == op_type) return true;
  return false;
}

void Dumper::count_overflow_check(uint64_t bytes_read, bool bounded) {
  overflow_checks_.fetch_add(1, std::memory_order_relaxed);
  if (bytes_read) overflow_bytes_read_.fetch_add(bytes_read, std::memory_order_relaxed);
  if (bounded) overflow_bounded_.fetch_add(1, std::memory_order_relaxed);
}

void Dumper::count_overflow_copy(uint64_t bytes) { overflow_bytes_copied_.fetch_add(bytes, std::memory_order_relaxed); }

void Dumper::dump_overflow(const OpRecord& op, OverflowEvent event, const std::vector<DumpTensor>& inputs,
                           const std::vector<DumpTensor>& outputs) {
  if (closed_.load(std::memory_order_acquire)) return;
  event.op = op.id;
  event.model_name = op.model_name;
  event.iteration = op.iteration;
  event.rank = options_.rank;
  const std::string folder = op_folder(op);
  event.folder = folder;
  log_warning("overflow: " + describe_overflow(event, config_.check_fp16_range));
  const std::string json = opdebug_json(event, config_.check_fp16_range);
  if (!overflow_.record(std::move(event))) return;  // overflow_number reached
  const std::string path = folder + "/" + names_.map(folder, opdebug_file_name(op.id));
  writer_->run(json.size(), [this, path, json] { writer_->write_now(path, json.data(), json.size(), nullptr, 0); });
  dump_to(op, folder, inputs, outputs);
}

void Dumper::dump_exception(const OpRecord& op, const std::vector<DumpTensor>& inputs,
                            const std::vector<DumpTensor>& outputs, const ExceptionInfo& info) {
  if (closed_.load(std::memory_order_acquire)) return;
  const std::string folder = op_folder(op);
  log_warning("exception dump: " + op.id.op_name + " (" + std::string(op.id.op_type) + ") failed; its " +
              (config_.dumps_outputs() ? "inputs and outputs are" : "inputs are") + " in " + folder);
  dump_to(op, folder, inputs, outputs);
  if (config_.scene != Scene::ExceptionNorm && config_.scene != Scene::ExceptionDetail) return;
  nlohmann::ordered_json j;
  j["op_type"] = op.id.op_type;
  j["op_name"] = op.id.op_name;
  j["model_name"] = op.model_name;
  j["iteration"] = op.iteration;
  j["task_id"] = op.id.task_id;
  j["stream_id"] = op.id.stream_id;
  j["timestamp"] = op.id.timestamp;
  auto describe = [](const std::vector<DumpTensor>& tensors) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const DumpTensor& t : tensors) {
      nlohmann::ordered_json e;
      e["dtype"] = std::string(dtype_name(t.view.dtype));
      e["shape"] = t.view.shape;
      e["format"] = "ND";
      e["dumped"] = t.view.data != nullptr || t.view.nbytes() == 0;
      list.push_back(e);
    }
    return list;
  };
  j["inputs"] = describe(inputs);
  j["outputs"] = describe(outputs);
  j["arguments"] = info.arguments_json.empty() ? nlohmann::ordered_json(nullptr)
                                               : nlohmann::ordered_json::parse(info.arguments_json, nullptr, false);
  if (config_.scene == Scene::ExceptionDetail) {
    j["cpp_stack"] = info.cpp_stack;
    j["python_stack"] = info.python_stack;
  }
  const std::string text = j.dump(2) + "\n";
  const std::string path = folder + "/" + names_.map(folder, ascend_file_name(op.id) + ".exception.json");
  writer_->run(text.size(), [this, path, text] { writer_->write_now(path, text.data(), text.size(), nullptr, 0); });
}

bool Dumper::watched_op(std::string_view op_name, std::string_view op_type) const {
  return config_.scene == Scene::Watcher && watch_nodes_.matches(op_name, op_type);
}

namespace {

// the CANN aclmdlSetDump reference: a collective communication op (HcomAllReduce, ...) is never a layer op.
bool is_collective(std::string_view op_type) {
  if (op_type.substr(0, 4) == "Hcom") return true;
  for (const char* c : {"allreduce", "all_reduce", "allgather", "all_gather", "reduce_scatter", "alltoall",
                        "all_to_all", "broadcast_"})
    if (icontains(op_type, c)) return true;
  return false;
}

}  // namespace

bool Dumper::watch_layer_op(std::string_view op_name, std::string_view op_type) const {
  if (config_.scene != Scene::Watcher || is_collective(op_type) || watched_op(op_name, op_type)) return false;
  return watch_layers_.empty() || watch_layers_.matches(op_name, op_type);
}

void Dumper::dump_watched(const OpRecord& watched, const OpRecord& layer, const std::vector<DumpTensor>& outputs) {
  if (closed_.load(std::memory_order_acquire)) return;
  const std::string folder = join_path(op_folder(watched), "watcher/after_task_" + std::to_string(layer.id.task_id));
  {
    std::lock_guard<std::mutex> lock(folders_mutex_);
    make_dirs(folder);
  }
  dump_to(watched, folder, {}, outputs);
}

void Dumper::record_watch(const WatchResult& r) {
  if (closed_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(watch_mutex_);
  if (watch_rows_.empty())
    watch_rows_ = "Iteration,Layer Task ID,Layer Op,Watched Task ID,Watched Op,Output Slot,Changed Elements,"
                  "First Changed Index,Max Abs Diff\n";
  watch_rows_ += std::to_string(r.iteration) + "," + std::to_string(r.layer_op.task_id) + "," +
                 csv_escape(r.layer_op.op_name) + "," + std::to_string(r.watched_op.task_id) + "," +
                 csv_escape(r.watched_op.op_name) + "," + std::to_string(r.slot) + "," +
                 std::to_string(r.diff.changed) + "," + std::to_string(r.diff.first_changed) + "," +
                 std::to_string(r.diff.max_abs_diff) + "\n";
  if (r.diff.changed == 0) return;
  log_warning("watcher: " + r.layer_op.op_name + " (" + r.layer_op.op_type + ") changed output " +
              std::to_string(r.slot) + " of " + r.watched_op.op_name + ": " + std::to_string(r.diff.changed) +
              " elements, first at flat index " + std::to_string(r.diff.first_changed) + ", max |diff| " +
              std::to_string(r.diff.max_abs_diff));
  watch_changes_.push_back(r);
}

std::vector<WatchResult> Dumper::watch_changes() const {
  std::lock_guard<std::mutex> lock(watch_mutex_);
  return watch_changes_;
}

void Dumper::finalize_scenes() {
  if (config_.scene == Scene::Overflow) {
    const auto root = overflow_.root_cause();
    const auto events = overflow_.events();
    write_text("overflow_summary.json", overflow_summary_json(events, root, config_.check_fp16_range));
    if (root)
      log_warning("overflow root cause: " + describe_overflow(*root, config_.check_fp16_range) + "; " + std::to_string(overflow_.total()) +
                  " overflowing ops in all, listed in " + join_path(run_root_, "overflow_summary.json"));
    else
      log_info("overflow check: no op overflowed");
  }
  if (config_.scene == Scene::Watcher) {
    std::lock_guard<std::mutex> lock(watch_mutex_);
    if (!watch_rows_.empty()) write_text("watcher_report.csv", watch_rows_);
    for (const auto& e : watch_nodes_.unmatched_entries())
      log_warning("watcher_nodes entry \"" + e + "\" matched no operator");
    for (const auto& e : watch_layers_.unmatched_entries())
      log_warning("layer entry \"" + e + "\" matched no operator");
  }
}

}  // namespace opdump
