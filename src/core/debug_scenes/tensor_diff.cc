// The watcher's comparison of a watched output before and after a layer op.
#include <cmath>
#include <cstring>
#include <vector>

#include "compare/metrics.h"
#include "debug_scenes/debug_scenes.h"
#include "opdump/error.h"

namespace opdump {

TensorDiff diff_tensors(const TensorView& before, const TensorView& after) {
  if (before.dtype != after.dtype || before.shape != after.shape)
    throw Error("cannot diff tensors of different dtype or shape");
  TensorDiff d;
  const size_t width = dtype_size(before.dtype);
  const uint64_t n = before.numel();
  if (!n || !before.data || !after.data) return d;
  const auto* a = static_cast<const unsigned char*>(before.data);
  const auto* b = static_cast<const unsigned char*>(after.data);
  // Equal blocks are skipped with memcmp; only blocks that differ are looked at element-wise.
  constexpr uint64_t kBlock = 4096;
  const size_t parts = dtype_is_complex(before.dtype) ? 2 : 1;
  std::vector<double> va(2 * kBlock), vb(2 * kBlock);
  for (uint64_t start = 0; start < n; start += kBlock) {
    const uint64_t m = std::min(kBlock, n - start);
    if (std::memcmp(a + start * width, b + start * width, m * width) == 0) continue;
    widen_values(before, start * parts, m * parts, va.data());
    widen_values(after, start * parts, m * parts, vb.data());
    for (uint64_t i = 0; i < m; ++i) {
      if (std::memcmp(a + (start + i) * width, b + (start + i) * width, width) == 0) continue;
      if (d.changed++ == 0) d.first_changed = start + i;
      for (size_t p = 0; p < parts; ++p) {
        const double diff = std::fabs(va[i * parts + p] - vb[i * parts + p]);
        if (std::isfinite(diff)) d.max_abs_diff = std::max(d.max_abs_diff, diff);
      }
    }
  }
  return d;
}

}  // namespace opdump
