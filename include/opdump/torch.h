// The PyTorch adapter: an at::RecordFunction observer that reports operator executions to the
// opdump runtime. A C++ program calls install() once, before it dumps (the Python module does so
// at import); dumping starts with init()/set_dump(), or from the environment (OPDUMP_CONFIG or
// MindSpore's MINDSPORE_DUMP_CONFIG) at install().
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <torch/script.h>

#include "opdump/opdump.h"

namespace opdump::pt {

// Installs the observer, then applies the environment (RANK / LOCAL_RANK, and a dump when
// OPDUMP_CONFIG or MINDSPORE_DUMP_CONFIG names a config). Idempotent.
void install();

// A TorchScript model loaded under a name (the CANN aclmdlSetDump reference: configs apply to models loaded after
// set_dump). forward() runs it as that model; its submodules name the ops.
class ScriptModel {
 public:
  ScriptModel(const std::string& path, const std::string& name);
  c10::IValue forward(std::vector<c10::IValue> inputs);
  torch::jit::Module& module() { return module_; }
  const std::string& name() const { return name_; }

 private:
  torch::jit::Module module_;
  std::string name_;
};

// The torch_npu 1.5 dumper (`torch.utils.dumper` of the PyTorch 1.5.0 accuracy comparison guide) for
// libtorch programs; Python's opdump.dumper applies the same rules. Exactly one mode:
//   use_dump        every op's inputs and outputs to an .h5 file
//   check_overflow  only the ops whose outputs overflow (`IR: <op> SeqId: <n> is overflow!`)
//   use_load        stored calls of load_file_path re-run when a running op matches (src/torch/load_mode.h)
struct H5DumperOptions {
  bool use_dump = false, use_load = false, check_overflow = false;
  std::string dump_path;       // a folder (the file gets a YYYYmmdd_HHMMSS.ffffff.h5 name) or a path ending in .h5
  std::string load_file_path;  // use_load: an existing .h5 file, not dump_path
  bool load_with_acl_dump = false;  // use_load: the re-runs' kernels also dumped by ./acl.json (kernel level)
  bool check_fp16_range = false;    // check_overflow: also values beyond float16's range
  uint32_t overflow_number = 0;     // check_overflow: at most this many ops dumped (0: all)
  std::string level = "api";        // which ops: "api" (outermost calls), "kernel" or "all"
};

// What H5DumperOptions resolve to.
struct H5DumpPlan {
  std::string h5_path;      // the file written
  std::string records_path; // opdump's own records beside it ({file}.opdump/): execution order, Opdebug
  std::string config_json;  // the dump config applied (use_dump, check_overflow); "" for use_load
  std::string load_file;    // use_load: the absolute path of the file loaded
  std::string acl_config;   // load_with_acl_dump: ./acl.json, whose dump takes the re-runs' kernels
};
// Checks the guide's rules; std::invalid_argument naming the argument when one is broken.
H5DumpPlan plan_h5_dump(const H5DumperOptions& options);

class H5Dumper {
 public:
  // Starts at once (install() first); std::invalid_argument or opdump::Error when it cannot.
  explicit H5Dumper(const H5DumperOptions& options);
  ~H5Dumper();  // stops, if stop() was not called
  H5Dumper(const H5Dumper&) = delete;
  H5Dumper& operator=(const H5Dumper&) = delete;
  // Ends the dump (its report) or the load (the stored calls matched, re-run, not matched: in
  // `warnings`). Safe to call more than once.
  WriterReport stop();
  const H5DumpPlan& plan() const { return plan_; }

 private:
  H5DumpPlan plan_;
  bool running_ = false;
  bool load_ = false;
  WriterReport report_;
};

}  // namespace opdump::pt
