// One recorded op call re-run through ATen's dispatcher: dumped tensors loaded as ATen tensors, the
// op run on a boxed stack (arguments.h builds it) under the CPU autocast it ran with. Shared by
// `opdump replay` (src/replay/engine.cc) and the .h5 dumper's load mode (src/torch/load_mode.cc).
#pragma once
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <vector>

#include "read/dump_index.h"

namespace opdump::replay {

// A dumped tensor as a CPU tensor of its own dtype (a copy: nothing else holds it).
at::Tensor load_tensor(const DumpEntry& e);

// Runs `op` on `stack` without autograd, under CPU autocast at `autocast` (Undefined: off), and
// returns its tensor results in the order the dump numbers outputs (lists flattened).
std::vector<at::Tensor> run_call(const c10::OperatorHandle& op, std::vector<c10::IValue> stack,
                                 at::ScalarType autocast = at::ScalarType::Undefined);

}  // namespace opdump::replay
