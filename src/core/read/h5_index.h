// The tensors of an `.h5` dump (the torch_npu 1.5 dumper's layout, written by it or by opdump) as
// entries of a dump index: /<op>/<seqid>/{input,output}/<argument>[/<argument>_<i>], tensors numbered
// per side in the order the op has them (creation order; by name in files that did not track it).
// Non-tensor arguments are not entries. opdump's files carry the op's name, task id and iteration
// as attributes, so their entries match those of an npy dump of the same run.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "read/dump_index.h"
#include "opdump/api.h"

namespace opdump {

// Appends the entries of the .h5 file at `path` (`where`: its place in a layout). A corrupt file is
// an opdump::FormatError naming the file and the object; an unreadable dataset an entry that says why.
OPDUMP_ADAPTER_API void index_h5_dump(const std::string& path, const DumpPosition& where, std::vector<DumpEntry>& out);
// The values of an entry index_h5_dump made.
Tensor load_h5_entry(const DumpEntry& e);
// The arguments each op of an opdump-written .h5 recorded (its group's "Arguments" attribute: the
// save_kernel_args JSON), by sanitized op name: what replay runs its ops with.
OPDUMP_ADAPTER_API std::map<std::string, std::string> h5_op_arguments(const std::string& path);

}  // namespace opdump
