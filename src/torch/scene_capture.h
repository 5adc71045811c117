// Overflow, exception and watcher capture for PyTorch ops (the scenes themselves, framework-free,
// are in src/core/debug_scenes/).
#pragma once
#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <exception>
#include <memory>
#include <vector>

#include "debug_scenes/debug_scenes.h"
#include "known_checks.h"
#include "dumper/dump_sink.h"
#include "op_traits.h"
#include "runtime/runtime_interface.h"

namespace opdump::pt::detail {

class PendingWork;

// Per-op state of the debug scenes.
// RecordFunction::inputs() is valid only in the start callback: what the end needs is kept here.
struct SceneOp {
  int uncaught = 0;  // std::uncaught_exceptions() when the op started
  // Overflow: the input tensors, with copies in place of those the op writes in place (small
  // ones); large written ones are checked before the op instead (`prechecked`, by input slot).
  std::vector<at::Tensor> inputs;
  std::vector<std::pair<size_t, OverflowCheck>> prechecked;
  BoundedOp bounded;  // ops with a bound rule
  ProductSumOp product_sum;  // convolutions, matrix products and their gradients
  // Exception dumps: the arguments themselves (references, no data copies).
  std::vector<c10::IValue> arguments;
};

// Overflow, exception and watcher handling for ops of the configured level. The observer owns
// one; what it keeps between ops (device checks on their way back, host checks not yet done,
// watched outputs, the checks of tensors as they are now) lives in it.
class DebugScenes {
 public:
  // `runtime`: the Python stack of exception dumps; `barrier`: where host overflow checks wait.
  DebugScenes(const RuntimeInterface& runtime, PendingWork& barrier);
  ~DebugScenes();
  DebugScenes(const DebugScenes&) = delete;
  DebugScenes& operator=(const DebugScenes&) = delete;
  // `inputs` / `outputs`: the op's tensors (tensors_of its arguments / results), the scene's to
  // keep; `written`: tensors the op may modify in place (schema alias annotations); `traits`: its
  // operator's (type, bound rules).
  void start(const at::RecordFunction& fn, const OpTraits& traits, DumpSink& dumper, std::vector<at::Tensor> inputs,
             c10::ArrayRef<const c10::TensorImpl*> written, SceneOp& op);
  void end(const at::RecordFunction& fn, const std::shared_ptr<DumpSink>& dumper, const OpRecord& record,
           std::vector<at::Tensor> outputs, SceneOp& op);
  // An op (any op, of the dump's level or not) wrote these storages: what is known of tensors
  // in them is stale, even through an alias whose version counter did not move (`.data`).
  void written(c10::ArrayRef<const c10::StorageImpl*> storages);
  // An op filled a tensor with one value (zero_, fill_: no op of the dump's level, they compute
  // nothing): its bound is that value's magnitude.
  void filled(const at::RecordFunction& fn, const OpTraits& traits);
  // Dumping paused: tensors may now change unobserved; what is known of them is dropped.
  void paused();
  // The end of an iteration (or of dumping): pending device checks are reported (to the dump each
  // belongs to), watches dropped.
  void iteration_end();
  // The dump is about to close: every host check is done and let go (they hold the Dumper).
  void dump_ending();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace opdump::pt::detail
