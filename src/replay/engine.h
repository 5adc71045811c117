// opdump replay: every dumped op re-run from its dumped inputs and recorded arguments on the
// CPU, once at the dtypes it ran with and once in float64, and each output judged against the
// float64 run by the precision standard of its dtype (standard.h; docs/replay.md).
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "read/dump_index.h"
#include "standard.h"

namespace opdump::replay {

struct ReplayOptions {
  std::set<uint32_t> ranks;  // empty: every rank
  bool quiet = false;        // no progress on stderr
};

// One output of one op (or one op that was skipped as a whole: TensorIndex empty).
struct ReplayRow {
  uint32_t rank = 0;
  int64_t iteration = -1;
  uint64_t order = 0;  // execution index in the iteration
  std::string op_type, op_name;
  std::string tensor_index;  // "output.0"
  std::string dtype;         // the output's dtype when the op ran
  Judgement judgement;
};

struct ReplayResult {
  std::vector<ReplayRow> rows;  // in execution order
  uint64_t ops = 0, ops_replayed = 0, ops_skipped = 0;
  std::map<std::string, uint64_t> skipped_reasons;
  std::vector<std::string> warnings;
  double seconds = 0;
  const ReplayRow* first_error() const;
};

// One dumped op: its tensors by slot.
struct ReplayOp {
  uint32_t rank = 0;
  int64_t iteration = -1;
  uint64_t order = 0;
  std::string op_type, op_name, folder, key;
  bool msprobe = false;   // an API of msprobe's dump.json: its arguments are there
  std::string h5_file;    // an op of an .h5 dump: its group keeps its arguments
  bool backward = false;  // a gradient computation (msprobe's *.backward APIs)
  std::map<uint32_t, const DumpEntry*> inputs, outputs;
};

// Whose kernel this PyTorch runs when it re-runs an op "as it ran": the dump's own (`opdump replay`, on the
// stack that made the dump), or one beside another stack's dump (compare's cross-replay).
enum class KernelOwner { TheDump, AnotherStack };

struct OpReplayed {
  OpReplayed(std::string why = {}) : why_not(std::move(why)) {}  // (implicit: `return why;` in the engine)
  std::string why_not;  // "" when it ran
  // (AnotherStack) This PyTorch's kernel read memory it never wrote: its run was set aside and the dumped
  // outputs judged against float64 alone. (TheDump: the outputs it read are errors of the op's own.)
  bool own_kernel_set_aside = false;
};

// Re-runs `op` as `spec` (an args file) says, from its dumped inputs at `dtypes` (by slot) and under
// CPU `autocast` (Undefined: off), and in float64; appends one row per dumped output (from `base`)
// judged by `standard`.
OpReplayed replay_op(const ReplayOp& op, const nlohmann::json& spec, const std::vector<at::ScalarType>& dtypes,
                     at::ScalarType autocast, const Standard& standard, const ReplayRow& base,
                     std::vector<ReplayRow>& rows, KernelOwner owner);

// Throws opdump::Error for a path that is not a dump, or a dump without tensors.
ReplayResult replay_dump(const std::string& dump, const ReplayOptions& options);

}  // namespace opdump::replay
