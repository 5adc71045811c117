// The C++ lifecycle API: thin forwards to the Runtime.
#include "opdump/opdump.h"

#include "config/config.h"
#include "opdump/version.h"
#include "runtime/runtime.h"

namespace opdump {

void init(const std::string& config_path) { Runtime::instance().init(config_path); }
void init_dump() { Runtime::instance().init_dump(); }
void set_dump(const std::string& config_path) { Runtime::instance().set_dump(config_path); }
void set_dump_json(const std::string& json_text, const std::string& source) {
  Runtime::instance().set_dump_config(parse_config(json_text, source));
}
WriterReport finalize_dump() { return Runtime::instance().finalize_dump(); }
void finalize() { Runtime::instance().finalize(); }
void step() { Runtime::instance().step(); }
uint64_t iteration() { return Runtime::instance().iteration(); }
std::string dump_root() {
  auto d = Runtime::instance().dumper();
  return d ? d->run_root() : std::string();
}
std::string version() { return OPDUMP_VERSION; }
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
