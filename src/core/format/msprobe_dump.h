// msprobe's dump folders (MindStudio Probe, PyTorch and MindSpore): {dump_path}/step{N}/rank{R}/
// (or proc{PID}) with dump.json (every tensor's dtype, shape and statistics, in execution order),
// stack.json (call stacks), construct.json (each API's or module's parent module) and, in tensor
// mode, dump_tensor_data/ (one .pt or .npy per tensor). Format per msprobe's "PyTorch data dump"
// and "MindSpore data dump" documents.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stats/recorded_stats.h"
#include "util/tensor.h"

namespace opdump {

// One tensor of dump.json.
struct MsprobeTensor {
  std::string api;       // "Functional.conv2d.0.forward", "Module.layer1.0.conv1.Conv2d.forward.0"
  std::string api_type;  // normalized as aten names it: "conv2d", "add" (from Tensor.__iadd__)
  std::string prefix;    // "Functional", "Tensor", "Torch", "Module", ...
  std::string module;    // construct.json's parent module as a path: "layer1.0.conv1" ("" when unknown)
  bool backward = false;     // *.backward, *.parameters_grad
  bool input = false;        // input_args / input_kwargs / input (backward); else output
  uint32_t slot = 0;         // tensors of that side counted in order (args, then kwargs)
  std::string argument;      // where it sits in the call: "input.0", "input.3.1", "output.0", "parameters.weight"
  std::optional<DType> dtype;
  std::string dtype_name;    // as written ("torch.float32", "Float32")
  Shape shape;
  std::optional<double> max, min, mean, norm;
  std::string data_name;     // the tensor file in dump_tensor_data/ ("" in statistics mode)
  uint64_t order = 0;        // the API's position in dump.json (execution order)
};

struct MsprobeDump {
  bool recognized = true;  // false: valid JSON without msprobe's "data" object (a config named dump.json)
  std::string task, level, framework;
  std::vector<MsprobeTensor> tensors;
  std::map<std::string, std::string> call_sites;  // API -> "file.py:line" of its innermost user frame
  std::vector<std::string> warnings;
};

// Reads dump.json and, beside it, construct.json and stack.json when present. Throws FormatError
// naming the file and the entry for malformed content; python's NaN/Infinity literals are read.
MsprobeDump read_msprobe_dump(const std::string& dump_json);
// The same from text (fuzzing, tests); construct and stack may be empty.
MsprobeDump parse_msprobe_dump(const std::string& dump_text, const std::string& construct_text,
                               const std::string& stack_text, const std::string& name);

// A tensor file's name as msprobe writes it ("Functional.relu.0.forward.input.0.pt",
// "Module.conv1.Conv2d.forward.0.output.0.npy"): the API, its type, the side and the first index
// of the argument. False for other names.
struct MsprobeFileName {
  std::string api, api_type;
  bool backward = false, input = false;
  uint32_t slot = 0;
};
bool parse_msprobe_file_name(const std::string& file_name, MsprobeFileName* out);

// One forward API call (Functional., Torch., Tensor., ...; not modules) with its Python arguments as
// dump.json records them: what `opdump replay` rebuilds an aten call from. Tensors inside `args`
// and `kwargs` are the entries of `tensors` whose `argument` names their place ("input.0",
// "input.3.1", "input.weight").
struct MsprobeCall {
  std::string api, prefix, api_type;
  nlohmann::json args = nlohmann::json::array();              // input_args
  std::vector<std::pair<std::string, nlohmann::json>> kwargs;  // input_kwargs, in the file's order
  std::vector<const MsprobeTensor*> tensors;                   // this call's tensors, inputs and outputs
};
struct MsprobeCalls {
  MsprobeDump dump;
  std::vector<MsprobeCall> calls;  // pointers into dump.tensors: keep both together (moves keep them)
};
// dump.json read once for both: its tensors and its forward API calls.
MsprobeCalls read_msprobe_calls(const std::string& dump_json);
MsprobeCalls parse_msprobe_calls(const std::string& dump_text, const std::string& name);

// A dtype as msprobe writes it: "torch.float32" (PyTorch, also in torch.dtype arguments),
// "Float32" / "BFloat16" (MindSpore); nullopt for one opdump does not decode (float8).
std::optional<DType> msprobe_dtype(std::string name);

// The module path of an msprobe module record: "Module.layer1.0.conv1.Conv2d.forward.0" -> "layer1.0.conv1"
// (path, class, direction or parameters_grad, call index); "" for other names.
std::string module_path(const std::string& module);

// msprobe's Max, Min, Mean and Norm of a tensor of `dtype`: what torch's reductions give. NaN anywhere
// makes all four NaN; an infinity is the extreme it is; +Inf and -Inf together make the mean NaN; the
// values are float32 (torch reduces in float32 what is not float64), so that two tools summarizing
// the same tensor agree to the bit where their sums round alike. Absent where the statistics cannot tell.
struct MsprobeStatistics {
  std::optional<double> max, min, mean, norm;
};
MsprobeStatistics msprobe_statistics(const RecordedStats& s, DType dtype);

// Tensor.__iadd__ -> add, Functional.cross_entropy -> cross_entropy_loss: the type aten gives the
// op a PyTorch adapter sees for the same call.
std::string msprobe_api_type(const std::string& prefix, const std::string& api);

}  // namespace opdump
