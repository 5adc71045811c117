// The PyTorch adapter: an at::RecordFunction observer that reports operator executions to the
// opdump runtime. A C++ program calls install() once, before it dumps (the Python module does so
// at import); dumping starts with init()/set_dump(), or from the environment (OPDUMP_CONFIG or
// MindSpore's MINDSPORE_DUMP_CONFIG) at install().
#pragma once
#include <string>
#include <vector>

#include <torch/script.h>

#include "opdump/opdump.h"

namespace opdump::pt {

// Installs the observer, then applies the environment (RANK / LOCAL_RANK, and a dump when
// OPDUMP_CONFIG or MINDSPORE_DUMP_CONFIG names a config). Idempotent.
void install();

// A TorchScript model loaded under a name (the CANN aclmdlSetDump reference: configs apply to models loaded after
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
