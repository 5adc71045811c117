// One normalized dump configuration read from any of three dialects, detected by shape:
//  - acl.json ({"dump": {...}}; CANN's offline-model dump guide and aclmdlSetDump reference,
//    torch_npu's comparison guide),
//  - MindSpore ({"common_dump_settings": {...}, "e2e_dump_settings": {...}}; the MindSpore Dump guide),
//  - the CANN Data Dump guide's session options ({"enable_dump": true, "dump_path": ..., "dump_step": ...}),
//  - msprobe's config.json ({"task": "statistics", "dump_path": ..., "level": "L1", "statistics": {...}}).
// An "opdump" object at the top level of any dialect holds opdump's own options.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "select/op_kinds.h"
#include "select/iteration_set.h"
#include "stats/stats.h"
#include "opdump/api.h"

namespace opdump {

enum class Dialect { Acl, MindSpore, Session, Msprobe };
enum class IoSelect { Input, Output, All };
enum class SavedData { Tensor, Statistic, Full };
enum class FileFormat { Npy, Bin, H5 };  // H5: opdump.h5_file
enum class Layout { Ascend, MindSporeSync };
enum class Scene { Normal, Overflow, ExceptionBrief, ExceptionNorm, ExceptionDetail, Watcher };
// Modules: no framework op is reported, only the front end's module records (msprobe's L0).
enum class ObserveLevel { Api, Kernel, All, Modules };
enum class StatCalcMode { Host, Device };
// Where statistics and overflow checks of host tensors are computed: on a background thread of
// opdump's (the training does not wait), on the op's own thread as the op ends (split over the
// framework's intra-op threads), or the first when a core is free for it and else the second.
enum class HostWork { Auto, Background, Inline };

std::string_view to_string(Dialect d);
std::string_view to_string(IoSelect s);
std::string_view to_string(SavedData s);
std::string_view to_string(FileFormat f);
std::string_view to_string(Layout l);
std::string_view to_string(Scene s);
std::string_view to_string(ObserveLevel l);
std::string_view to_string(HostWork w);

// acl.json dump_list entry.
struct ModelSelection {
  std::string model_name;  // empty: any model (watcher entries)
  std::vector<std::string> layers;
  std::vector<std::string> watcher_nodes;
};

struct DumpConfig {
  Dialect dialect = Dialect::Acl;
  std::string source;  // file the config came from ("<string>" when parsed from text)
  bool enabled = true;

  // Where: the resolved absolute root, and how it was chosen (e.g. "NPU_COLLECT_PATH").
  std::string dump_path;
  std::string dump_path_origin;
  Layout layout = Layout::Ascend;
  FileFormat file_format = FileFormat::Npy;
  std::string h5_file;  // FileFormat::H5: the resolved path of the .h5 file
  std::string net_name = "Net";  // MindSpore layout's {net_name}

  // What.
  IterationSet iterations = IterationSet::all();
  IoSelect io = IoSelect::Output;
  SavedData saved_data = SavedData::Tensor;
  std::vector<StatCategory> stat_categories = default_stat_categories();
  bool dump_all_ops = true;      // MindSpore dump_mode 0
  bool dump_marked_only = false; // MindSpore dump_mode 2 (set_dump)
  std::vector<std::string> kernels;  // MindSpore dump_mode 1 entries
  std::string kernels_field = "common_dump_settings.kernels";  // where they came from (msprobe: "<task>.list")
  std::vector<ModelSelection> dump_list;
  bool op_switch = false;                 // acl.json dump_op_switch: ops outside models
  std::vector<uint32_t> support_device;   // empty: every device
  std::vector<uint32_t> support_rank;     // msprobe's rank list; empty: every rank
  Scene scene = Scene::Normal;
  uint32_t overflow_number = 0;           // 0: all
  bool trans_flag = true;
  StatCalcMode stat_calc_mode = StatCalcMode::Host;
  bool sample = false;
  uint32_t sample_num = 100;
  // Each dumped op's arguments beside its tensors: on by default in tensor dumps (replay and
  // compare's cross-replay need them), unless the config says otherwise.
  bool save_kernel_args = false;
  bool save_kernel_args_given = false;  // the config set it

  // opdump's own options ("opdump": {...}).
  ObserveLevel level = ObserveLevel::Api;
  // msprobe's levels L0 and mix: the front end reports each module's forward inputs and outputs,
  // and the gradients reaching its outputs, as records of their own ("Module.conv1.Conv2d.forward.0").
  bool module_records = false;
  bool skip_no_compute_ops = true;
  bool check_fp16_range = false;  // overflow also when values leave float16's range
  // Op types whose outputs are uninitialised by design (overflow checks skip them).
  std::vector<std::string> overflow_ignore_ops = op_kinds::overflow_ignored_by_default();
  uint64_t max_inflight_bytes = uint64_t(512) << 20;
  unsigned writer_threads = 0;  // 0: tensor dumps 4 (direct_io) or every core, statistics half the cores
  // "opdump": {"layout": "msprobe"} in msprobe's config: the Python PrecisionDebugger writes msprobe's
  // step{N}/rank{R}/dump.json itself (the dump engine is not used).
  bool msprobe_layout = false;
  bool direct_io = true;        // large tensor files written past the page cache (O_DIRECT)
  HostWork host_work = HostWork::Auto;
  // CPU tensors reduced by the device path's ATen ops instead of the host kernels: checks that path
  // without a GPU (tens of times slower). stat_calc_mode does not choose it: on the CPU the device is the host.
  bool device_path_on_cpu = false;

  std::string original_text;          // the config as given (for .dump_metadata)
  std::vector<std::string> warnings;  // unknown keys and similar

  bool dumps_tensors() const { return saved_data != SavedData::Statistic; }
  bool dumps_statistics() const { return saved_data != SavedData::Tensor; }
  bool dumps_inputs() const { return io != IoSelect::Output; }
  bool dumps_outputs() const { return io != IoSelect::Input; }
  bool device_selected(uint32_t device) const;
  OPDUMP_ADAPTER_API bool rank_selected(uint32_t rank) const;
  // An acl.json model dump (dump_list naming models) applies, as in CANN, only to models
  // registered after it was configured; every other dump and every debug scene sees all models.
  bool model_dump_needs_reload() const;
};

// Environment lookup, injectable for tests; the default reads the process environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
OPDUMP_ADAPTER_API EnvLookup process_env();

struct ParseOptions {
  EnvLookup env = process_env();
  std::string cwd;  // empty: the process's current directory
};

// Throws ConfigError naming the JSON path, the bad value and what is allowed.
OPDUMP_ADAPTER_API DumpConfig parse_config(const std::string& text, const std::string& source = "<string>",
                        const ParseOptions& options = {});
OPDUMP_ADAPTER_API DumpConfig load_config(const std::string& path, const ParseOptions& options = {});

// The normalized config, for `opdump config check`: readable text, or JSON.
OPDUMP_ADAPTER_API std::string describe_config(const DumpConfig& config);
std::string config_to_json(const DumpConfig& config);

}  // namespace opdump
