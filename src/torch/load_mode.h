// The torch_npu 1.5 dumper's load mode (`torch.utils.dumper(use_load=True, load_file_path=...)` of the
// PyTorch 1.5.0 accuracy comparison guide), doing no harm: while the program runs, each outermost op
// call that matches a call stored in the .h5 file (same operator and overload, the same tensor shapes
// and dtypes and the same other argument values; the first unused seqid of that operator when several
// match, as 1.5 did) is re-run on copies of the stored inputs, on the running op's device, and the
// stored inputs and the new outputs are written under the same /<op>/<seqid>/ of a new .h5 file. The
// program's own tensors, and so its numbers, are never touched (1.5 copied the stored data into them).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace opdump::pt {

struct LoadReport {
  uint64_t stored = 0;    // op calls in the loaded file (that carry their arguments)
  uint64_t matched = 0;   // ...re-run and written
  uint64_t failed = 0;    // ...matched but could not run (the reason is in `problems`)
  std::vector<std::string> unmatched;  // "/<op>/<seqid>" of the stored calls no running op matched
  std::vector<std::string> problems;
  std::string out_file;
};

// Reads the stored calls (through HDF5 in a child process: the file may be hostile) and starts
// matching the ops this process runs. Throws opdump::Error naming the file when it cannot be read,
// holds no op calls, or a load is already running. `out_file` is written whole when the load stops.
// `acl_config` (load_with_acl_dump): an acl.json whose dump, at kernel level, takes the kernels of the
// re-run calls and nothing else (they run as the model "opdump_load"); "" for none.
void start_load(const std::string& load_file, const std::string& out_file, const std::string& acl_config = "");
// Stops matching, writes the new file and says what happened. Throws opdump::Error when no load runs.
LoadReport stop_load();

}  // namespace opdump::pt
