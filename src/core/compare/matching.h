// Internal to compare: which tensor of the target goes with which tensor of the reference.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compare/compare.h"

namespace opdump::detail {

struct Pairing {
  std::vector<int64_t> target_to_reference;  // -1: no partner
  std::vector<int64_t> reference_to_target;
  std::vector<bool> aligned;                 // target entries paired by execution order and op type
  std::vector<std::string> notes;            // ranks or iterations paired although they differ
};

// By rank, iteration, folder, op name (after the mapping rules), io, slot and occurrence; then the
// ops left over on both sides, per rank and iteration, by the longest common subsequence of their
// op types. When each side holds one rank (or one iteration) and they differ, those are paired.
Pairing pair_entries(const DumpIndex& target, const DumpIndex& reference, const CompareOptions& options);

}  // namespace opdump::detail
