// Which builds of the vectorized kernels this CPU runs: the AVX2 ones are compiled only where the
// compiler can target them (OPDUMP_HAVE_AVX2_KERNELS) and used only where the CPU has AVX2.
#pragma once

namespace opdump {

// Asked once: the answer cannot change while the process runs.
inline bool cpu_runs_avx2_kernels() {
#if defined(__x86_64__) && defined(OPDUMP_HAVE_AVX2_KERNELS)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
#else
  return false;
#endif
}

}  // namespace opdump
