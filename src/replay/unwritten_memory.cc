#include "unwritten_memory.h"

#include <c10/util/Flags.h>

// Defined in c10 (CPUAllocator.cpp) in every PyTorch this builds against; gflags or c10's own flags.
C10_DECLARE_bool(caffe2_cpu_allocator_do_zero_fill);
C10_DECLARE_bool(caffe2_cpu_allocator_do_junk_fill);

namespace opdump::replay {

NewMemoryFill::NewMemoryFill(With with)
    : zeros_(FLAGS_caffe2_cpu_allocator_do_zero_fill), junk_(FLAGS_caffe2_cpu_allocator_do_junk_fill) {
  // (c10 refuses both at once)
  FLAGS_caffe2_cpu_allocator_do_zero_fill = with == With::Zeros;
  FLAGS_caffe2_cpu_allocator_do_junk_fill = with == With::Junk;
}

NewMemoryFill::~NewMemoryFill() {
  FLAGS_caffe2_cpu_allocator_do_zero_fill = zeros_;
  FLAGS_caffe2_cpu_allocator_do_junk_fill = junk_;
}

int64_t unwritten_elements(const at::Tensor& on_zeros, const at::Tensor& on_junk) {
  if (!on_zeros.defined() || !on_junk.defined() || on_zeros.sizes() != on_junk.sizes()) return 0;
  const at::ScalarType type = on_zeros.scalar_type();
  if (!(at::isFloatingType(type) || at::isComplexType(type)) || on_junk.scalar_type() != type) return 0;
  return at::logical_and(at::isfinite(on_zeros), at::logical_not(at::isfinite(on_junk))).sum().item<int64_t>();
}

}  // namespace opdump::replay
