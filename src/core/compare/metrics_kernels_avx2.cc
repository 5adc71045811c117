// The comparison kernel compiled with -mavx2 -mfma (x86-64 only; see CMakeLists.txt).
#include "metrics_kernels.h"

namespace opdump::detail::k_avx2 {
#include "metrics_kernels.inc"
}  // namespace opdump::detail::k_avx2
