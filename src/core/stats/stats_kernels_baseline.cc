// The statistics kernels for the baseline instruction set of the target.
#include "stats_kernels.h"

namespace opdump::detail::k_baseline {
#include "stats_kernels.inc"
}  // namespace opdump::detail::k_baseline
