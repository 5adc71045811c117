// Which builds of the vectorized kernels this CPU runs: the AVX2 and AVX-512 ones are compiled only
// where the compiler can target them (OPDUMP_HAVE_AVX2_KERNELS, OPDUMP_HAVE_AVX512_KERNELS) and used
// only where the CPU has those instructions.
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

// AVX-512 with the subsets its kernels are compiled for (F, BW, DQ, VL); GCC's check also asks the OS
// (XGETBV) whether it saves the 512-bit registers.
inline bool cpu_runs_avx512_kernels() {
#if defined(__x86_64__) && defined(OPDUMP_HAVE_AVX512_KERNELS)
  static const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return avx512;
#else
  return false;
#endif
}

}  // namespace opdump
