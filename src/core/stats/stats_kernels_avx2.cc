// The statistics kernels compiled with -mavx2 -mfma (x86-64 only; see CMakeLists.txt).
#include "stats_kernels.h"

namespace opdump::detail::k_avx2 {
constexpr int kLanes = 16;  // two AVX2 registers
constexpr int kVecFloats = 8;  // floats in one AVX2 register
#include "stats_kernels.inc"
}  // namespace opdump::detail::k_avx2
