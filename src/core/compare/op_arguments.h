// The arguments two dumps recorded for the same op (save_kernel_args files beside the tensors):
// which non-tensor arguments differ, for the cause of a first divergence ("eps: 0.01 vs 1e-05").
#pragma once
#include <string>
#include <vector>

#include "read/dump_index.h"

namespace opdump::detail {

// "name: target value vs reference value" for each non-tensor argument whose recorded values differ,
// in the op's argument order. Empty when either side has no args file (or it cannot be read).
std::vector<std::string> differing_arguments(const DumpEntry& target, const DumpEntry& reference);

}  // namespace opdump::detail
