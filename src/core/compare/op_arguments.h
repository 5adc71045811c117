// The arguments two dumps recorded for the same op (save_kernel_args files beside the tensors):
// which non-tensor arguments differ, for the cause of a first divergence ("eps: 0.01 vs 1e-05").
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "read/dump_index.h"

namespace opdump::detail {

// The save_kernel_args file of an entry's op ({op_type}.{op_name}.{task_id}.json in its folder where its
// name repeats there, else {op_type}.{op_name}.json), parsed;
// null when there is none or it cannot be read.
nlohmann::json read_kernel_args(const DumpEntry& e);

// Whether a dump (a folder) holds the args files of its ops: a quick look, at the args file of the
// first npy file found (a dump of bin files or statistics says no).
bool dump_has_kernel_args(const std::string& dump);

struct ArgumentDifference {
  std::string name;
  std::string text;        // "eps: 0.1 vs 1e-05"
  bool placement = false;  // a dtype, device, layout or memory format: what a stack decides, not the model
};

// Each non-tensor argument whose recorded values differ, in the op's argument order; nullopt when
// either side has no args file (or it cannot be read).
std::optional<std::vector<ArgumentDifference>> differing_arguments(const DumpEntry& target, const DumpEntry& reference);

}  // namespace opdump::detail
