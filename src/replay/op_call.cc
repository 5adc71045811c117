#include "op_call.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include "arguments.h"

namespace opdump::replay {
namespace {

// CPU autocast on with `dtype` for a scope (Undefined: off), as the op ran under it.
class CpuAutocast {
 public:
  explicit CpuAutocast(at::ScalarType dtype) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    enabled_ = at::autocast::is_autocast_enabled(at::kCPU);
    dtype_ = at::autocast::get_autocast_dtype(at::kCPU);
    at::autocast::set_autocast_enabled(at::kCPU, dtype != at::ScalarType::Undefined);
    if (dtype != at::ScalarType::Undefined) at::autocast::set_autocast_dtype(at::kCPU, dtype);
#else
    enabled_ = at::autocast::is_cpu_enabled();
    dtype_ = at::autocast::get_autocast_cpu_dtype();
    at::autocast::set_cpu_enabled(dtype != at::ScalarType::Undefined);
    if (dtype != at::ScalarType::Undefined) at::autocast::set_autocast_cpu_dtype(dtype);
#endif
  }
  ~CpuAutocast() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(at::kCPU, enabled_);
    at::autocast::set_autocast_dtype(at::kCPU, dtype_);
#else
    at::autocast::set_cpu_enabled(enabled_);
    at::autocast::set_autocast_cpu_dtype(dtype_);
#endif
    at::autocast::clear_cache();
  }
  CpuAutocast(const CpuAutocast&) = delete;
  CpuAutocast& operator=(const CpuAutocast&) = delete;

 private:
  bool enabled_;
  at::ScalarType dtype_;
};

}  // namespace

at::Tensor load_tensor(const DumpEntry& e) {
  const Tensor t = load_entry(e);
  const std::vector<int64_t> sizes(t.shape.begin(), t.shape.end());
  return at::from_blob(const_cast<void*>(t.data), sizes, at::TensorOptions().dtype(aten_dtype(t.dtype))).clone();
}

std::vector<at::Tensor> run_call(const c10::OperatorHandle& op, std::vector<c10::IValue> stack, at::ScalarType autocast) {
  at::NoGradGuard no_grad;
  CpuAutocast scope(autocast);
  // An in-place op whose schema returns nothing (_foreach_add_): its results are the arguments it
  // writes, in argument order, as the dump numbers them.
  const c10::FunctionSchema& schema = op.schema();
  std::vector<c10::IValue> written;
  if (schema.returns().empty())
    for (size_t i = 0; i < schema.arguments().size() && i < stack.size(); ++i)
      if (const c10::AliasInfo* alias = schema.arguments()[i].alias_info(); alias && alias->isWrite())
        written.push_back(stack[i]);
  op.callBoxed(&stack);
  std::vector<at::Tensor> out;
  for (const c10::IValue& v : schema.returns().empty() ? written : stack) {
    if (v.isTensor()) out.push_back(v.toTensor());
    else if (v.isTensorList())
      for (const at::Tensor& t : v.toTensorVector()) out.push_back(t);
  }
  return out;
}

}  // namespace opdump::replay
