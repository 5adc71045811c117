#include "cross_replay.h"

#include "arguments.h"
#include "compare/op_arguments.h"
#include "engine.h"

namespace opdump::replay {

CrossReplay make_cross_replay(CrossReplayCount& count) {
  return [&count](const std::map<uint32_t, const DumpEntry*>& inputs, const std::map<uint32_t, const DumpEntry*>& outputs,
                  const DumpEntry& reference) -> std::optional<CrossCheck> {
    const nlohmann::json spec = detail::read_kernel_args(reference);
    if (!spec.is_object() || !spec.contains("operator") || !spec.contains("arguments")) return std::nullopt;
    const DumpEntry& target = *outputs.begin()->second;
    // The dtypes and autocast the target ran the op with (its own args file); where it has none,
    // the dumped tensors' dtypes without autocast.
    const nlohmann::json own = detail::read_kernel_args(target);
    const bool recorded = own.is_object() && own.contains("arguments");
    ReplayOp op;
    op.rank = target.rank();
    op.iteration = target.iteration();
    op.op_type = target.op_type;
    op.op_name = target.op_name;
    op.inputs = inputs;
    op.outputs = outputs;
    std::vector<at::ScalarType> dtypes = recorded_dtypes(recorded ? own : spec);
    if (!recorded) dtypes.assign(dtypes.size(), at::ScalarType::Undefined);
    std::vector<ReplayRow> rows;
    const OpReplayed replayed = replay_op(op, spec, dtypes, recorded ? autocast_of(own) : at::ScalarType::Undefined,
                                          Standard::builtin(), ReplayRow(), rows, KernelOwner::AnotherStack);
    if (replayed.own_kernel_set_aside) count.own_kernel_set_aside.insert(op.op_type);
    bool judged = false;
    CrossCheck check;
    for (const ReplayRow& row : rows) {
      // An output that rounding its inputs alone moves beyond its dtype's standard is rounding
      // noise (batch_norm over two values per channel): its error is its inputs', not this op's.
      const bool noise = row.judgement.reason.rfind("ill-conditioned", 0) == 0;
      if (row.judgement.result == Result::Skipped && !noise) continue;
      judged = true;
      // Across stacks two correct kernels may round differently, each leaning its own way (PyTorch
      // 2.x's float16 add_ against 1.13's): only errors beyond the norm bounds stray.
      if (row.judgement.result != Result::Error || row.judgement.systematic) continue;
      check.strays = true;
      check.detail += (check.detail.empty() ? "" : "; ") + row.tensor_index + " " + row.judgement.reason + " (" +
                      row.judgement.standard + ")";
    }
    if (!replayed.why_not.empty() || !judged) {
      ++count.could_not;
      return std::nullopt;
    }
    ++count.ran;
    return check;
  };
}

}  // namespace opdump::replay
