// Reductions of many small tensors in a few ATen launches. Each ATen op costs microseconds of host
// time to dispatch and launch (8.5 us per kernel launch on a lent H200 machine), and the ~30 ops of
// one tensor's statistics made a dumped resnet18 GPU step 94x the plain one. Here the tensors an op
// hands over are copied into staging memory, one cat per dtype (their values as of that moment:
// later in-place writes do not reach them), and a batch of them is reduced together, segment by
// segment (at::segment_reduce), with one copy of the results into pinned memory. The batch is
// reduced by whoever first needs a result: for statistics the writer thread making the rows, so
// the training thread pays one launch per op.
#pragma once
#include <ATen/ATen.h>
#include <c10/core/Stream.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device_reduce.h"

namespace opdump::pt::detail {

class ReductionBatch {
 public:
  ReductionBatch(Reduction what, c10::Stream stream) : what_(what), stream_(stream) {}
  // Seals the batch (it takes no more tensors) and launches its reduction, once; from any thread.
  void reduce();
  bool ready();   // reduced and its results back in host memory
  bool sealed();  // it takes no more tensors
  // Each waits for the batch's results (reducing it first if nobody has).
  TensorStats statistics(size_t member);
  OverflowCheck overflow(size_t member);

 private:
  friend class ReductionBatcher;
  struct Group {  // the members of one dtype: one staging buffer, segment by segment
    at::ScalarType type;
    std::vector<at::Tensor> pieces;  // flat copies, one per staging call
    std::vector<int64_t> lengths;    // elements per member, in segment order
    std::vector<size_t> members;
  };
  struct Place {  // where a member's values are in the results
    size_t offset;  // of its group's block: value f of the group's j-th member at offset + f * size + j
    size_t size;
    size_t j;
  };
  struct Piece {  // an op's tensors of one dtype, flattened into one staging copy
    at::ScalarType type;
    at::Tensor values;
    std::vector<int64_t> lengths;
    std::vector<size_t> tensors;  // their places in the op's list
  };
  // Appends an op's tensors (their member numbers, by place in the op's list, into `members`)
  // unless the batch is sealed or on another stream; `full`: it is sealed now.
  bool add(const std::vector<Piece>& pieces, const c10::Stream& stream, std::vector<size_t>* members, bool* full);
  at::Tensor reduce_group(const Group& g) const;
  void values(size_t member, double* out);  // the member's features, once the results are back

  const Reduction what_;
  const c10::Stream stream_;
  std::mutex mutex_;
  bool sealed_ = false;
  std::vector<Group> groups_;
  std::vector<uint64_t> counts_;  // elements per member
  std::vector<Place> places_;     // per member, once reduced
  uint64_t elements_ = 0;         // staged so far
  std::shared_ptr<Buffer> results_;
  std::atomic<bool> arrived_{false};  // results_ is in host memory
  std::string error_;  // the reduction failed (out of device memory, say): every result asked for throws it
};

// One staged tensor: its batch and its member number there.
struct StagedTensor {
  std::shared_ptr<ReductionBatch> batch;
  size_t member = 0;
  uint64_t bytes = 0;  // the staging memory it holds until its batch is reduced
};

// Stages the tensors of one thread's ops into its open batch. Holds the open batch weakly: once the
// results' users let go (the rows written, the checks reported) nothing of it stays, and no CUDA
// memory or event outlives a finished dump.
class ReductionBatcher {
 public:
  explicit ReductionBatcher(Reduction what) : what_(what) {}
  // Small enough to batch (counts stay exact in float32 sums), strided, real or integral, not empty.
  bool batched(const at::Tensor& t) const;
  // Stages `tensors` (each batched(), all on one device); one place per tensor.
  std::vector<StagedTensor> stage(const std::vector<at::Tensor>& tensors);
  // A batch is sealed once this many elements are staged in it: what its reduction's temporaries
  // take (about 30 bytes per element for statistics) stays bounded.
  static constexpr uint64_t kSealElements = uint64_t(1) << 22;
  static constexpr int64_t kMaxElements = int64_t(1) << 22;

 private:
  const Reduction what_;
  std::weak_ptr<ReductionBatch> open_;
};

// The statistics of a staged tensor, for DumpTensor::deferred_stats.
std::shared_ptr<DeferredStats> batched_stats(StagedTensor staged);

}  // namespace opdump::pt::detail
