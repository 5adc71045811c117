// What a framework adapter may ask of the dump in progress. An interface: the adapter (another
// library) calls it through its vtable, so nothing of the Dumper, its one implementation, is
// exported from libopdump.so; and it reads the config as the small value it needs, decided once
// when the dump opens, instead of the whole DumpConfig.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "debug_scenes/debug_scenes.h"
#include "dumper/dump_tensor.h"
#include "dumper/op_record.h"
#include "opdump/report.h"
#include "stats/stats.h"
#include "util/tensor.h"

namespace opdump {

// The config as an adapter reads it: what to capture of an op and how.
struct AdapterSettings {
  ObserveLevel level = ObserveLevel::Api;
  Scene scene = Scene::Normal;
  HostWork host_work = HostWork::Auto;
  IterationSet iterations;
  bool tensors = true;             // tensor files (saved_data tensor or full)
  bool statistics = false;         // statistics (saved_data statistic or full)
  bool bin_files = false;          // file_format bin: tensors are copied to the host for it
  bool h5_file = false;            // file_format h5: the dump is one .h5 file
  bool device_path_on_cpu = false;    // CPU tensors reduced by the device path's ATen ops (DumpConfig)
  bool skip_no_compute_ops = false;
  bool check_fp16_range = false;   // overflow checks also flag float32 values beyond float16's range
  bool watch_has_layers = false;   // a dump_list entry names layers after which watched ops are checked

  static AdapterSettings of(const DumpConfig& config);
};

// Writable host memory for a tensor's copy, and what keeps it alive (a plain value: the adapter never
// sees the writer's memory classes, whose type_info stays inside libopdump.so).
struct CopyBytes {
  uint8_t* data = nullptr;
  std::shared_ptr<const Buffer> owner;
};

class DumpSink {
 public:
  virtual ~DumpSink() = default;

  virtual const AdapterSettings& settings() const = 0;
  virtual bool iteration_selected(uint64_t iteration) const = 0;
  // The root of this process's dump: {dump_path}/{time}/{device} or {path}/rank_{id}.
  virtual const std::string& run_root() const = 0;

  // Dumps an op's selected inputs and outputs (per config.io) as tensors and/or statistics.
  virtual void dump_op(const OpRecord& op, const std::vector<DumpTensor>& inputs,
                       const std::vector<DumpTensor>& outputs) = 0;
  // Whether record_execution of this graph goes to graphs/ (only its first dumped iteration
  // does): the adapter looks up source lines only then.
  virtual bool wants_source(uint64_t graph) = 0;
  // md5/xxhash as the config's statistic_category asks.
  virtual StatsOptions stats_options() const = 0;
  // Host memory for a tensor's copy, from the writer's pool, and the bytes counted as in flight
  // until the returned handle is released (the writer's max_inflight_mb).
  virtual CopyBytes allocate_copy(size_t bytes) = 0;
  virtual std::shared_ptr<const void> charge(uint64_t bytes) = 0;

  // ---- debug scenes (the CANN aclmdlSetDump reference dump_debug / dump_scene, MindSpore op_debug_mode) ----
  // Overflow checks skip these op types (outputs uninitialised by design).
  virtual bool overflow_ignored(std::string_view op_type) const = 0;
  // One op's outputs checked: `bytes_read` of them read, or none when their operands' bounds
  // showed them clean (`bounded`). Counted in counters().
  virtual void count_overflow_check(uint64_t bytes_read, bool bounded) = 0;
  // An input an op writes in place, copied before it runs (its dump shows it as the op read it).
  virtual void count_overflow_copy(uint64_t bytes) = 0;
  // An op whose outputs overflowed: prints it, writes its Opdebug record and (until
  // overflow_number is reached) its inputs and outputs. `event` holds the checks.
  virtual void dump_overflow(const OpRecord& op, OverflowEvent event, const std::vector<DumpTensor>& inputs,
                             const std::vector<DumpTensor>& outputs) = 0;
  // An op that threw: its tensors and, for aic_err_norm/detail_dump, a json beside them.
  virtual void dump_exception(const OpRecord& op, const std::vector<DumpTensor>& inputs,
                              const std::vector<DumpTensor>& outputs, const ExceptionInfo& info) = 0;
  // Watcher: ops named in watcher_nodes, and the layer ops after which they are checked
  // (every op when no entry names a layer; an op in both lists is only watched).
  virtual bool watched_op(std::string_view op_name, std::string_view op_type) const = 0;
  virtual bool watch_layer_op(std::string_view op_name, std::string_view op_type) const = 0;
  // Outputs of a watched op as they are after `layer` ran, below {op folder}/watcher/after_task_{id}.
  virtual void dump_watched(const OpRecord& watched, const OpRecord& layer, const std::vector<DumpTensor>& outputs) = 0;
  // One check; changes are printed, and every check goes to {run root}/watcher_report.csv.
  virtual void record_watch(const WatchResult& result) = 0;

  virtual DumpCounters counters() const = 0;
  // Hands the statistics rows still batched to the writer threads (the end of a dumped
  // iteration: their lazy statistics get computed while training goes on).
  virtual void flush_pending_rows() = 0;
};

}  // namespace opdump
