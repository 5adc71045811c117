// An op's recorded arguments (save_kernel_args JSON, torch/kernel_args.cc) turned back into the
// boxed stack its schema takes, with the dumped tensors in their slots.
#pragma once
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "util/tensor.h"

namespace opdump::replay {

// The operator an args file names ("aten::add" and overload "Tensor"); nullopt when this PyTorch
// has none by that name.
c10::optional<c10::OperatorHandle> find_operator(const nlohmann::json& spec);

// The stack for `op` from spec["arguments"], tensors taken from `inputs` by slot. nullopt with
// *why set when an argument cannot be rebuilt (a type the args file does not record, a slot
// missing from the dump).
std::optional<std::vector<c10::IValue>> build_stack(const c10::OperatorHandle& op, const nlohmann::json& spec,
                                                    const std::vector<at::Tensor>& inputs, std::string* why);

// A dtype as the args file names it (c10::toString: "BFloat16"); Undefined for null or unknown names.
at::ScalarType scalar_type_named(const nlohmann::json& name);

// A dump's dtype as ATen's; throws opdump::Error for one PyTorch has no equivalent of.
at::ScalarType aten_dtype(DType d);

// The dtype each tensor slot had when the op ran (spec "dtype"/"dtypes"), by slot number; kUndefined
// where the file does not say (dumps taken before opdump recorded it) or takes no tensor from that
// slot (an msprobe API's tensor argument the aten operator has no place for).
std::vector<at::ScalarType> recorded_dtypes(const nlohmann::json& spec);

// The CPU autocast dtype the args file recorded (Undefined: off, or not recorded).
at::ScalarType autocast_of(const nlohmann::json& spec);

// Whether the op ran on the CPU, as the replay runs it: every device its arguments record (each tensor's
// "device_type", a device argument) is the CPU, and at least one is recorded. False where one is another
// device, or where none is recorded (msprobe's dump.json, args files from before opdump recorded it).
bool ran_on_the_cpu(const nlohmann::json& spec);

}  // namespace opdump::replay
