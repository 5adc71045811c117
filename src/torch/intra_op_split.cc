// Compiled with OpenMP where torch runs its intra-op threads with OpenMP (CMakeLists.txt):
// at::parallel_for is then a `#pragma omp parallel` in ATen's headers, which a file compiled
// without OpenMP runs on the calling thread alone.
#include "intra_op_split.h"

#include <ATen/Parallel.h>

#include <dlfcn.h>

#include <functional>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "util/own_thread.h"

namespace opdump::pt::detail {

namespace {
void run_on_intra_op_threads(std::vector<std::function<void()>>& jobs) {
  at::parallel_for(0, static_cast<int64_t>(jobs.size()), 1, [&jobs](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) jobs[static_cast<size_t>(i)]();
  });
}

#ifdef _OPENMP
// The OpenMP runtime this file calls is the one libtorch_cpu calls: a PyTorch wheel carries its
// own renamed libgomp, and a parallel region in another runtime would start threads of its own
// beside torch's.
bool same_openmp_runtime_as_torch() {
  Dl_info torch_lib{};
  if (!dladdr(reinterpret_cast<void*>(&at::get_num_threads), &torch_lib) || !torch_lib.dli_fname) return false;
  void* handle = dlopen(torch_lib.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) return false;
  void* torchs = dlsym(handle, "omp_get_max_threads");  // searched in libtorch_cpu and what it loads
  dlclose(handle);
  return torchs && torchs == reinterpret_cast<void*>(&omp_get_max_threads);
}
#endif
}  // namespace

bool intra_op_threads_reachable() {
#if AT_PARALLEL_OPENMP
#ifdef _OPENMP
  static const bool same = same_openmp_runtime_as_torch();
  return same;
#else
  return false;
#endif
#else
  return true;  // the native backends run parallel_for in libtorch's own compiled code
#endif
}

IntraOpSplit intra_op_split() {
  // Only a training thread hands work to torch's intra-op threads: from one of opdump's own it would
  // start a second OpenMP team (util/own_thread.h).
  if (on_own_thread() || at::in_parallel_region()) return {};
  const int threads = at::get_num_threads();
  if (threads <= 1 || !intra_op_threads_reachable()) return {};
  return {&run_on_intra_op_threads, static_cast<unsigned>(threads)};
}

}  // namespace opdump::pt::detail
