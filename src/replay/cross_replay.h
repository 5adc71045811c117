// Cross-replay for opdump compare (compare.h, CrossReplay): the reference side's op re-run with its
// recorded arguments on the target's dumped inputs, in float64, and the target's outputs judged
// against it by the replay's precision standard (docs/compare.md, "Across stacks").
#pragma once
#include <set>
#include <string>

#include "compare/compare.h"

namespace opdump::replay {

// Counts how many ops it re-ran, for the compare's notes.
struct CrossReplayCount {
  size_t ran = 0, could_not = 0;
  // Op types whose kernel in this PyTorch read memory it never wrote: judged against float64 alone.
  std::set<std::string> own_kernel_set_aside;
};

// The callback compare_dumps takes; `count` (outliving it) is updated as it runs.
CrossReplay make_cross_replay(CrossReplayCount& count);

}  // namespace opdump::replay
