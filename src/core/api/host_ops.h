// Internal: operators reported with host tensors by a caller that names them itself (the Python
// front end's module records for msprobe's levels L0 and mix). dump_op() (opdump/opdump.h) is the
// same path with names made from the current scope.
#pragma once
#include <string>
#include <vector>

#include "opdump/opdump.h"
#include "opdump/api.h"

namespace opdump {

// Reports one op named `op_name` (e.g. "Module.conv1.Conv2d.forward.0") with `inputs` and `outputs`
// copied before it returns; nothing when no dump is active or the op is not selected.
OPDUMP_ADAPTER_API void dump_named_op(const std::string& op_type, const std::string& op_name, const std::vector<HostTensor>& inputs,
                   const std::vector<HostTensor>& outputs);

}  // namespace opdump
