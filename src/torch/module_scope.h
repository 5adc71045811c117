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
std::pair<std::string, std::string> module_scope_path();

}  // namespace opdump::pt::detail
