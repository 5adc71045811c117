// The C++ lifecycle API: thin forwards to the Runtime.
#include "opdump/opdump.h"

namespace opdump {

void init(const std::string& config_path) { Runtime::instance().init(config_path); }
void init_dump() { Runtime::instance().init_dump(); }
void set_dump(const std::string& config_path) { Runtime::instance().set_dump(config_path); }
WriterReport finalize_dump() { return Runtime::instance().finalize_dump(); }
void finalize() { Runtime::instance().finalize(); }
void step() { Runtime::instance().step(); }
uint64_t iteration() { return Runtime::instance().iteration(); }
uint64_t register_model(const std::string& name) { return Runtime::instance().register_model(name); }

ModelScope::ModelScope(const std::string& name, const std::string& class_name) : depth_(scopes::depth()) {
  Runtime::instance().register_model(name);
  scopes::enter_model(name);
  scopes::push(class_name.empty() ? name : name + "-" + class_name, name);
}

ModelScope::~ModelScope() {
  scopes::truncate(depth_);
  scopes::exit_model();
}

}  // namespace opdump
