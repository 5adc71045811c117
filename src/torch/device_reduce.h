// Reductions of a tensor computed with ATen ops on its own device and stream, the one path by
// which statistics and overflow checks of device tensors are made (of host tensors too with
// device_path_on_cpu, which checks this path without a GPU): only a few doubles come back,
// copied asynchronously into pinned memory, and nothing synchronises the training.
#pragma once
#include <ATen/ATen.h>

#include <memory>
#include <vector>

#include "debug_scenes/debug_scenes.h"
#include "dumper/dump_sink.h"
#include "stats/stats.h"
#include "util/tensor.h"

namespace opdump::pt::detail {

// What is reduced, per tensor.
enum class Reduction {
  Statistics,  // 11 doubles: nan, +inf, -inf, <0, >0, ==0, finite sum, finite sum of squares, min, max, finite
  Overflow,    // 2 doubles: NaN/Inf count, finite values beyond float16's range
};
size_t reduction_size(Reduction r);
// The |x| above which a finite value of dtype `type` counts as beyond float16's range, as the host
// check counts it (one constant for the per-tensor and the batched reductions).
double float16_limit(at::ScalarType type);
// Floating or complex, strided: what NaN/Inf can be in.
bool can_overflow(const at::Tensor& t);

// The reductions of several tensors (one block of doubles each, in order) on their way back.
class DeviceReduction {
 public:
  // All tensors on one device (the CPU included: device_path_on_cpu).
  DeviceReduction(Reduction what, const std::vector<at::Tensor>& tensors);
  bool ready() const { return values_->ready(); }
  // Waits for the numbers (an event on the producing stream), then reads block `i`.
  TensorStats statistics(size_t i) const;
  OverflowCheck overflow(size_t i) const;

 private:
  const double* block(size_t i) const;
  Reduction what_;
  std::vector<uint64_t> counts_;  // elements per tensor
  std::shared_ptr<Buffer> values_;
};

// TensorStats from a block of Reduction::Statistics' 11 doubles, of a tensor of `count` elements.
TensorStats statistics_of(const double* block, uint64_t count);

// The statistics of one tensor; get() waits for them (called on a writer thread).
std::shared_ptr<DeferredStats> device_stats(const at::Tensor& t);

}  // namespace opdump::pt::detail
