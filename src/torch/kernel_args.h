// An op's arguments as JSON: CANN's save_kernel_args, and the arguments of exception dumps.
#pragma once
#include <ATen/record_function.h>

#include <string>
#include <vector>

namespace opdump::pt::detail {

// `inputs`:
// fn.inputs() in the start callback (it is gone afterwards), or a copy kept from there.
std::string kernel_args_json(const at::RecordFunction& fn, c10::ArrayRef<const c10::IValue> inputs,
                             const std::string& op_name);
// Where each tensor sits in memory ({stride, offset, device_type}): a JSON array.
std::string tensor_layouts_json(const std::vector<at::Tensor>& tensors);

}  // namespace opdump::pt::detail
