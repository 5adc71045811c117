// The debugging scenes beyond plain dumps (MindSpore's op_debug_mode, torch_npu's overflow check,
// CANN's dump_debug and dump_scene), independent of any framework:
//  - overflow: which tensors hold NaN/Inf (or leave float16's range), the Opdebug record of each
//    overflowing op, and the root cause (the first op whose inputs were finite and outputs not);
//  - exception: what is recorded about an op that failed;
//  - watcher: whether a watched output changed between two points of the run.
#pragma once
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "layout/layout.h"
#include "stats/stats.h"
#include "util/tensor.h"
#include "opdump/api.h"

namespace opdump {

// ---- overflow ------------------------------------------------------------------------------

struct OverflowCheck {
  uint64_t nan_or_inf = 0;   // NaN and ±Inf elements (either part of a complex element)
  uint64_t beyond_fp16 = 0;  // finite elements with |x| > 65504 (float16 itself: |x| >= 65504)
  // An upper bound of |x| over the tensor, known for a real floating tensor found clean (a scan's
  // largest |x|, or the bound an elementwise op's rule gives: range_bound.h); infinite otherwise.
  double max_abs = std::numeric_limits<double>::infinity();
  bool fired(bool fp16_range) const { return nan_or_inf > 0 || (fp16_range && beyond_fp16 > 0); }
  bool clean() const { return nan_or_inf == 0 && beyond_fp16 == 0; }
};

// Floating and complex dtypes can overflow; integers never do.
OPDUMP_ADAPTER_API bool dtype_can_overflow(DType dtype);
// One read-only pass over the tensor (vectorized; no allocation). With a runner, a tensor of
// `split_from_bytes` and up is split into `parts` scanned at once.
OPDUMP_ADAPTER_API OverflowCheck check_overflow(const TensorView& t, ParallelRunner runner = nullptr, unsigned parts = 1,
                             size_t split_from_bytes = size_t(1) << 20);

// One tensor of an overflowing op, as the Opdebug record lists it.
struct OverflowTensor {
  IoKind io = IoKind::Output;
  uint32_t slot = 0;
  DType dtype = DType::Float32;
  Shape shape;
  OverflowCheck check;
  // An input the op wrote in place that was too large to copy before it ran: `check` is from
  // before the op, and no file holds its value.
  bool overwritten_in_place = false;
};

struct OverflowEvent {
  OpIdentity op;
  std::string model_name;
  uint32_t rank = 0;
  uint64_t iteration = 0;
  bool inputs_finite = true;  // every input held only finite values (within range)
  std::vector<OverflowTensor> tensors;  // the op's checked inputs and outputs
  std::string folder;                   // where its files went ("" when not dumped)
  // What the hardware recorded, when a CANN Opdebug record flagged it ("AI Core status 0x4 in
  // Opdebug.Node_OpDebug...."): saturation-mode overflows show in no tensor.
  std::string recorded;
};

// The Opdebug record of the MindSpore Dump guide (Opdebug.Node_OpDebug.{task}.{stream}.{timestamp}.output.0.json).
std::string opdebug_file_name(const OpIdentity& op);
std::string opdebug_json(const OverflowEvent& event, bool fp16_range);

// Overflowing ops of a run in report order; thread-safe. `cap` is overflow_number (0: no cap).
class OverflowTracker {
 public:
  explicit OverflowTracker(uint32_t cap = 0) : cap_(cap) {}
  // Records the op; returns false when the cap was already reached (the op is not dumped but
  // still counts for the root cause).
  bool record(OverflowEvent event);
  // The first op in execution order (iteration, then task id, then rank) whose inputs were finite;
  // when every overflowing op already had overflowing inputs, the first one.
  std::optional<OverflowEvent> root_cause() const;
  std::vector<OverflowEvent> events() const;
  uint64_t total() const;

 private:
  mutable std::mutex mutex_;
  uint32_t cap_;
  uint64_t total_ = 0;
  std::vector<OverflowEvent> events_;      // the first `cap` events
  std::vector<OverflowEvent> late_roots_;  // past the cap: the earliest root candidate, if earlier
};

// The summary written at the end of an overflow dump and printed by `opdump overflow`.
std::string overflow_summary_json(const std::vector<OverflowEvent>& events, const std::optional<OverflowEvent>& root,
                                  bool fp16_range);
// One line: the op and its tensors that overflowed (beyond-float16 counts only with fp16_range).
std::string describe_overflow(const OverflowEvent& event, bool fp16_range);

// Ops whose outputs are uninitialised by design: never reported as overflowing.
const std::vector<std::string>& default_overflow_ignore_ops();

// ---- exception dump --------------------------------------------------------------------------

// What aic_err_norm_dump / aic_err_detail_dump add to the failing op's tensors.
struct ExceptionInfo {
  std::string arguments_json;  // the op's arguments (norm and detail); "" when not known
  std::string cpp_stack;       // detail only
  std::string python_stack;    // detail only, when the op ran from Python
};

// ---- watcher --------------------------------------------------------------------------------

// How two versions of one tensor differ, element by element (bitwise: NaN equals the same NaN).
struct TensorDiff {
  uint64_t changed = 0;
  uint64_t first_changed = 0;  // flat index of the first changed element (when changed > 0)
  double max_abs_diff = 0;     // over changed elements whose values are finite on both sides
};
// Throws opdump::Error when dtype or shape differ.
OPDUMP_ADAPTER_API TensorDiff diff_tensors(const TensorView& before, const TensorView& after);

// One check of a watched output after a layer op ran.
struct WatchResult {
  uint64_t iteration = 0;
  OpIdentity layer_op;    // the op that ran (the possible culprit)
  OpIdentity watched_op;  // the op whose output is watched (the possible victim)
  uint32_t slot = 0;
  TensorDiff diff;
};

}  // namespace opdump
