// The PyTorch side of the debug scenes (the CANN aclmdlSetDump reference dump_debug / dump_scene, MindSpore
// op_debug_mode, the torch_npu accuracy comparison guide check_overflow):
//  - overflow: each output is checked where it lives (one vectorized read-only pass on the
//    host; ATen reductions on a device, read back asynchronously); data is copied only when a
//    check fires. Inputs an op writes in place are copied before it runs.
//  - exception: an op whose end callback runs while an exception unwinds the stack failed; its
//    inputs (and any outputs) are dumped and the exception goes on unchanged.
//  - watcher: outputs of watched ops are copied when produced and compared after layer ops
//    (watcher_scene.h).
#include <ATen/core/grad_mode.h>
#include <c10/util/Backtrace.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "capture.h"
#include "scene_capture.h"
#include "device_batch.h"
#include "device_reduce.h"
#include "kernel_args.h"
#include "host_stats.h"
#include "runtime/runtime_interface.h"
#include "watcher_scene.h"

namespace opdump::pt::detail {
namespace {

// ---- overflow checks --------------------------------------------------------------------------

uint64_t checked_bytes(const at::Tensor& t) {
  return can_overflow(t) ? static_cast<uint64_t>(t.numel()) * t.element_size() : 0;
}

OverflowTensor describe(const at::Tensor& t, IoKind io, uint32_t slot, OverflowCheck check) {
  OverflowTensor o;
  o.io = io;
  o.slot = slot;
  if (t.defined()) {
    dtype_of(t.scalar_type(), &o.dtype);
    o.shape = Shape(t.sizes().begin(), t.sizes().end());
  }
  o.check = check;
  return o;
}

// Written inputs up to this size are copied before the op writes them, so that an overflowing
// op's dump shows them as it saw them; larger ones (parameters and optimizer state, which every
// optimizer step rewrites in place) are checked instead: copying them cost resnet18 a quarter of
// its step time.
constexpr size_t kCopyWrittenBytes = size_t(1) << 20;

void report_overflow(DumpSink& dumper, const OpRecord& record, const std::vector<at::Tensor>& inputs,
                     const std::vector<at::Tensor>& outputs, const std::vector<OverflowCheck>& output_checks,
                     const std::vector<std::pair<size_t, OverflowCheck>>& prechecked);  // below
}  // namespace

// Not in the anonymous namespace: DebugScenes::State holds them (a unity build, where this file is
// included, warns about such members, -Wsubobject-linkage).

// The overflow check of an op whose outputs are on the host, done on the background thread (or
// by the write barrier, before anything writes what it holds): the op's inputs and outputs stay
// as the op left them until then, so a firing check dumps them as they were.
class LazyCheck final : public LazyWork {
 public:
  bool in_order() const override { return true; }
  LazyCheck(PendingWork& barrier, KnownChecks& known, std::shared_ptr<DumpSink> dumper, OpRecord record, std::vector<at::Tensor> inputs,
            std::vector<at::Tensor> outputs, std::vector<std::pair<size_t, OverflowCheck>> prechecked, BoundedOp bounded,
            ProductSumOp product_sum)
      : LazyWork(barrier),
        known_(known),
        dumper_(std::move(dumper)),
        record_(std::move(record)),
        inputs_(std::move(inputs)),
        outputs_(std::move(outputs)),
        prechecked_(std::move(prechecked)),
        bounded_(std::move(bounded)),
        product_sum_(product_sum) {}

  std::vector<const c10::StorageImpl*> storages() const {
    std::vector<const c10::StorageImpl*> out;
    for (const auto* list : {&inputs_, &outputs_})
      for (const at::Tensor& t : *list)
        if (const c10::StorageImpl* s = storage_of(t)) out.push_back(s);
    return out;
  }

 private:
  void compute(ReleasedTensors& release) override {
    at::RecordFunctionGuard no_record(false);  // this may run on the background thread: not an op of the model
    at::NoGradGuard no_grad;
    // The background thread computes checks in the order they came, so the checks of the ops that
    // produced the operands are done by now, unless the write barrier forced this one ahead of its
    // turn: a rule that finds an operand's bound unknown has the older checks done first (on this
    // thread) and asks again, so what is read does not depend on how far the background thread got.
    bool earlier_done = false;
    auto with_earlier_done = [&](auto&& clean_from_bounds) {
      if (auto clean = clean_from_bounds()) return clean;
      if (earlier_done) return decltype(clean_from_bounds()){};
      earlier_done = true;
      barrier().run_earlier(*this);
      return clean_from_bounds();
    };
    const bool bounded = bounded_.rule != BoundRule::None &&
                         with_earlier_done([&] { return known_.bounded_check(bounded_, inputs_, outputs_); });
    std::vector<OverflowCheck> checks;
    bool fired = false;
    uint64_t bytes = 0;
    if (!bounded) {
      for (size_t i = 0; i < outputs_.size(); ++i) {
        const at::Tensor& t = outputs_[i];
        auto from_bounds = [&] { return known_.product_sum_check(product_sum_, inputs_, t, i); };
        if (std::optional<OverflowCheck> clean =
                product_sum_.kind == ProductSum::None ? std::nullopt : with_earlier_done(from_bounds)) {
          checks.push_back(*clean);  // known clean from its operands' bounds: not read
          continue;
        }
        checks.push_back(check_host(t));
        known_.remember(t, checks.back());
        fired |= checks.back().fired(dumper_->settings().check_fp16_range);
        bytes += checked_bytes(t);
      }
    }
    dumper_->count_overflow_check(bytes, bounded || (product_sum_.kind != ProductSum::None && bytes == 0));
    if (fired) {
      barrier().run_earlier(*this);  // older checks report first, wherever they are computed
      report_overflow(*dumper_, record_, inputs_, outputs_, checks, prechecked_);
    }
    for (auto* list : {&inputs_, &outputs_})
      for (at::Tensor& t : *list) release.push_back(std::move(t));
  }

  KnownChecks& known_;
  std::shared_ptr<DumpSink> dumper_;
  OpRecord record_;
  std::vector<at::Tensor> inputs_, outputs_;
  std::vector<std::pair<size_t, OverflowCheck>> prechecked_;
  BoundedOp bounded_;
  ProductSumOp product_sum_;
};

// The overflow checks of a device op's outputs: staged into the scene's batch where small enough
// (device_batch.h), the others reduced on their own.
class OutputChecks {
 public:
  OutputChecks(ReductionBatcher& batcher, const std::vector<at::Tensor>& outputs) : staged_(outputs.size()) {
    std::vector<at::Tensor> small, rest(outputs.size());
    std::vector<size_t> slots;
    bool any_rest = false;
    std::optional<at::Device> device;  // the batch's: staged tensors share one device
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (batcher.batched(outputs[i]) && (!device || outputs[i].device() == *device)) {
        device = outputs[i].device();
        small.push_back(outputs[i]);
        slots.push_back(i);
      } else if (can_overflow(outputs[i]) && outputs[i].numel() > 0) {  // an empty one cannot overflow
        rest[i] = outputs[i];
        any_rest = true;
      }
    }
    if (!small.empty()) {
      std::vector<StagedTensor> staged = batcher.stage(small);
      for (size_t k = 0; k < slots.size(); ++k) staged_[slots[k]] = std::move(staged[k]);
      // A full batch is reduced now: its checks come back while training goes on.
      if (staged_[slots.front()]->batch->sealed()) staged_[slots.front()]->batch->reduce();
    }
    if (any_rest) rest_ = std::make_shared<DeviceReduction>(Reduction::Overflow, rest);
  }
  bool ready() const {
    for (const auto& s : staged_)
      if (s && !s->batch->ready()) return false;
    return !rest_ || rest_->ready();
  }
  OverflowCheck check(size_t i) const {  // waits for it (reducing its batch if nobody has)
    if (staged_[i]) return staged_[i]->batch->overflow(staged_[i]->member);
    return rest_ ? rest_->overflow(i) : OverflowCheck{};
  }

 private:
  std::vector<std::optional<StagedTensor>> staged_;
  std::shared_ptr<DeviceReduction> rest_;  // outputs too large to batch; undefined where staged or clean
};

// An op whose outputs live on a device and whose checks are still on their way back.
struct PendingCheck {
  std::shared_ptr<DumpSink> dumper;  // the dump it belongs to: reported there even once that dump stops being current
  OpRecord record;
  std::vector<at::Tensor> inputs, outputs;
  std::vector<std::pair<size_t, OverflowCheck>> prechecked;
  std::shared_ptr<OutputChecks> flags;  // one overflow check per output
};

class OverflowScene {
 public:
  OverflowScene(PendingWork& barrier, KnownChecks& known) : barrier_(barrier), known_(known) {}
  void check(const std::shared_ptr<DumpSink>& dumper, const OpRecord& record, std::vector<at::Tensor> inputs,
             std::vector<at::Tensor> outputs, std::vector<std::pair<size_t, OverflowCheck>> prechecked, BoundedOp bounded,
             ProductSumOp product_sum) {
    // Outputs on a device are checked there; with device_path_on_cpu host outputs too (by the same
    // ATen reductions, not the host kernels).
    bool on_device = dumper->settings().device_path_on_cpu;
    for (const at::Tensor& t : outputs) on_device |= t.defined() && !t.device().is_cpu();
    if (!on_device) {
      auto work = std::make_shared<LazyCheck>(barrier_, known_, dumper, record, std::move(inputs), std::move(outputs),
                                              std::move(prechecked), std::move(bounded), product_sum);
      std::lock_guard<std::mutex> lock(mutex_);
      while (!host_.empty() && host_.front()->done()) host_.pop_front();  // released here, on a training thread
      host_.push_back(work);
      barrier_.add(work->storages(), work);
      return;
    }
    QuietAten quiet;
    uint64_t bytes = 0;
    for (const at::Tensor& t : outputs) bytes += checked_bytes(t);
    dumper->count_overflow_check(bytes, /*bounded=*/false);
    std::lock_guard<std::mutex> lock(mutex_);
    auto flags = std::make_shared<OutputChecks>(batcher_, outputs);
    pending_.push_back(
        PendingCheck{dumper, record, std::move(inputs), std::move(outputs), std::move(prechecked), std::move(flags)});
  }

  // Device checks that are back are reported; with `wait`, all of them (the iteration ends), and
  // the host checks the background thread has not done yet are done first, on this thread: an
  // iteration's overflows are reported and counted when it ends, however far that thread got.
  // (finalize_dump ends the iteration after the dump stopped being current: what was still on its
  // way back is reported to the dump it belongs to, not dropped.)
  void resolve(bool wait) {
    if (wait) finish_host_checks();
    for (;;) {
      PendingCheck p;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (pending_.empty()) return;
        if (!wait && !pending_.front().flags->ready()) return;
        p = std::move(pending_.front());
        pending_.pop_front();
      }
      DumpSink& dumper = *p.dumper;
      std::vector<OverflowCheck> checks;
      bool fired = false;
      for (size_t i = 0; i < p.outputs.size(); ++i) {
        checks.push_back(p.flags->check(i));
        fired |= checks.back().fired(dumper.settings().check_fp16_range);
      }
      if (fired) report_overflow(dumper, p.record, p.inputs, p.outputs, checks, p.prechecked);
    }
  }

  // Host checks not done yet are done now, in the order they came (each runs at most once: one the
  // background thread is on is waited for).
  void finish_host_checks() {
    std::vector<std::shared_ptr<LazyCheck>> undone;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const auto& w : host_)
        if (!w->done()) undone.push_back(w);
    }
    for (const auto& w : undone) w->run();
  }

  // Host checks that are done (forced or on the background thread) are let go; with `all`, the
  // caller has forced every one (the end of a dump).
  void release_done(bool all) {
    std::deque<std::shared_ptr<LazyCheck>> done;
    std::lock_guard<std::mutex> lock(mutex_);
    if (all) done.swap(host_);
    while (!host_.empty() && host_.front()->done()) host_.pop_front();
  }

  bool waiting() {  // device checks not reported yet
    std::lock_guard<std::mutex> lock(mutex_);
    return !pending_.empty();
  }

  // An op is about to write tensors that pending checks hold, to dump them if a check fires:
  // those keep a copy of what they hold (an asynchronous copy on the device, where waiting for
  // the checks would stall the training until the device caught up).
  void keep_before_write(c10::ArrayRef<const c10::TensorImpl*> written) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::pair<const c10::TensorImpl*, at::Tensor>> copies;  // one per tensor, however many hold it
    for (PendingCheck& p : pending_)
      for (auto* list : {&p.inputs, &p.outputs})
        for (at::Tensor& t : *list) {
          if (!t.defined() || std::find(written.begin(), written.end(), t.unsafeGetTensorImpl()) == written.end())
            continue;
          const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
          auto copy = std::find_if(copies.begin(), copies.end(), [&](const auto& c) { return c.first == impl; });
          if (copy == copies.end()) copy = copies.insert(copies.end(), {impl, t.clone()});
          t = copy->second;
        }
  }

 private:
  PendingWork& barrier_;
  KnownChecks& known_;
  std::mutex mutex_;
  ReductionBatcher batcher_{Reduction::Overflow};  // device outputs, staged per op
  std::deque<PendingCheck> pending_;
  std::deque<std::shared_ptr<LazyCheck>> host_;  // owned here until done
};

namespace {

void report_overflow(DumpSink& dumper, const OpRecord& record, const std::vector<at::Tensor>& inputs,
                     const std::vector<at::Tensor>& outputs, const std::vector<OverflowCheck>& output_checks,
                     const std::vector<std::pair<size_t, OverflowCheck>>& prechecked) {
  {
    OverflowEvent event;
    const bool fp16 = dumper.settings().check_fp16_range;
    auto before = [&](size_t slot) -> const OverflowCheck* {
      for (const auto& [s, c] : prechecked)
        if (s == slot) return &c;
      return nullptr;
    };
    std::vector<DumpTensor> ins, outs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const OverflowCheck* pre = before(i);
      OverflowCheck c = pre ? *pre
                            : inputs[i].defined() ? check_host(inputs[i].device().is_cpu() ? inputs[i] : inputs[i].cpu())
                                                  : OverflowCheck{};
      event.inputs_finite &= !c.fired(fp16);
      event.tensors.push_back(describe(inputs[i], IoKind::Input, static_cast<uint32_t>(i), c));
      event.tensors.back().overwritten_in_place = pre != nullptr;
      // what the op left in an input it overwrote is not what it read: no file for it
      ins.push_back(pre ? placeholder_tensor("overwritten in place by the op: its value before the op was checked, not kept")
                        : dump_copy(inputs[i]));
    }
    for (size_t i = 0; i < outputs.size(); ++i)
      event.tensors.push_back(describe(outputs[i], IoKind::Output, static_cast<uint32_t>(i), output_checks[i]));
    for (const at::Tensor& t : outputs) outs.push_back(dump_copy(t));
    dumper.dump_overflow(record, std::move(event), ins, outs);
  }
}

// ---- exception dump ---------------------------------------------------------------------------

// Set when a failing op was dumped; the ops around it end during the same unwinding and are
// not dumped again. Cleared when the next op starts.
thread_local bool t_exception_dumped = false;

void dump_failure(const at::RecordFunction& fn, DumpSink& dumper, const OpRecord& record, const SceneOp& op,
                  const RuntimeInterface& runtime) {
  std::vector<DumpTensor> ins, outs;
  for (const at::Tensor& t : tensors_of(op.arguments)) ins.push_back(dump_copy(t));
  for (const at::Tensor& t : tensors_of(fn.outputs())) outs.push_back(dump_copy(t));
  ExceptionInfo info;
  const Scene scene = dumper.settings().scene;
  if (scene == Scene::ExceptionNorm || scene == Scene::ExceptionDetail) 
    info.arguments_json = kernel_args_json(fn, c10::ArrayRef<const c10::IValue>(op.arguments.data(), op.arguments.size()),
                                           record.id.op_name);
  if (scene == Scene::ExceptionDetail) {
    info.cpp_stack = c10::get_backtrace(/*frames_to_skip=*/1);
    info.python_stack = runtime.python_stack();
  }
  dumper.dump_exception(record, ins, outs, info);
}

bool is_exception_scene(Scene s) {
  return s == Scene::ExceptionBrief || s == Scene::ExceptionNorm || s == Scene::ExceptionDetail;
}

}  // namespace

struct DebugScenes::State {
  State(const RuntimeInterface& r, PendingWork& b) : runtime(r), barrier(b), overflow(b, known) {}
  const RuntimeInterface& runtime;
  PendingWork& barrier;  // host checks wait behind it like statistics
  KnownChecks known;  // the checks of host tensors as they are now
  OverflowScene overflow;
  WatcherScene watcher;
};

DebugScenes::DebugScenes(const RuntimeInterface& runtime, PendingWork& barrier)
    : state_(std::make_unique<State>(runtime, barrier)) {}
DebugScenes::~DebugScenes() = default;

namespace {
// Checks now, on this thread, the host tensors among a bounded op's operands whose bounds are not
// known yet (their producer's check still queued: backward's gradient reaching a zeroed .grad moments
// after the op that made it), when together they are no larger than `budget` bytes, what the op
// would otherwise copy: a read in cache instead of an allocation and a write. (What is too large to
// copy is prechecked instead, which costs nothing when its own bound is known: a zeroed .grad.)
// False when there was nothing to check, or too much.
// `read`: the operands with the bounds bound_before read for them.
bool check_unknown_operands(KnownChecks& known, const BoundedOp& bounded, const BoundedOp::Operands& read,
                            const std::vector<at::Tensor>& inputs, size_t budget) {
  c10::SmallVector<const at::Tensor*, 4> unknown;
  size_t bytes = 0;
  for (size_t k = 0; k < read.size() && k < bounded.input_index.size(); ++k) {
    const int slot = bounded.input_index[k];
    if (slot < 0 || static_cast<size_t>(slot) >= inputs.size() || read[k].magnitude != kUnknownBound) continue;
    const at::Tensor& t = inputs[slot];
    if (!t.defined() || !t.device().is_cpu()) continue;
    unknown.push_back(&t);
    bytes += static_cast<size_t>(t.numel()) * t.element_size();
  }
  if (unknown.empty() || bytes > budget) return false;
  std::optional<QuietAten> quiet;
  for (const at::Tensor* t : unknown) {
    if (!t->is_contiguous() && !quiet) quiet.emplace();  // the check makes it contiguous first: an ATen op
    known.of(*t);
  }
  return true;
}

// An in-place op whose operands' bounds show its output clean before it runs (an optimizer's
// add_ and mul_ on tensors already checked or bounded, zero_): it cannot overflow, so it will not
// be dumped, and what it overwrites needs neither a copy nor a check first. Sets
// `bounded.clean_before`. Only for one written input that can overflow: the op's output.
bool clean_before_writing(KnownChecks& known, const std::vector<at::Tensor>& inputs,
                          c10::ArrayRef<const c10::TensorImpl*> written, BoundedOp& bounded) {
  if (written.empty()) return false;
  const at::Tensor* output = nullptr;
  for (const at::Tensor& t : inputs) {
    if (std::find(written.begin(), written.end(), t.unsafeGetTensorImpl()) == written.end() || !can_overflow(t))
      continue;
    if (output && output->unsafeGetTensorImpl() != t.unsafeGetTensorImpl()) return false;
    output = &t;
  }
  DType dtype;
  if (!output || !output->device().is_cpu() || !dtype_of(output->scalar_type(), &dtype)) return false;
  BoundedOp::Operands read;
  double bound = known.bound_before(bounded, inputs, dtype, &read);
  const size_t output_bytes = static_cast<size_t>(output->numel()) * output->element_size();
  if (!bound_is_clean(bound) && output_bytes <= kCopyWrittenBytes &&
      check_unknown_operands(known, bounded, read, inputs, output_bytes))
    bound = known.bound_before(bounded, inputs, dtype);
  if (!bound_is_clean(bound)) return false;
  bounded.clean_before = bound;
  return true;
}
}  // namespace

void DebugScenes::start(const at::RecordFunction& fn, const OpTraits& traits, DumpSink& dumper,
                        std::vector<at::Tensor> inputs, c10::ArrayRef<const c10::TensorImpl*> written, SceneOp& op) {
  const Scene scene = dumper.settings().scene;
  op.uncaught = std::uncaught_exceptions();
  if (is_exception_scene(scene)) {
    t_exception_dumped = false;
    op.arguments.assign(fn.inputs().begin(), fn.inputs().end());
    return;
  }
  if (scene != Scene::Overflow) return;
  std::optional<QuietAten> quiet;
  if (state_->overflow.waiting()) {
    quiet.emplace();
    state_->overflow.resolve(/*wait=*/false);
    if (!written.empty()) state_->overflow.keep_before_write(written);
  }
  if (dumper.overflow_ignored(traits.type)) return;
  op.inputs = std::move(inputs);
  BoundedOp& bounded = op.bounded;
  describe_bounded_op(traits.bound_rule, fn.inputs(), bounded);
  op.product_sum = product_sum_op(traits.product_sum, fn.inputs());
  const bool bounds = bounded.rule != BoundRule::None;
  if (bounds && clean_before_writing(state_->known, op.inputs, written, bounded)) return;  // nothing to copy or precheck
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    at::Tensor& t = op.inputs[i];
    if (written.empty() || std::find(written.begin(), written.end(), t.unsafeGetTensorImpl()) == written.end())
      continue;
    if (!can_overflow(t)) {
      if (bounds) bounded.written_before.emplace_back(i, kUnknownBound);
      continue;
    }
    const bool host_contiguous = t.device().is_cpu() && t.is_contiguous();
    if (!host_contiguous && !quiet) quiet.emplace();  // ATen copies or makes it contiguous
    if (!t.device().is_cpu() || static_cast<size_t>(t.numel()) * t.element_size() <= kCopyWrittenBytes) {
      if (bounds) bounded.written_before.emplace_back(i, state_->known.bound_of(t));
      t = host_contiguous ? copy_contiguous_host(t) : t.clone();
      dumper.count_overflow_copy(static_cast<uint64_t>(t.numel()) * t.element_size());
    } else {
      op.prechecked.emplace_back(i, state_->known.of(t));
      if (bounds) bounded.written_before.emplace_back(i, op.prechecked.back().second.max_abs);
    }
  }
}

void DebugScenes::end(const at::RecordFunction& fn, const std::shared_ptr<DumpSink>& shared, const OpRecord& record,
                      std::vector<at::Tensor> outputs, SceneOp& op) {
  DumpSink& dumper = *shared;
  const Scene scene = dumper.settings().scene;
  if (is_exception_scene(scene)) {
    QuietAten quiet;
    if (std::uncaught_exceptions() > op.uncaught && !t_exception_dumped) {
      t_exception_dumped = true;
      dump_failure(fn, dumper, record, op, state_->runtime);
    }
    return;
  }
  if (scene == Scene::Overflow) {
    if (std::uncaught_exceptions() > op.uncaught || dumper.overflow_ignored(record.id.op_type)) return;
    // Known clean now from its operands' bounds: nothing to read, nothing to hold.
    if (op.bounded.rule != BoundRule::None && state_->known.bounded_check(op.bounded, op.inputs, outputs)) {
      dumper.count_overflow_check(0, /*bounded=*/true);
      return;
    }
    if (op.product_sum.kind != ProductSum::None && state_->known.product_sum_checks(op.product_sum, op.inputs, outputs)) {
      dumper.count_overflow_check(0, /*bounded=*/true);
      return;
    }
    state_->overflow.check(shared, record, std::move(op.inputs), std::move(outputs), std::move(op.prechecked),
                           std::move(op.bounded), op.product_sum);
    return;
  }
  if (scene == Scene::Watcher) {
    QuietAten quiet;
    if (dumper.watched_op(record.id.op_name, record.id.op_type))
      state_->watcher.watch(record, std::move(outputs));
    else if (dumper.watch_layer_op(record.id.op_name, record.id.op_type))
      state_->watcher.check_after(dumper, record);
  }
}

void DebugScenes::iteration_end() {
  at::RecordFunctionGuard no_record(false);
  state_->overflow.resolve(/*wait=*/true);
  state_->overflow.release_done(/*all=*/false);
  state_->known.drop_dead();
}

void DebugScenes::written(c10::ArrayRef<const c10::StorageImpl*> storages) { state_->known.written(storages); }

void DebugScenes::filled(const at::RecordFunction& fn, const OpTraits& traits) {
  BoundedOp op;
  describe_bounded_op(traits.bound_rule, fn.inputs(), op);
  if (op.rule != BoundRule::None) state_->known.bounded_check(op, tensors_of(fn.inputs()), tensors_of(fn.outputs()));
}

void DebugScenes::paused() { state_->known.clear(); }

void DebugScenes::dump_ending() {
  state_->barrier.force_all();  // host checks not done yet report now, before the dump closes
  state_->overflow.release_done(/*all=*/true);
  state_->watcher.clear();
}

}  // namespace opdump::pt::detail
