// The statistics kernels compiled for AVX-512 (F, BW, DQ, VL; x86-64 only; see CMakeLists.txt): the
// loops of the AVX2 build with lanes twice as wide, half the instructions per byte. bench/bench_core
// times every build this CPU runs on the same buffer.
#include "stats_kernels.h"

namespace opdump::detail::k_avx512 {
constexpr int kLanes = 32;  // two AVX-512 registers
#include "stats_kernels.inc"
}  // namespace opdump::detail::k_avx512
