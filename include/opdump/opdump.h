// The public C++ API, independent of any framework (the CANN aclmdlSetDump reference's lifecycle plus iterations,
// models and scopes). Link opdump_torch as well to dump PyTorch operators.
#pragma once
#include <cstdint>
#include <string>

#include "opdump/runtime.h"

namespace opdump {

// init(config path or "") once per process; init_dump / set_dump / finalize_dump as in the CANN aclmdlSetDump reference.
void init(const std::string& config_path = "");
void init_dump();
void set_dump(const std::string& config_path);
WriterReport finalize_dump();
void finalize();

// Ends the current iteration (training step); inference programs may call it per request.
void step();
uint64_t iteration();

// Registers a model name for dump_list selection; returns its model id.
uint64_t register_model(const std::string& name);

// Runs the enclosed code as model `name`: ops get the model's folder and "name-Class" scope.
class ModelScope {
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
