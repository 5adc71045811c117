// The PyTorch adapter: an at::RecordFunction observer that reports operator executions to the
// opdump runtime. Loading libopdump_torch installs it; dumping starts with set_dump() (or the
// OPDUMP_CONFIG / MINDSPORE_DUMP_CONFIG environment variable at load time).
#pragma once
#include <string>
#include <vector>

#include <torch/script.h>

#include "opdump/opdump.h"

namespace opdump::pt {

// Installs the observer (idempotent; done when the library loads).
void install();

// A TorchScript model loaded under a name (seed 004: configs apply to models loaded after
// set_dump). forward() runs it as that model; its submodules name the ops.
class ScriptModel {
 public:
  ScriptModel(const std::string& path, const std::string& name);
  c10::IValue forward(std::vector<c10::IValue> inputs);
  torch::jit::Module& module() { return module_; }
  const std::string& name() const { return name_; }

 private:
  torch::jit::Module module_;
  std::string name_;
};

}  // namespace opdump::pt
