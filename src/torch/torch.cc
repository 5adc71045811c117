// The public PyTorch adapter API (opdump/torch.h).
#include "opdump/torch.h"
#include "runtime/runtime_interface.h"

#include "observer.h"

namespace opdump::pt {

void install() {
  detail::install_observer(runtime_interface());
  runtime_interface().activate_from_environment();
}

ScriptModel::ScriptModel(const std::string& path, const std::string& name) : name_(name) {
  install();
  module_ = torch::jit::load(path);
  module_.eval();
  runtime_interface().register_model(name);
}

c10::IValue ScriptModel::forward(std::vector<c10::IValue> inputs) {
  ModelScope scope(name_, module_.type()->name() ? module_.type()->name()->name() : "");
  return module_.forward(std::move(inputs));
}

}  // namespace opdump::pt
