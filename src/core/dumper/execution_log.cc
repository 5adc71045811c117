// The execution-order log of a dump (execution_log.h).
#include "dumper/execution_log.h"

#include <unistd.h>

#include "util/append_number.h"
#include "util/csv.h"
#include "util/path.h"
#include "writer/atomic_file.h"

namespace opdump {

ExecutionLog::ExecutionLog(std::string run_root, AsyncWriter& writer, std::function<void()> before_flush)
    : run_root_(std::move(run_root)), writer_(writer), before_flush_(std::move(before_flush)) {}

namespace {

// Tensor ids in slot order; "-" for a slot without a tensor.
void append_ids(std::string& out, TensorIdList ids) {
  for (const uint64_t* id = ids.begin(); id != ids.end(); ++id) {
    if (id != ids.begin()) out += ' ';
    if (*id) append_number(out, *id);
    else out += '-';
  }
}

}  // namespace

bool ExecutionLog::wants_source(uint64_t graph) {
  std::lock_guard<std::mutex> lock(mutex_);
  return !graphs_done_.count(graph);
}

void ExecutionLog::record(const OpRecord& op, TensorIdList input_ids, TensorIdList output_ids, const std::string& source,
                          const std::vector<std::pair<uint64_t, std::string>>& named) {
  std::lock_guard<std::mutex> lock(mutex_);
  append_names_locked(named);
  if (op.iteration != iteration_) {
    flush_locked();
    iteration_ = op.iteration;
  }
  // Appended in place: a row of temporaries is a dozen allocations per op on the training thread.
  std::string& rows = rows_[op.model_id];
  // As long as the graph's rows of the last iteration: growing them step by step copied them a
  // dozen times an iteration, the larger copies on the training thread's heap.
  if (rows.empty()) rows.reserve(row_bytes_[op.model_id]);
  append_number(rows, op.iteration);
  rows += ',';
  append_number(rows, op.id.task_id);
  rows += ',';
  for (const std::string* cell : {&op.id.op_type, &op.id.op_name, &op.model_name}) {
    append_csv_cell(rows, *cell);
    rows += ',';
  }
  append_ids(rows, input_ids);
  rows += ',';
  append_ids(rows, output_ids);
  rows += ',';
  append_number(rows, op.id.timestamp);
  rows += '\n';
  if (!graphs_done_.count(op.model_id)) {
    std::string outs, ins;
    for (uint64_t id : output_ids) outs += (outs.empty() ? "" : ", ") + (id ? "%" + std::to_string(id) : std::string("-"));
    for (uint64_t id : input_ids) ins += (ins.empty() ? "" : ", ") + (id ? "%" + std::to_string(id) : std::string("-"));
    graph_text_[op.model_id] += (outs.empty() ? "()" : outs) + " = " + op.id.op_type + "(" + ins + ")\n" +
                                "    : (" + op.id.op_name + ")  task " + std::to_string(op.id.task_id) + "\n" +
                                (source.empty() ? "" : "    # In file " + source + "\n");
  }
}

void ExecutionLog::name_tensors(const std::vector<std::pair<uint64_t, std::string>>& named) {
  std::lock_guard<std::mutex> lock(mutex_);
  append_names_locked(named);
}

void ExecutionLog::append_names_locked(const std::vector<std::pair<uint64_t, std::string>>& named) {
  for (const auto& [id, name] : named) {
    append_number(tensor_names_, id);
    tensor_names_ += ',';
    append_csv_cell(tensor_names_, name);
    tensor_names_ += '\n';
  }
}

void ExecutionLog::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  flush_locked();
}

void ExecutionLog::flush_locked() {
  if (rows_.empty()) return;
  before_flush_();  // before the writer creates folders below the run's root again
  for (const auto& [graph, text] : graph_text_) graphs_done_.insert(graph);
  for (const auto& [graph, text] : rows_) row_bytes_[graph] = text.size() + text.size() / 8;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    batches_.push_back(Batch{std::move(rows_), std::move(graph_text_), std::move(tensor_names_), iteration_});
  }
  rows_.clear();
  graph_text_.clear();
  tensor_names_.clear();
  // Tasks of consecutive iterations may run on different writer threads at once: each writes every batch
  // queued so far, in order, so that the files list iterations in the order they ran.
  writer_.run(1024, [this] { write_batches(); });
}

void ExecutionLog::write_batches() {
  std::lock_guard<std::mutex> files(files_mutex_);
  while (true) {
    Batch batch;
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      if (batches_.empty()) return;
      batch = std::move(batches_.front());
      batches_.pop_front();
    }
    write_batch(batch);
  }
}

void ExecutionLog::write_batch(const Batch& batch) {
  const std::string order_dir = join_path(run_root_, "execution_order");
  const std::string graph_dir = join_path(run_root_, "graphs");
  make_dirs(order_dir);
  if (!batch.names.empty()) {
    const std::string path = order_dir + "/tensor_names.csv";
    const bool fresh = ::access(path.c_str(), F_OK) != 0;
    append_to_file(path, (fresh ? "Tensor,Name\n" : "") + batch.names);
  }
  for (const auto& [graph, text] : batch.rows) {
    const std::string g = std::to_string(graph);
    const std::string path = order_dir + "/ms_execution_order_graph_" + g + ".csv";
    const bool fresh = ::access(path.c_str(), F_OK) != 0;
    append_to_file(path, (fresh ? "Iteration,Task ID,Op Type,Op Name,Model,Input Tensors,Output Tensors,Timestamp\n" : "") + text);
    append_to_file(order_dir + "/ms_global_execution_order_graph_" + g + ".csv", std::to_string(batch.iteration) + "\n");
  }
  if (!batch.graphs.empty()) make_dirs(graph_dir);
  for (const auto& [graph, text] : batch.graphs) {
    const std::string path = graph_dir + "/ms_output_trace_code_graph_" + std::to_string(graph) + ".ir";
    const std::string body = "# ops of graph " + std::to_string(graph) + " in execution order (iteration " +
                             std::to_string(batch.iteration) + "): %outputs = op(%inputs) : (full name)\n" + text;
    write_file_atomic(path, body.data(), body.size(), nullptr, 0);
  }
}

}  // namespace opdump
