// The framework-independent dump engine that runtime adapters drive: it applies the config's
// selection, names files in the configured layout, computes statistics and hands files to the
// asynchronous writer. An adapter reports operator executions; the Dumper does the rest.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <optional>
#include <set>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"
#include "debug_scenes/debug_scenes.h"
#include "dumper/deferred_rows.h"
#include "dumper/dump_sink.h"
#include "dumper/dump_tensor.h"
#include "dumper/op_record.h"
#include "select/kernel_filter.h"
#include "layout/layout.h"
#include "format/statistic_csv.h"
#include "writer/async_writer.h"

namespace opdump {

class ExecutionLog;
class H5Dump;

struct DumperOptions {
  uint32_t rank = 0;       // MindSpore layout rank_{id}
  uint32_t device_id = 0;  // Ascend layout {device_id}; support_device filter
  int64_t start_time = 0;  // unix seconds for the {time} folder; 0 = now
};

// The dump engine. Adapters reach it as a DumpSink (whose comments say what those members do).
class Dumper final : public DumpSink {
 public:
  // Resolves and creates the dump root (a clear error now when it cannot be written, rather
  // than mid-run) and records the config in .dump_metadata for the MindSpore layout.
  Dumper(DumpConfig config, DumperOptions options = {});
  ~Dumper() override;
  Dumper(const Dumper&) = delete;
  Dumper& operator=(const Dumper&) = delete;

  const DumpConfig& config() const { return config_; }
  const AdapterSettings& settings() const override { return settings_; }
  const DumperOptions& options() const { return options_; }
  bool device_selected() const { return device_selected_; }
  bool iteration_selected(uint64_t iteration) const override;

  // Selection of one op by model (acl dump_list / dump_op_switch) and name (kernels).
  // `marked` says the op belongs to something marked with set_dump (MindSpore dump_mode 2).
  bool op_selected(std::string_view model_name, std::string_view op_name, std::string_view op_type,
                   bool marked = false) const;

  // The folder an op's files go to (created on first use; the string lives as long as the dumper).
  const std::string& op_folder(const OpRecord& op);
  const std::string& run_root() const override { return run_root_; }

  void dump_op(const OpRecord& op, const std::vector<DumpTensor>& inputs,
               const std::vector<DumpTensor>& outputs) override;

  // the MindSpore Dump guide's {op_type}.{op_name}.json beside the op's tensors (save_kernel_args),
  // with the op's "task_id"; a name already written in the folder (one forward op's several autograd
  // nodes of one type: an LSTM's MulBackward0s) goes to {op_type}.{op_name}.{task_id}.json.
  void write_kernel_args(const OpRecord& op, std::string json);
  // Lists an executed op (dumped or not) in the execution-order files (execution_log.h), with the
  // ids of its input and output tensors.
  // `source`: where the op was called from ("file.py:line"), when known.
  // `named`: ids of tensors the adapter knows a name for (parameters), listed once in
  // execution_order/tensor_names.csv.
  void record_execution(const OpRecord& op, TensorIdList input_ids, TensorIdList output_ids,
                        const std::string& source = "",
                        const std::vector<std::pair<uint64_t, std::string>>& named = {});
  // Names tensors first seen by an op that gets no execution-order row (ExecutionLog::name_tensors).
  void name_tensors(const std::vector<std::pair<uint64_t, std::string>>& named);
  bool wants_source(uint64_t graph) override;
  // Writes a small text file below run_root (execution order, graphs, Opdebug records).
  void write_text(const std::string& relative_path, const std::string& text);

  // ---- debug scenes (the CANN aclmdlSetDump reference dump_debug / dump_scene, MindSpore op_debug_mode) ----
  Scene scene() const { return config_.scene; }
  bool overflow_ignored(std::string_view op_type) const override;
  void count_overflow_check(uint64_t bytes_read, bool bounded) override;
  void count_overflow_copy(uint64_t bytes) override;
  void dump_overflow(const OpRecord& op, OverflowEvent event, const std::vector<DumpTensor>& inputs,
                     const std::vector<DumpTensor>& outputs) override;
  std::optional<OverflowEvent> overflow_root_cause() const { return overflow_.root_cause(); }
  void dump_exception(const OpRecord& op, const std::vector<DumpTensor>& inputs,
                      const std::vector<DumpTensor>& outputs, const ExceptionInfo& info) override;
  bool watched_op(std::string_view op_name, std::string_view op_type) const override;
  bool watch_layer_op(std::string_view op_name, std::string_view op_type) const override;
  void dump_watched(const OpRecord& watched, const OpRecord& layer, const std::vector<DumpTensor>& outputs) override;
  void record_watch(const WatchResult& result) override;
  std::vector<WatchResult> watch_changes() const;

  StatsOptions stats_options() const override { return stats_options_; }

  AsyncWriter& writer() { return *writer_; }
  CopyBytes allocate_copy(size_t bytes) override;
  std::shared_ptr<const void> charge(uint64_t bytes) override { return writer_->charge(bytes); }
  DumpCounters counters() const override;
  void flush_pending_rows() override;
  // An op the adapter is reporting holds a lease from before its first call into the Dumper
  // until after its last: finalize() waits for the ops holding one, so that nothing is dumped
  // after the report was taken. After finalize began, enter_op() returns an empty lease (the op
  // is not dumped).
  class OpLease {
   public:
    OpLease() = default;
    OpLease(OpLease&& o) noexcept : dumper_(std::exchange(o.dumper_, nullptr)) {}
    OpLease& operator=(OpLease&& o) noexcept;
    ~OpLease() { release(); }
    explicit operator bool() const { return dumper_ != nullptr; }

   private:
    friend class Dumper;
    explicit OpLease(Dumper* d) : dumper_(d) {}
    void release();
    Dumper* dumper_ = nullptr;
  };
  OpLease enter_op();
  // The same without the handle (OpReport holds the lease itself): false after finalize began;
  // each true is followed by one leave_op() on the same thread.
  bool try_enter_op();
  void leave_op();
  // The next op's sequence number (OpRecord::sequence).
  uint64_t next_op_sequence() { return op_sequence_.fetch_add(1, std::memory_order_relaxed) + 1; }
  // Ends op reporting: later enter_op() calls get empty leases, and this waits for the ops in
  // flight on other threads (at most kOpDrainMilliseconds, then it warns). finalize() calls it
  // first; a runtime calls it earlier, before collecting what adapters still hold for the dump.
  void stop_ops();
  static constexpr int kOpDrainMilliseconds = 5000;

  // Drains the writer, closes statistic.csv files, warns about what was probably a mistake
  // (kernels entries and dump_list models that never matched, nothing dumped, iterations asked
  // for that never came: `last_iteration` is the iteration the run ended in), and returns what
  // was written and lost. Safe to call more than once.
  WriterReport finalize(uint64_t last_iteration = UINT64_MAX);

 private:
  void dump_to(const OpRecord& op, const std::string& folder, const std::vector<DumpTensor>& inputs,
               const std::vector<DumpTensor>& outputs);
  // The part of a tensor that goes to a file (sample_mode 1: the first sample_num elements).
  TensorView file_view(const TensorView& v) const;
  void finalize_scenes();
  void dump_tensor_files(const OpRecord& op, const std::string& folder, IoKind io,
                         const std::vector<DumpTensor>& tensors);
  void dump_bin(const OpRecord& op, const std::string& folder,
                const std::vector<DumpTensor>& inputs, const std::vector<DumpTensor>& outputs);
  // `origin`: the op's folder and identity for its batched rows, made by the first row that needs
  // it and shared by the rest, inputs and outputs.
  void dump_statistics(const OpRecord& op, const std::string& folder, IoKind io,
                       const std::vector<DumpTensor>& tensors, std::shared_ptr<const DeferredRows::Origin>& origin);
  // Lists the op's placeholders in {folder}/placeholders.csv and counts those that lost data.
  void record_placeholders(const OpRecord& op, const std::string& folder, const std::vector<DumpTensor>& inputs,
                           const std::vector<DumpTensor>& outputs);

  // Reports (once) that the run's folder was deleted while dumping.
  void check_root();

  DumpConfig config_;
  AdapterSettings settings_;
  DumperOptions options_;
  StatsOptions stats_options_;  // what config_'s categories ask of each pass (asked per captured tensor)
  std::unique_ptr<ExecutionLog> execution_;  // declared before writer_: outlives the writer's threads
  std::unique_ptr<DeferredRows> deferred_rows_;  // before writer_, like execution_
  std::mutex placeholders_mutex_;
  std::set<std::string> placeholder_files_;  // folders whose placeholders.csv has its header
  // Rows not yet written, by folder, in the order they came (one writer task per batch: a task per
  // op woke a writer thread per op, a system call on the training thread each time).
  std::vector<std::pair<std::string, std::string>> pending_placeholders_;
  size_t pending_placeholder_bytes_ = 0;
  bool placeholder_flush_queued_ = false;  // a writer task will take what is pending: no second one
  void flush_placeholders();
  // A placeholder standing for data opdump could not dump: counted for finalize's warning.
  void count_lost_data(const OpRecord& op, const DumpTensor& t);
  struct LostData {
    uint64_t count = 0;
    std::string example;  // the first op it happened to
  };
  std::map<std::string, LostData> lost_data_;  // by reason
  KernelFilter kernels_;
  std::vector<std::pair<std::string, KernelFilter>> model_layers_;  // acl dump_list by model_name
  std::unique_ptr<std::atomic<bool>[]> model_seen_;                 // per model_layers_ entry: an op of it ran
  std::string run_root_;
  bool device_selected_ = true;
  std::unique_ptr<AsyncWriter> writer_;
  std::unique_ptr<H5Dump> h5_;  // file_format h5: the ops' tensors go to this one file
  std::unique_ptr<StatisticCsvWriter> statistics_;
  NameMapper names_;
  std::mutex kernel_args_mutex_;
  uint64_t kernel_args_iteration_ = 0;
  std::set<std::string> kernel_args_written_;  // folder/type.name of the iteration in progress
  const std::string& made_folder(const OpRecord& op);  // op_folder's lookup, made on first use
  mutable std::mutex folders_mutex_;
  std::map<std::tuple<uint64_t, uint64_t, std::string>, std::string> folders_made_;  // (model id, iteration, model)
  const uint64_t serial_;  // this dumper among every one the process made (op_folder's per-thread answer)
  std::atomic<bool> root_lost_reported_{false};
  std::atomic<uint64_t> ops_{0}, tensors_{0}, tensor_bytes_{0}, stat_rows_{0}, stat_bytes_{0}, stat_bytes_read_{0};
  std::atomic<uint64_t> overflow_checks_{0}, overflow_bytes_read_{0}, overflow_bounded_{0},
      overflow_bytes_copied_{0};
  OverflowTracker overflow_;
  KernelFilter watch_nodes_, watch_layers_;
  mutable std::mutex watch_mutex_;
  std::string watch_rows_;
  std::vector<WatchResult> watch_changes_;
  std::mutex finalize_mutex_;
  std::atomic<int64_t> ops_in_flight_{0};
  std::atomic<uint64_t> op_sequence_{0};
  std::atomic<bool> closing_{false};
  // Finalized (set under finalize_mutex_): reports still arriving, from the finalizing thread's
  // own op, are dropped.
  std::atomic<bool> closed_{false};
  WriterReport final_report_;
};

}  // namespace opdump
