// A faulty kernel for the replay's tests, loaded into `opdump_replay` with LD_PRELOAD: aten::sigmoid on the
// CPU that, for float32, adds zero times a tensor it allocated and never wrote. Its result is right wherever
// that memory holds finite values and NaN where it holds NaN: a kernel that reads memory it never wrote, as
// Debian's PyTorch 2.6 convolution backward does (docs/replay.md), but on every machine and every version.
#include <ATen/ATen.h>
#include <torch/library.h>

namespace {

at::Tensor sigmoid_reading_unwritten(const at::Tensor& self) {
  at::Tensor out = at::reciprocal(at::exp(at::neg(self)) + 1);  // (at::sigmoid would dispatch back here)
  if (self.scalar_type() == at::kFloat) out = out + at::empty_like(self) * 0;
  return out;
}

TORCH_LIBRARY_IMPL(aten, CPU, m) { m.impl("sigmoid", sigmoid_reading_unwritten); }

}  // namespace
