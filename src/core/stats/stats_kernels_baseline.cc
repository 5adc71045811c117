// The statistics kernels for the baseline instruction set of the target.
#include "stats_kernels.h"

namespace opdump::detail::k_baseline {
constexpr int kLanes = 8;  // two SSE registers
constexpr int kVecFloats = 4;  // floats in one SSE or NEON register
#include "stats_kernels.inc"
}  // namespace opdump::detail::k_baseline
