// The comparison kernel for the baseline instruction set.
#include "metrics_kernels.h"

namespace opdump::detail::k_baseline {
#include "metrics_kernels.inc"
}  // namespace opdump::detail::k_baseline
