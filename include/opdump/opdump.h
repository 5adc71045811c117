// The public C++ API, independent of any framework (the CANN aclmdlSetDump reference's lifecycle plus iterations,
// models and scopes). Link opdump::torch as well to dump PyTorch operators; any other runtime reports its
// operators with dump_op().
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "opdump/api.h"
#include "opdump/error.h"
#include "opdump/report.h"
#include "opdump/scopes.h"
#include "opdump/version.h"

namespace opdump {

// init(config path or "") once per process; init_dump / set_dump / finalize_dump as in the CANN aclmdlSetDump reference.
OPDUMP_API void init(const std::string& config_path = "");
OPDUMP_API void init_dump();
OPDUMP_API void set_dump(const std::string& config_path);
// The same with the config's JSON text; `source` names it in error messages.
OPDUMP_API void set_dump_json(const std::string& json_text, const std::string& source = "<json>");
OPDUMP_API WriterReport finalize_dump();
OPDUMP_API void finalize();

// Ends the current iteration (training step); inference programs may call it per request.
OPDUMP_API void step();
OPDUMP_API uint64_t iteration();

// The folder this process dumps into ("" when no dump is configured).
OPDUMP_API std::string dump_root();
// The library's version ("0.1.0"); OPDUMP_VERSION in opdump/version.h is the headers'.
OPDUMP_API std::string version();

// One tensor of an operator reported by dump_op: contiguous host memory, copied before dump_op returns.
struct HostTensor {
  std::string dtype;           // numpy name: "float32", "float16", "bfloat16", "int64", "bool", ...
  std::vector<int64_t> shape;  // {} for a scalar
  const void* data = nullptr;
};

// Reports an operator that ran (for runtimes without an adapter): named like PyTorch ops,
// "{scope}/{op_type}-op{n}" under the current ModelScope/ScopeGuard scopes, and dumped as the config
// selects (iterations, dump_list, kernels, inputs/outputs, tensors/statistics). Debug scenes (overflow,
// exception, watcher) need an adapter and ignore these ops. Does nothing when no dump is active.
OPDUMP_API void dump_op(const std::string& op_type, const std::vector<HostTensor>& inputs,
             const std::vector<HostTensor>& outputs);

// Registers a model name for dump_list selection; returns its model id.
OPDUMP_API uint64_t register_model(const std::string& name);

// Runs the enclosed code as model `name`: ops get the model's folder and "name-Class" scope.
class OPDUMP_API ModelScope {
 public:
  explicit ModelScope(const std::string& name, const std::string& class_name = "");
  ~ModelScope();
  ModelScope(const ModelScope&) = delete;
  ModelScope& operator=(const ModelScope&) = delete;

 private:
  size_t depth_;
};

// Adds one scope element ("conv1-Conv2d") to op names for the enclosed code; `short_element`
// ("conv1") stands for it in the names of backward ops.
class ScopeGuard {
 public:
  explicit ScopeGuard(const std::string& element, const std::string& short_element = "") {
    scopes::push(element, short_element);
  }
  ~ScopeGuard() { scopes::pop(); }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;
};

}  // namespace opdump
