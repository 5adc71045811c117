// Whether an op's outputs depend on memory it never wrote. PyTorch's CPU allocator can fill each new
// block with zeros or with a junk pattern that reads as NaN (c10's caffe2_cpu_allocator_do_zero_fill
// and caffe2_cpu_allocator_do_junk_fill, c10/core/CPUAllocator.cpp). An op run under each gives the
// same outputs unless it reads memory it did not write: then the junk shows as NaN where zeros gave
// a number. Within a training run such an op gives whatever its freed memory held, finite or NaN from
// one process to the next: PyTorch 2.6's oneDNN convolution backward does so for grad_input where the
// output channels are not a multiple of its channel block (docs/replay.md).
#pragma once
#include <ATen/ATen.h>

#include <cstdint>

namespace opdump::replay {

// While it lives, every CPU tensor PyTorch allocates starts as zeros, or as NaN junk.
class NewMemoryFill {
 public:
  enum class With { Zeros, Junk };
  explicit NewMemoryFill(With with);
  ~NewMemoryFill();
  NewMemoryFill(const NewMemoryFill&) = delete;
  NewMemoryFill& operator=(const NewMemoryFill&) = delete;

 private:
  bool zeros_, junk_;  // the allocator's settings before
};

// The elements of an output that are finite as the op gave it on zero-filled memory and not finite on
// junk-filled memory: each was computed from memory the op never wrote. 0 for tensors that are not
// floating or complex, or that do not match in shape.
int64_t unwritten_elements(const at::Tensor& on_zeros, const at::Tensor& on_junk);

}  // namespace opdump::replay
