#include "engine.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <tuple>
#include <unordered_set>

#include "arguments.h"
#include "float64_reference.h"
#include "op_call.h"
#include "unwritten_memory.h"
#include "format/dump_files.h"
#include "format/placeholders_csv.h"
#include "msprobe_arguments.h"
#include "layout/layout.h"
#include "opdump/error.h"
#include "read/dump_index.h"
#include "select/op_kinds.h"
#include "read/h5_index.h"
#include "util/file_read.h"
#include "util/progress.h"

namespace opdump::replay {
namespace {

using json = nlohmann::json;

at::Tensor high_precision(const at::Tensor& t) {
  if (!t.defined()) return t;
  // Always a copy: in-place ops write their inputs, and each run starts from the dumped values.
  if (at::isComplexType(t.scalar_type())) return t.to(at::kComplexDouble, /*non_blocking=*/false, /*copy=*/true);
  return at::isFloatingType(t.scalar_type()) ? t.to(at::kDouble, /*non_blocking=*/false, /*copy=*/true) : t.clone();
}

// A float64 run's stack with an out= buffer, which is float64 there, and a `dtype` argument naming
// a float type (`sum(x, dim, dtype=torch.float32, out=...)`, what `mean` calls at kernel level): the
// `dtype` becomes float64 too, or the kernel refuses the buffer.
std::vector<c10::IValue> widened_dtype(const c10::OperatorHandle& op, std::vector<c10::IValue> stack) {
  const auto& args = op.schema().arguments();
  const bool out = std::any_of(args.begin(), args.end(), [](const c10::Argument& a) {
    return a.kwarg_only() && a.alias_info() && a.alias_info()->isWrite();
  });
  if (!out) return stack;
  for (size_t i = 0; i < args.size() && i < stack.size(); ++i)
    if (args[i].name() == "dtype" && stack[i].isInt() &&
        at::isFloatingType(static_cast<at::ScalarType>(stack[i].toInt())))
      stack[i] = c10::IValue(static_cast<int64_t>(at::kDouble));
  return stack;
}

// The op's float64 run: its own kernel, or, where it has no float64 one, the same computation
// written with ops that have (float64_reference.h).
std::vector<at::Tensor> run_in_float64(const c10::OperatorHandle& op, std::vector<c10::IValue> stack) {
  if (auto composite = float64_composite(op, stack)) return std::move(*composite);
  return run_call(op, widened_dtype(op, std::move(stack)));
}

// Whether two runs' results are the same, bit for bit (undefined where both are).
bool same_results(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].defined() != b[i].defined()) return false;
    if (a[i].defined() && (a[i].scalar_type() != b[i].scalar_type() || !a[i].equal(b[i]))) return false;
  }
  return true;
}

// A number rounded to a float dtype and back.
double rounded_to(double v, at::ScalarType dtype) {
  return dtype == at::kHalf ? static_cast<double>(static_cast<float>(c10::Half(static_cast<float>(v))))
                            : static_cast<double>(static_cast<float>(c10::BFloat16(static_cast<float>(v))));
}

// The op in float64 on its inputs as a float16 or bfloat16 kernel saw them, where that is not the
// dumped inputs themselves (undefined otherwise, or where no view below reproduces the run):
// - under such an autocast, its wider float inputs cast down (a convolution's float32 weight: the
//   weight's own rounding is no error of the kernel, yet it leans each output channel one way);
// - its scalar arguments and wrapped numbers rounded to the output's dtype (PyTorch 2.x's float16
//   add_ rounds alpha = 0.01 to 0.010002; 1.13's bfloat16 mul rounds 1.002 to 1).
// A view counts only where the op at its dtypes gives, on inputs so prepared, what it gave as it ran
// (batch_norm with a bfloat16 input and float32 weights is let through by autocast and does not).
std::vector<at::Tensor> as_seen(const c10::OperatorHandle& handle, const nlohmann::json& spec,
                                const std::vector<at::Tensor>& inputs, at::ScalarType autocast,
                                const std::vector<at::Tensor>& as_ran) {
  at::ScalarType low = at::ScalarType::Undefined;
  for (const auto& t : as_ran)
    if (t.defined() && (t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16)) low = t.scalar_type();
  if (low == at::ScalarType::Undefined) return {};
  const bool casts = autocast == at::kBFloat16 || autocast == at::kHalf;
  for (const auto& [cast, round] : {std::pair{true, true}, {true, false}, {false, true}}) {
    if (cast && !casts) continue;
    bool changed = false;
    std::vector<at::Tensor> prepared;
    for (const auto& t : inputs) {
      at::Tensor p = t.defined() ? t.clone() : t;
      if (cast && p.defined() && at::isFloatingType(p.scalar_type()) && p.dim() > 0 &&
          rounding_step(p.scalar_type()) < rounding_step(autocast)) {
        p = p.to(autocast);
        changed = true;
      } else if (round && p.defined() && p.dim() == 0 && p.scalar_type() == at::kDouble) {
        p = at::scalar_tensor(rounded_to(p.item<double>(), low), p.options());  // a wrapped Python number
        changed = true;
      }
      prepared.push_back(std::move(p));
    }
    // The stack for these tensors, its scalars rounded too; nullopt where it cannot be built.
    auto stack_of = [&](const std::vector<at::Tensor>& tensors) {
      std::string why;
      auto stack = build_stack(handle, spec, tensors, &why);
      if (stack && round)
        for (c10::IValue& v : *stack)
          if (v.isDouble() && rounded_to(v.toDouble(), low) != v.toDouble()) {
            v = c10::IValue(rounded_to(v.toDouble(), low));
            changed = true;
          }
      return stack;
    };
    auto stack = stack_of(prepared);
    if (!stack) return {};
    if (!changed) continue;
    std::vector<at::Tensor> wide;  // before the run below: an in-place op writes `prepared`
    for (const auto& t : prepared) wide.push_back(high_precision(t));
    if (!same_results(run_call(handle, std::move(*stack), cast ? at::ScalarType::Undefined : autocast), as_ran)) continue;
    auto wide_stack = stack_of(wide);
    if (!wide_stack) return {};
    return run_in_float64(handle, std::move(*wide_stack));
  }
  return {};
}

// The op run under `autocast` on copies of `inputs` (an in-place op writes them); nullopt with *why
// set where its stack cannot be built.
std::optional<std::vector<at::Tensor>> run_on_copies(const c10::OperatorHandle& handle, const json& spec,
                                                     const std::vector<at::Tensor>& inputs, at::ScalarType autocast,
                                                     std::string* why) {
  std::vector<at::Tensor> copies;
  copies.reserve(inputs.size());
  for (const auto& t : inputs) copies.push_back(t.defined() ? t.clone() : t);
  auto stack = build_stack(handle, spec, copies, why);
  if (!stack) return std::nullopt;
  return run_call(handle, std::move(*stack), autocast);
}

// A float64 copy of an input moved by up to one rounding `u` (seeded: the same every run); other
// inputs as they are.
at::Tensor rounding_moved(const at::Tensor& wide, double u) {
  if (!wide.defined() || !at::isFloatingType(wide.scalar_type())) return wide;
  static at::Generator generator = [] {
    auto g = at::detail::createCPUGenerator(20261124);
    return g;
  }();
  const at::Tensor noise = at::rand(wide.sizes(), generator, at::TensorOptions().dtype(at::kDouble));
  return wide * (1 + u * (2 * noise - 1));
}

// A dropout whose arguments leave nothing to chance (p = 0, or train = false): it returns its input,
// as a transformer layer built with dropout=0.0 calls it, and is replayed like any other op.
bool draws_nothing(const json& spec) {
  static const std::unordered_set<std::string> by_p = {"aten::dropout", "aten::dropout_", "aten::native_dropout",
                                                       "aten::feature_dropout", "aten::feature_dropout_",
                                                       "aten::alpha_dropout", "aten::alpha_dropout_",
                                                       "aten::feature_alpha_dropout", "aten::feature_alpha_dropout_"};
  if (!by_p.count(spec.value("operator", std::string())) || !spec.contains("arguments") || !spec["arguments"].is_array())
    return false;
  for (const auto& a : spec["arguments"]) {
    if (!a.is_object() || !a.contains("value")) continue;
    const auto& name = a.value("name", std::string());
    if (name == "p" && a["value"].is_number() && a["value"].get<double>() == 0) return true;
    if (name == "train" && a["value"].is_boolean() && !a["value"].get<bool>()) return true;
  }
  return false;
}

// The key of an op's own args file where its name repeats in its folder (task_key), beside the
// plain key of the name's first op. ('\t' is in no sanitized name.)
std::string task_key(const std::string& key, uint64_t task) { return key + '\t' + std::to_string(task); }

// The save_kernel_args files of a folder, by sanitized op name (the file of the name's first op) and by
// task_key (every file recording its task id). `unreadable` counts the files that did not parse
// across folders (the first three are named in `warnings`).
std::map<std::string, json> kernel_args_of(const std::string& folder, std::vector<std::string>& warnings,
                                           size_t& unreadable) {
  std::map<std::string, json> out;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(folder, ec)) {
    const std::string name = f.path().filename().string();
    if (name.size() < 6 || name.compare(name.size() - 5, 5, ".json") != 0) continue;
    if (name.find(".exception.json") != std::string::npos || name == "dump.json" || !f.is_regular_file(ec)) continue;
    try {
      json spec = json::parse(read_text_file(f.path().string(), uint64_t(64) << 20));
      if (spec.is_object() && spec.contains("op_name") && spec["op_name"].is_string() && spec.contains("operator") &&
          spec.contains("arguments")) {
        const std::string key = sanitize_name(spec["op_name"].get<std::string>());
        const bool plain = name.size() >= key.size() + 5 && name.compare(name.size() - key.size() - 5, key.size(), key) == 0;
        if (spec.contains("task_id") && spec["task_id"].is_number_unsigned()) {
          const std::string own = task_key(key, spec["task_id"].get<uint64_t>());
          if (plain) out[key] = spec;
          out[own] = std::move(spec);
        } else {
          out[key] = std::move(spec);  // a dump from before args files recorded their task
        }
      }
    } catch (const std::exception& e) {
      if (++unreadable <= 3) warnings.push_back(f.path().string() + ": " + e.what() + " (its op is not replayed)");
    }
  }
  return out;
}

class Replayer {
 public:
  Replayer(ReplayResult& result, const Standard& standard) : result_(result), standard_(standard) {}

  void op(const ReplayOp& op, const json* spec) {
    ++result_.ops;
    ReplayRow base;
    base.rank = op.rank;
    base.iteration = op.iteration;
    base.order = op.order;
    base.op_type = op.op_type;
    base.op_name = op.op_name;
    std::string why;
    if (!spec && op.msprobe && op.backward)
      why = "an msprobe backward API: dump.json holds its gradients, not the inputs the forward saved";
    else if (!spec && op.msprobe) why = "no arguments recorded: msprobe tensor files without their dump.json";
    else if (!spec) why = "no arguments recorded (dump with save_kernel_args)";
    else if (spec->contains("unreplayable")) why = "not one aten call: " + (*spec)["unreplayable"].get<std::string>();
    else if (op_kinds::draws_random(op.op_type) && !draws_nothing(*spec)) why = "its result is drawn from the random number generator";
    else if (op.outputs.empty()) why = "no output dumped";
    if (why.empty()) {
      // The replay runs CPU kernels: they are the dump's own only where the op ran on the CPU.
      const bool on_cpu = ran_on_the_cpu(*spec);
      const OpReplayed replayed = replay_op(op, *spec, recorded_dtypes(*spec), autocast_of(*spec), standard_, base,
                                            result_.rows, on_cpu ? KernelOwner::TheDump : KernelOwner::AnotherStack);
      why = replayed.why_not;
      if (why.empty()) ++result_.ops_replayed;
      if (replayed.own_kernel_set_aside && kernels_set_aside_.insert(op.op_type).second)
        result_.warnings.push_back("this PyTorch's CPU kernel of " + op.op_type +
                                   " reads memory it never wrote; the op did not run on the CPU (or its args file does "
                                   "not say where it ran), so its dumped outputs were judged against float64 alone");
    }
    if (!why.empty()) skip(base, why);
  }

 private:
  void skip(ReplayRow row, const std::string& why) {
    ++result_.ops_skipped;
    ++result_.skipped_reasons[why.substr(0, why.find(':'))];
    row.judgement.result = Result::Skipped;
    row.judgement.reason = why;
    result_.rows.push_back(std::move(row));
  }

  ReplayResult& result_;
  const Standard& standard_;
  std::set<std::string> kernels_set_aside_;  // op types warned about
};

}  // namespace

OpReplayed replay_op(const ReplayOp& op, const json& spec, const std::vector<at::ScalarType>& dtypes,
                     at::ScalarType autocast, const Standard& standard, const ReplayRow& base,
                     std::vector<ReplayRow>& rows, KernelOwner owner) {
  const auto handle = find_operator(spec);
  if (!handle) return "operator " + spec.value("operator", std::string("?")) + "." + spec.value("overload", std::string()) +
                      " is not in this PyTorch";
  std::vector<at::Tensor> inputs;
  for (uint32_t slot = 0; slot < dtypes.size(); ++slot) {
    auto it = op.inputs.find(slot);
    if (it == op.inputs.end()) return "input " + std::to_string(slot) + " was not dumped";
    const std::string& placeholder = it->second->placeholder;
    if (dtypes[slot] == at::ScalarType::Undefined && placeholder.rfind(kUndefinedPlaceholder, 0) == 0) {
      inputs.emplace_back();  // an undefined tensor the op was given (an absent optional gradient)
      continue;
    }
    if (dtypes[slot] != at::ScalarType::Undefined && placeholder.rfind(kOutBufferPlaceholder, 0) == 0) {
      // The op overwrites it without reading it (Adam's amsgrad `maximum(..., out=)`): an empty
      // tensor of its dtype, which the kernel resizes as out= buffers are.
      inputs.push_back(at::empty({0}, at::TensorOptions().dtype(dtypes[slot])));
      continue;
    }
    if (!placeholder.empty()) return "input " + std::to_string(slot) + " holds no data: " + placeholder;
    at::Tensor t;
    try {
      t = load_tensor(*it->second);
    } catch (const std::exception& e) {
      return std::string("input ") + std::to_string(slot) + " cannot be read: " + e.what();
    }
    // npy stores bfloat16 as float32: the op ran on the dtype the args file recorded.
    if (dtypes[slot] != at::ScalarType::Undefined && dtypes[slot] != t.scalar_type()) t = t.to(dtypes[slot]);
    inputs.push_back(std::move(t));
  }
  std::vector<at::Tensor> as_ran, on_junk, exact, perturbed;
  std::string why;
  try {
    try {
      std::optional<std::vector<at::Tensor>> ran;
      {
        NewMemoryFill zeros(NewMemoryFill::With::Zeros);
        ran = run_on_copies(*handle, spec, inputs, autocast, &why);
      }
      if (!ran) return why;
      as_ran = std::move(*ran);
    } catch (const std::exception&) {
      // This PyTorch has no CPU kernel at these dtypes (float16 in 1.13): float outputs are still
      // judged against the float64 run, at the dtype the dump holds them in.
      as_ran.clear();
    }
    // Again on new memory filled with NaN junk: a kernel that reads memory it never wrote shows it
    // (unwritten_memory.h). Not the ops whose output is such memory by design (empty, resize_).
    if (!as_ran.empty() && !op_kinds::leaves_memory_unwritten(op.op_type)) {
      try {
        NewMemoryFill junk(NewMemoryFill::With::Junk);
        on_junk = run_on_copies(*handle, spec, inputs, autocast, &why).value_or(on_junk);
      } catch (const std::exception&) {
        on_junk.clear();
      }
    }
    std::vector<at::Tensor> wide, moved;
    // The same in float64 on inputs moved by their own dtype's rounding: how far rounding alone
    // moves each output (its conditioning), so that a sum that cancels is not taken for a fault.
    // An input coarser than every float output is moved by the coarsest output's rounding instead:
    // the op computes at its outputs' precision at least (a float32 -> float64 conversion; a float32
    // residual plus a bfloat16 attention output, added in float32, where the bfloat16 rounding is
    // upstream's and would call the sum rounding noise). A mixed op with a coarse output too,
    // batch_norm's backward on bfloat16 activations with float32 weights, keeps its inputs'
    // rounding: its kernel may round inside at the coarser dtype.
    double coarsest_out = 0;
    for (const auto& t : as_ran)
      if (t.defined() && at::isFloatingType(t.scalar_type())) coarsest_out = std::max(coarsest_out, rounding_step(t.scalar_type()));
    for (const auto& t : inputs) {
      wide.push_back(high_precision(t));
      const double own = rounding_step(t.defined() ? t.scalar_type() : at::kFloat);
      moved.push_back(rounding_moved(high_precision(t), coarsest_out > 0 ? std::min(own, coarsest_out) : own));
    }
    auto stack = build_stack(*handle, spec, wide, &why);
    if (!stack) return why;
    exact = run_in_float64(*handle, std::move(*stack));
    stack = build_stack(*handle, spec, moved, &why);
    if (stack) perturbed = run_in_float64(*handle, std::move(*stack));
  } catch (const std::exception& e) {
    std::string what = e.what();
    return "cannot run: " + what.substr(0, what.find('\n'));
  }
  OpReplayed replayed;
  // Beside another stack's dump, this PyTorch's kernel reading memory it never wrote says nothing of the
  // dumped outputs, and its run cannot stand for "the kernel's own" result: set aside, as where this
  // PyTorch has no kernel at those dtypes, the outputs are judged against float64 alone.
  if (owner == KernelOwner::AnotherStack)
    for (size_t slot = 0; slot < as_ran.size() && slot < on_junk.size(); ++slot)
      if (unwritten_elements(as_ran[slot], on_junk[slot])) {
        as_ran.clear();
        on_junk.clear();
        replayed.own_kernel_set_aside = true;
        break;
      }
  const ComputedIn inside = computed_in(*handle, inputs);
  std::vector<at::Tensor> seen, plain;
  bool seen_ready = false, plain_ready = false, plain_failed = false;
  const bool low_autocast = autocast == at::kBFloat16 || autocast == at::kHalf;
  for (const auto& [slot, entry] : op.outputs) {
    ReplayRow row = base;
    row.tensor_index = "output." + std::to_string(slot);
    // An output the op left undefined (a gradient nobody asks for) and the replay too: nothing to judge.
    if (entry->placeholder.rfind(kUndefinedPlaceholder, 0) == 0 && slot < as_ran.size() && !as_ran[slot].defined()) continue;
    const bool ran = slot < as_ran.size();
    if (!entry->placeholder.empty() || slot >= exact.size() || (!as_ran.empty() && !ran)) {
      row.judgement.result = Result::Skipped;
      row.judgement.reason = !entry->placeholder.empty() ? "holds no data: " + entry->placeholder
                                                         : "the replay returned fewer outputs than the dump holds";
      rows.push_back(std::move(row));
      continue;
    }
    at::Tensor dumped;
    try {
      dumped = load_tensor(*entry);
    } catch (const std::exception& e) {
      row.judgement.result = Result::Skipped;
      row.judgement.reason = std::string("cannot be read: ") + e.what();
      rows.push_back(std::move(row));
      continue;
    }
    // The dtype it had: what the op gives at the dtypes and under the autocast it ran with. An
    // args file from before opdump recorded autocast: bfloat16 where the dump holds bfloat16 values.
    at::ScalarType dtype = ran ? as_ran[slot].scalar_type() : effective_dtype(dumped);
    if (autocast == at::ScalarType::Undefined && !spec.contains("autocast_cpu") && dtype == at::kFloat && effective_dtype(dumped) == at::kBFloat16)
      dtype = at::kBFloat16;
    // msprobe's dump.json says what dtype each output had (its .pt files keep it too).
    if (spec.contains("output_dtypes") && spec["output_dtypes"].is_array() && slot < spec["output_dtypes"].size())
      if (const at::ScalarType recorded = scalar_type_named(spec["output_dtypes"][slot]);
          at::isFloatingType(recorded) && at::isFloatingType(dtype))
        dtype = recorded;
    row.dtype = c10::toString(dtype);
    const bool floating = at::isFloatingType(dtype) || at::isComplexType(dtype);
    if (!ran && !floating) {
      row.judgement.result = Result::Skipped;
      row.judgement.reason = "no CPU kernel at the dtypes it ran with, and its output is not a float";
      rows.push_back(std::move(row));
      continue;
    }
    if (!exact[slot].defined()) {  // (float64_reference.h: an output without a float64 counterpart)
      row.judgement.result = Result::Skipped;
      row.judgement.reason = "not judged: the op's float64 composite has no such output (the kernel's own workspace)";
      rows.push_back(std::move(row));
      continue;
    }
    const at::Tensor& reference = floating ? exact[slot] : as_ran[slot];
    // The inputs as the kernel saw them matter only to the lean of an output that is not PyTorch's
    // own (the lean against it is zero otherwise): worked out once per op, where one first differs.
    if (!seen_ready && floating && ran && as_ran[slot].defined() && (dtype == at::kHalf || dtype == at::kBFloat16) &&
        !dumped.to(at::kDouble).equal(as_ran[slot].to(at::kDouble))) {
      seen_ready = true;
      try {
        seen = as_seen(*handle, spec, inputs, autocast, as_ran);
      } catch (const std::exception&) {
        seen.clear();  // the lean is then measured from the dumped inputs
      }
    }
    row.judgement = standard.judge(dumped, reference, dtype,
                                    floating && slot < perturbed.size() ? perturbed[slot] : at::Tensor(),
                                    floating && slot < seen.size() ? seen[slot] : at::Tensor(),
                                    floating && ran ? as_ran[slot] : at::Tensor(), inside.dtype, inside.why);
    // Under a float16 or bfloat16 autocast, an output finer than it that PyTorch's own kernel gives
    // otherwise with autocast off, or cannot give at all: the op is made of ops autocast casts down
    // (a gru's linear layers; an LSTM cell given a bfloat16 input and float32 weights and state, which
    // without autocast is a dtype mismatch), and computed at the autocast's precision. Asked only of an
    // output not already passed.
    if (row.judgement.result != Result::Pass && row.judgement.result != Result::Skipped && low_autocast && ran &&
        floating && as_ran[slot].defined() && rounding_step(dtype) < rounding_step(autocast)) {
      if (!plain_ready) {
        plain_ready = true;
        try {
          std::string unused;
          plain = run_on_copies(*handle, spec, inputs, at::ScalarType::Undefined, &unused).value_or(plain);
        } catch (const std::exception&) {
          plain.clear();
          plain_failed = true;
        }
      }
      if (plain_failed || (slot < plain.size() && plain[slot].defined() &&
                           plain[slot].scalar_type() == as_ran[slot].scalar_type() && !plain[slot].equal(as_ran[slot])))
        row.judgement = standard.judge(dumped, reference, dtype, slot < perturbed.size() ? perturbed[slot] : at::Tensor(),
                                       at::Tensor(), as_ran[slot], autocast);
    }
    if (ran && slot < on_junk.size())
      if (const int64_t unwritten = unwritten_elements(as_ran[slot], on_junk[slot])) {
        const std::string judged = row.judgement.result == Result::Pass ? "" : "; as dumped: " + row.judgement.reason;
        row.judgement.result = Result::Error;
        row.judgement.reason = "reads memory it never wrote: " + std::to_string(unwritten) + " of " +
                               std::to_string(as_ran[slot].numel()) +
                               " elements are finite when PyTorch's allocator fills new memory with zeros and NaN "
                               "when it fills it with junk, so the values depend on what freed memory held" +
                               judged;
      }
    rows.push_back(std::move(row));
  }
  return replayed;
}


const ReplayRow* ReplayResult::first_error() const {
  for (const auto& r : rows)
    if (r.judgement.result == Result::Error) return &r;
  return nullptr;
}

ReplayResult replay_dump(const std::string& dump, const ReplayOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  ReplayResult result;
  const DumpIndex index = index_dump(dump, options.ranks);
  result.warnings = index.warnings;
  using Key = std::tuple<uint32_t, int64_t, std::string, std::string, uint64_t>;
  std::map<Key, ReplayOp> ops;
  size_t tensors = 0, module_tensors = 0;
  for (const DumpEntry& e : index.entries) {
    if (e.source == DumpEntry::Source::Statistics) continue;
    ++tensors;
    // msprobe's module records (level mix): the APIs inside them are replayed one by one.
    if (e.msprobe && e.op_type.rfind("module:", 0) == 0) {
      ++module_tensors;
      continue;
    }
    ReplayOp& op = ops[{e.rank(), e.iteration(), folder_of(e.path), e.key_name, e.occurrence}];
    op.rank = e.rank();
    op.iteration = e.iteration();
    op.order = e.order;
    op.op_type = e.op_type;
    op.op_name = e.op_name;
    op.folder = folder_of(e.path);
    op.key = e.key_name;
    op.msprobe = e.msprobe;
    if (e.source == DumpEntry::Source::H5) op.h5_file = e.path;
    op.backward = e.backward();
    (e.io == IoKind::Input ? op.inputs : op.outputs)[e.slot] = &e;
  }
  if (!tensors)
    throw Error(dump + ": holds no tensors (statistics only?): replay needs a tensor dump (saved_data \"tensor\" or "
                "\"full\") taken with save_kernel_args");
  if (module_tensors)
    result.warnings.push_back(std::to_string(module_tensors) + " tensors of msprobe module records (level mix) are not "
                              "replayed: the APIs inside each module are");
  std::vector<const ReplayOp*> order;
  for (const auto& [key, op] : ops) order.push_back(&op);
  std::stable_sort(order.begin(), order.end(), [](const ReplayOp* a, const ReplayOp* b) {
    return std::tie(a->iteration, a->rank, a->order) < std::tie(b->iteration, b->rank, b->order);
  });
  // Where each op's arguments are: opdump's args files beside its tensors, or msprobe's dump.json
  // above dump_tensor_data/.
  std::map<std::string, std::map<std::string, json>> specs;  // source -> op -> args
  Replayer replayer(result, Standard::builtin());
  size_t unreadable = 0;
  bool any_args = false;
  Progress progress("replay: ops", order.size(), 0, Progress::for_terminal(options.quiet));
  for (const ReplayOp* op : order) {
    const std::string source = op->msprobe ? folder_of(op->folder) + "/dump.json" : !op->h5_file.empty() ? op->h5_file : op->folder;
    auto found = specs.find(source);
    if (found == specs.end()) {
      std::map<std::string, json> by_op;
      if (!op->h5_file.empty()) {  // the torch_npu dumper's .h5: each op group keeps its arguments
        try {
          for (const auto& [name, text] : h5_op_arguments(op->h5_file)) {
            json spec = json::parse(text, nullptr, false);
            if (spec.is_object() && spec.contains("operator") && spec.contains("arguments")) by_op[name] = std::move(spec);
            else if (++unreadable <= 3) result.warnings.push_back(op->h5_file + ": the arguments of " + name + " did not parse");
          }
        } catch (const std::exception& e) {
          result.warnings.push_back(std::string(e.what()) + " (its ops are not replayed)");
        }
      } else if (!op->msprobe) {
        by_op = kernel_args_of(op->folder, result.warnings, unreadable);
      } else if (std::error_code ec; std::filesystem::is_regular_file(source, ec)) {
        try {
          by_op = msprobe_kernel_args(source);
        } catch (const std::exception& e) {
          result.warnings.push_back(source + ": " + e.what() + " (its APIs are not replayed)");
        }
      }
      any_args |= !by_op.empty();
      found = specs.emplace(source, std::move(by_op)).first;
    }
    auto spec = found->second.find(task_key(op->key, op->order));
    if (spec == found->second.end()) spec = found->second.find(op->key);
    replayer.op(*op, spec == found->second.end() ? nullptr : &spec->second);
    progress.advance(1);
  }
  progress.finish();
  if (unreadable > 3) result.warnings.push_back(std::to_string(unreadable) + " args files did not parse; their ops were skipped");
  if (!any_args)
    result.warnings.push_back("no op of " + dump + " has recorded arguments: dump with \"save_kernel_args\": true "
                              "(e2e_dump_settings, or the opdump object), or give msprobe's dump.json beside "
                              "dump_tensor_data/, to replay it");
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace opdump::replay
