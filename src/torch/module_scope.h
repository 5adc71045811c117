// The module scope an op runs in, as its name embeds it (identity/op_names.h).
#pragma once
#include <string>
#include <utility>

namespace opdump::pt::detail {

// The scope of the modules entered (opdump/scopes.h), extended by TorchScript's module hierarchy
// when a scripted model runs. first: the full path; second: the form backward names embed,
// containers by attribute alone and the op's own module with its class
// ("Default/net/layer1/0/conv1-Conv2d"), so that filters on a module's name still select its
// backward ops while deep models stay under the file-name limit.
struct ModuleScope {
  std::string path, brief;
};
// The last scope a thread asked for: the ops of one module ask for the same one, which would be
// two strings made per op.
struct LastModuleScope {
  ModuleScope scope;
  std::string short_path;  // opdump's short path it was made from
  bool scripted = true;    // it has TorchScript's hierarchy in it
};
// The calling thread's, `last` its LastModuleScope (valid until the next call with it).
const ModuleScope& module_scope_path(LastModuleScope& last);

}  // namespace opdump::pt::detail
