// Internal to the PyTorch adapter: tensor capture shared by the observer (observer.cc) and the
// debug scenes (debug_scenes.cc).
#pragma once
#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <memory>
#include <string>
#include <vector>

#include "opdump/dumper.h"

namespace opdump::pt::detail {

bool dtype_of(at::ScalarType s, DType* out);
// A host copy of a tensor; for device tensors an asynchronous copy into pinned memory that
// Buffer::wait_ready() waits for.
std::shared_ptr<Buffer> host_copy(const at::Tensor& t);
// The op's arguments as JSON (seed 001's save_kernel_args; exception dumps). `inputs`:
// fn.inputs() in the start callback (it is gone afterwards), or a copy kept from there.
std::string kernel_args_json(const at::RecordFunction& fn, c10::ArrayRef<const c10::IValue> inputs,
                             const std::string& op_name);
// Every tensor of an op's arguments or results in dump slot order (undefined ones included).
// `Values`: RecordFunction::inputs() or outputs(), whose types differ between versions.
template <typename Values>
std::vector<at::Tensor> tensors_of(const Values& values) {
  std::vector<at::Tensor> out;
  for (const c10::IValue& v : values) {
    if (v.isTensor()) {
      out.push_back(v.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector()) out.push_back(t);
    } else if (v.isList()) {
      for (const c10::IValue& e : v.toListRef())
        if (e.isTensor()) out.push_back(e.toTensor());
    }
  }
  return out;
}
// A host copy as the Dumper takes it; an empty entry for what cannot be dumped.
DumpTensor dump_copy(const at::Tensor& t);
// The stream an op ran on (0 on the CPU).
uint64_t stream_of(const at::Tensor& t);

// Per-op state of the debug scenes.
// RecordFunction::inputs() is valid only in the start callback: what the end needs is kept here.
struct SceneOp {
  int uncaught = 0;  // std::uncaught_exceptions() when the op started
  // Overflow: the input tensors, with copies in place of those the op writes in place (small
  // ones); large written ones are checked before the op instead (`prechecked`, by input slot).
  std::vector<at::Tensor> inputs;
  std::vector<std::pair<size_t, OverflowCheck>> prechecked;
  // Exception dumps: the arguments themselves (references, no data copies).
  std::vector<c10::IValue> arguments;
};

// Overflow, exception and watcher handling for ops of the configured level.
class DebugScenes {
 public:
  static DebugScenes& instance();
  // `written`: tensors the op may modify in place (schema alias annotations).
  void start(const at::RecordFunction& fn, Dumper& dumper, const std::vector<const c10::TensorImpl*>& written,
             SceneOp& op);
  void end(const at::RecordFunction& fn, const std::shared_ptr<Dumper>& dumper, const OpRecord& record, SceneOp& op);
  // The end of an iteration (or of dumping): pending device checks are resolved, watches dropped.
  void iteration_end(Dumper* dumper);
  // The dump is about to close: every host check is done and let go (they hold the Dumper).
  void dump_ending();
};

}  // namespace opdump::pt::detail
