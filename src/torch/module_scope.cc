// The module scope an op runs in: opdump's module scopes and TorchScript's module hierarchy.
#include "module_scope.h"

#include <torch/csrc/jit/runtime/interpreter.h>

#include "identity/op_names.h"
#include "opdump/scopes.h"

namespace opdump::pt::detail {

const ModuleScope& module_scope_path(LastModuleScope& last) {
  auto hierarchy = torch::jit::currentModuleHierarchy();
  // Without TorchScript's hierarchy the scope is opdump's alone, and its paths tell it apart.
  if (hierarchy.size() <= 1 && !last.scripted && last.scope.path == scopes::path() &&
      last.short_path == scopes::short_path())
    return last.scope;
  std::string path = scopes::path();
  const std::string& short_path = scopes::short_path();
  std::string brief;
  brief.reserve(short_path.size() + path.size());  // one allocation: the last element grows below
  brief = short_path;
  // Where the last element starts in `path` (npos: none), and its short form's length in `brief`.
  size_t last_at = scopes::depth() ? path.rfind('/') + 1 : std::string::npos;
  size_t last_short = scopes::depth() ? brief.size() - brief.rfind('/') - 1 : 0;
  // Entries look like "conv(Conv2d)::forward"; "SELF(...)" is a method of the same module.
  for (size_t i = 1; i < hierarchy.size(); ++i) {  // [0] is the top module: already the model scope
    std::string e = hierarchy[i];
    if (const size_t method = e.find("::"); method != std::string::npos) e.resize(method);
    if (e.rfind("SELF(", 0) == 0) continue;
    auto [element, short_element] = identity::script_scope_element(e);
    path += '/';
    last_at = path.size();
    path += element;
    brief += '/';
    brief += short_element;
    last_short = short_element.size();
  }
  // The op's own module keeps its class in the short form too.
  if (last_at != std::string::npos && last_at < path.size())
    brief.replace(brief.size() - last_short, last_short, path, last_at, std::string::npos);
  last.scripted = hierarchy.size() > 1;
  last.short_path = short_path;
  last.scope.path = std::move(path);
  last.scope.brief = std::move(brief);
  return last.scope;
}

}  // namespace opdump::pt::detail
