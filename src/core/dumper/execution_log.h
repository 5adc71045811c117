// The MindSpore Dump guide's auxiliary files, written as the ops run: every executed op (dumped or
// not) in execution_order/ms_execution_order_graph_{graph}.csv with the ids of its input and output
// tensors, the iterations in ms_global_execution_order_graph_{graph}.csv, the first dumped iteration
// of each graph as graphs/ms_output_trace_code_graph_{graph}.ir, and the names of named tensors in
// execution_order/tensor_names.csv. read/execution_order.cc reads them back.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dumper/op_record.h"
#include "writer/async_writer.h"

namespace opdump {

class ExecutionLog {
 public:
  // `before_flush` runs on the reporting thread before an iteration's rows go to the writer (the
  // Dumper checks there that the run's folder still exists).
  ExecutionLog(std::string run_root, AsyncWriter& writer, std::function<void()> before_flush);

  // Lists an executed op. `source`: where it was called from ("file.py:line"), when known; `named`:
  // ids of tensors the adapter knows a name for (parameters), listed once.
  void record(const OpRecord& op, TensorIdList input_ids, TensorIdList output_ids,
              const std::string& source, const std::vector<std::pair<uint64_t, std::string>>& named);
  // Names tensors first seen by an op that gets no row (at kernel level, an op whose children are the
  // kernels: a parameter is first seen as an input of conv2d, whose mkldnn_convolution is listed).
  void name_tensors(const std::vector<std::pair<uint64_t, std::string>>& named);
  // Whether ops of this graph still go to graphs/ (only its first recorded iteration does).
  bool wants_source(uint64_t graph);
  // Hands the rows of the iteration in progress to the writer (at an iteration's end or finalize).
  void flush();

 private:
  // One iteration's rows, graphs and tensor names, to append to their files.
  struct Batch {
    std::map<uint64_t, std::string> rows, graphs;
    std::string names;
    uint64_t iteration = 0;
  };
  void flush_locked();
  void append_names_locked(const std::vector<std::pair<uint64_t, std::string>>& named);
  // Appends the queued batches in the order they were queued, whichever writer thread runs it.
  void write_batches();
  void write_batch(const Batch& batch);

  const std::string run_root_;
  AsyncWriter& writer_;
  const std::function<void()> before_flush_;
  std::mutex mutex_;  // guards the iteration in progress
  uint64_t iteration_ = UINT64_MAX;
  std::map<uint64_t, std::string> rows_;        // graph -> csv rows of the current iteration
  std::map<uint64_t, size_t> row_bytes_;        // graph -> what to reserve for them: its last iteration's size
  std::map<uint64_t, std::string> graph_text_;  // graph -> .ir text of its first iteration
  std::string tensor_names_;                    // rows of tensor_names.csv not yet written
  std::set<uint64_t> graphs_done_;
  std::mutex queue_mutex_;  // guards batches_
  std::deque<Batch> batches_;  // flushed, not yet written
  std::mutex files_mutex_;  // one writer thread at a time appends to the files
};

}  // namespace opdump
