// How a training thread splits a large tensor's pass over the framework's intra-op threads.
#pragma once

#include <cstddef>

#include "stats/stats.h"

namespace opdump::pt::detail {

// How the calling thread may split a large tensor's pass: over torch's intra-op threads, which
// are started and waiting between ops (a split costs microseconds). Nothing to split with on opdump's
// own threads (a writer or the statistics thread: those threads serve the training threads, and a
// parallel region entered there starts a team of its own), inside a parallel region, or where this
// library's OpenMP runtime is not the one torch runs its threads with.
struct IntraOpSplit {
  static constexpr size_t kFromBytes = size_t(1) << 20;
  ParallelRunner runner = nullptr;
  unsigned parts = 1;
  // `options` with this split for its large tensors (unchanged where there is none).
  StatsOptions applied_to(StatsOptions options) const {
    if (runner) {
      options.threads = parts;
      options.runner = runner;
      options.parallel_threshold_bytes = kFromBytes;
    }
    return options;
  }
};
IntraOpSplit intra_op_split();

// Whether at::parallel_for, as compiled into this library, reaches torch's intra-op threads: with
// torch's OpenMP backend it is inline code, and a file compiled without OpenMP runs it serially.
bool intra_op_threads_reachable();

}  // namespace opdump::pt::detail
