// The op path, written once for every caller: the PyTorch observer, dump_op() of runtimes without
// an adapter, and the paths that dump ops of their own (the .h5 dumper, load mode). An adapter
// names its ops (identity/op_names.h) and captures their tensors; everything between (the
// runtime's snapshot, the dump's lease, the task numbering, the model, the reload rule, the debug
// scene and the selection, in that one order) happens here.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dumper/dump_sink.h"
#include "dumper/op_record.h"
#include "opdump/api.h"

namespace opdump {

class Dumper;
class Runtime;
struct RuntimeSnapshot;

// What happens to an op, decided once when it begins (OpReport::decide).
struct OpPlan {
  bool scene = false;    // a debug scene (overflow, exception, watcher) checks it
  bool dump = false;     // selected: its tensors are dumped
  bool inputs = false;   // ...these sides of it (input_output)
  bool outputs = false;
  bool kernel_args = false;  // ...and its arguments (save_kernel_args)
};

// One op's passage through the core, from begin() to dump(). Holding it keeps the dump open (its
// lease): finalize waits for the op. The framework side gets it from RuntimeInterface::begin_op();
// it holds the dump as its DumpSink, so that nothing of the Dumper is reached from outside the core.
class OPDUMP_ADAPTER_API OpReport {
 public:
  OpReport();
  ~OpReport();  // releases the lease
  OpReport(OpReport&& o) noexcept;
  OpReport& operator=(OpReport&& o) noexcept;
  OpReport(const OpReport&) = delete;
  OpReport& operator=(const OpReport&) = delete;
  // Empty when no dump is configured, the current iteration is not selected, or the dump is
  // closing: the op is not reported at all.
  static OpReport begin(const Runtime& runtime);
  explicit operator bool() const { return sink_ != nullptr; }

  DumpSink& dumper() const { return *sink_; }
  const std::shared_ptr<DumpSink>& shared_dumper() const { return sink_; }
  const AdapterSettings& settings() const { return sink_->settings(); }

  // The registered id of a model ("" or unregistered: 0).
  uint64_t model_id(const std::string& model) const;
  // The op takes the next task id of the iteration (every op of the observed level, dumped or not,
  // so that execution orders of two runs line up) and becomes the record the files are named by.
  void identify(std::string_view op_type, std::string name, std::string model, uint64_t model_id);
  const OpRecord& record() const { return record_; }
  uint64_t* stream_id() { return &record_.id.stream_id; }  // the device stream, as capture finds it

  // The reload rule (CANN applies an acl model dump only to models loaded after it was set), then
  // the debug scene, then the selection (model, kernels, marked scopes).
  OpPlan decide() const;

  // The execution order (and graphs/ with `source`), dumped or not.
  void record_execution(TensorIdList input_ids, TensorIdList output_ids,
                        const std::string& source = "", const std::vector<std::pair<uint64_t, std::string>>& named = {});
  // The op gets no row after all (at kernel level, its children are the kernels): the names of the tensors it
  // saw first go to tensor_names.csv all the same.
  void name_tensors(const std::vector<std::pair<uint64_t, std::string>>& named);
  // Written beside the op's tensors, or kept for dump() when the dump is one .h5 file (they name its datasets).
  void write_kernel_args(std::string json);
  // Adds where the op's outputs sit in memory (strides, offset) to the kept arguments (.h5 dumps).
  void add_output_layouts(const std::string& json_array);
  // The op's tensors to the writer.
  void dump(const std::vector<DumpTensor>& inputs, const std::vector<DumpTensor>& outputs) {
    sink_->dump_op(record_, inputs, outputs);
  }

 private:
  std::shared_ptr<const RuntimeSnapshot> snapshot_;
  // The dump this op entered (Dumper::try_enter_op; null: not reported): finalize waits until it
  // leaves. Always a Dumper; the framework side sees it as its DumpSink.
  std::shared_ptr<DumpSink> sink_;
  OpRecord record_;
  const Runtime* runtime_ = nullptr;
};

}  // namespace opdump
