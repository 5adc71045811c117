// The PyTorch observer: at::RecordFunction callbacks -> the Dumper of the runtime it was
// installed with (observer.h). Op identity and selection happen here; the per-thread state, module
// scopes, tensor capture, kernel arguments, written arguments, the statistics barrier and the debug
// scenes are in their own files.
//
// Naming (identity/op_names.h; identical across runs, devices at api level, threads and
// unrelated ops):
//   forward api op:  {module scope}/{op}-op{n}            n counts ops of this type in this scope
//   nested op:       {api op name}/{op}-op{k}             k counts ops of this type below the api op
//   backward op:     Gradients/{forward op, short scope}/{Node}/{op}-op{k}
//                    ({Node}-{j} for the j-th further node of one type from one forward op)
//                    (the autograd node's sequence number names the forward op that created it)
#include <ATen/ATen.h>
#include <ATen/SequenceNumber.h>
#include <ATen/core/grad_mode.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "observer.h"

#include "capture.h"
#include "scene_capture.h"
#include "host_stats.h"
#include "identity/op_names.h"
#include "kernel_args.h"
#include "module_scope.h"
#include "node_recycler.h"
#include "opdump/error.h"
#include "opdump/scopes.h"
#include "util/log.h"
#include "runtime/op_report.h"
#include "runtime/runtime_interface.h"
#include "tensor_ids.h"
#include "thread_state.h"
#include "written_args.h"

namespace opdump::pt::detail {
namespace {

// An accumulation into a tensor known to hold +0 only (`grad += new_grad` into the `.grad` an
// optimizer zeroed; alpha 1): its result holds the added tensor's values, whose statistics are
// known (StatsCache::share). Sets the op's `added_to_zeros` and `zeros_version` when it is one.
void note_added_to_zeros(const at::RecordFunction& fn, StatsCache& cache, OpCtx& ctx) {
  const auto inputs = fn.inputs();
  if (inputs.size() != 3 || !inputs[0].isTensor() || !inputs[1].isTensor()) return;
  const c10::IValue& alpha = inputs[2];
  if (!(alpha.isInt() ? alpha.toInt() == 1 : alpha.isDouble() && alpha.toDouble() == 1.0)) return;
  const at::Tensor& self = inputs[0].toTensor();
  if (!self.defined() || !self.device().is_cpu() || !cache.holds_zeros(self)) return;
  ctx.added_to_zeros = inputs[1].toTensor();
  ctx.zeros_version = self._version();
}

// A product in place by a scalar (mul_ with a Python number) of a tensor whose statistics are
// remembered: the result's may follow from them (StatsCache::remember_scaled). Sets the op's
// `scaled_from`, `scale_factor` and `scaled_version` when it is one.
void note_scaled(const at::RecordFunction& fn, StatsCache& cache, OpCtx& ctx) {
  const auto inputs = fn.inputs();
  if (inputs.size() != 2 || !inputs[0].isTensor()) return;
  const c10::IValue& other = inputs[1];
  double factor;
  if (other.isDouble()) {
    factor = other.toDouble();
  } else if (other.isTensor() && other.toTensor().unsafeGetTensorImpl()->is_wrapped_number() &&
             other.toTensor().scalar_type() == at::kDouble) {
    factor = *other.toTensor().data_ptr<double>();  // (item() would be an op of its own)
  } else {
    return;
  }
  const at::Tensor& self = inputs[0].toTensor();
  if (!self.defined() || !StatsCache::scales_exactly(self.scalar_type(), factor)) return;
  ctx.scaled_from = cache.remembered(self);
  ctx.scale_factor = factor;
  ctx.scaled_version = self._version();
}

// Whether opdump's callback is the only one PyTorch calls for this thread's ops: another observer's (a
// profiler's) keeps the records below an api op on.
bool sole_op_observer() {
  const auto callbacks = at::getStepCallbacksUnlessEmpty(at::RecordScope::FUNCTION);
  return callbacks && callbacks->callbacks_.size() == 1;
}

// Switching PyTorch's records off and on again costs about what two or three records do (each rebuilds
// the thread's callback lists): below resnet18's convolutions, batch norms, their backward ops and SGD's
// mul_ there are 4 to 11, 1.0% of its step with both cores training (December 7, fourth session), while
// switching below ops with fewer made a model of 100 Linear+ReLU layers 1-2% slower.
constexpr uint32_t kRecordsWorthSwitchingOff = 4;

// A record below the api op `top` that writes `storages` in place: counted while `top` learns whether
// to keep them (OpTraits::records_below), and whether it writes memory `top` was given.
void note_record_below(OpCtx& top, const WrittenStorages& storages = {}) {
  if (!top.learns_records_below) return;
  ++top.records_seen_below;
  for (const c10::StorageImpl* s : storages)
    if (std::find(top.input_storages.begin(), top.input_storages.end(), s) != top.input_storages.end())
      top.wrote_inputs_below = true;
}

// Whether the dump's statistics are the host's, remembered per tensor version (StatsCache): a debug
// scene other than the watcher dumps none, and hashes need the data.
bool remembers_host_statistics(const DumpSink* dumper) {
  if (!dumper || !dumper->settings().statistics || dumper->settings().device_path_on_cpu ||
      (dumper->settings().scene != Scene::Normal && dumper->settings().scene != Scene::Watcher))
    return false;
  const StatsOptions options = dumper->stats_options();
  return !options.md5 && !options.xxhash;
}

class Observer final : public RuntimeListener {
 public:
  explicit Observer(RuntimeInterface& runtime) : runtime_(runtime), scenes_(runtime, barrier_), ids_(runtime) {}

  void on_activity(bool dumping) override {
    if (!dumping) {
      begin_draining();
      scenes_.iteration_end();
      scenes_.paused();
    }
    if (dumping)
      if (auto d = runtime_.dump_sink()) {
        level_.store(static_cast<int>(d->settings().level));
        barrier_.set_placement(d->settings().host_work, d->settings().scene == Scene::Overflow);
        scene_.store(static_cast<int>(d->settings().scene));
      }
    std::lock_guard<std::mutex> lock(mutex_);
    if (dumping) draining_.store(false);  // pending statistics are the dumped iteration's business again
    if (dumping && !installed_) {
      handle_ = at::addGlobalCallback(at::RecordFunctionCallback(&Observer::start_cb, &Observer::end_cb)
                                          .needsInputs(true)
                                          .needsOutputs(true)
                                          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
      installed_ = true;
      enabled_ = true;
    } else {
      apply_callback_state_locked();
    }
  }

  void on_dump_ending(DumpSink& dumper) override {
    finish_lazy_stats();
    scenes_.iteration_end();
    scenes_.dump_ending();
  }

  void on_iteration(uint64_t iteration) override {
    // Pending statistics must be done before tensors can change unobserved. When the new
    // iteration is dumped too, every write stays observed (written-argument rule), so they stay
    // with the statistics thread. Otherwise the callback keeps watching writes until that
    // thread is done (draining); one whole iteration later they are finished here.
    auto dumper = runtime_.dump_sink();
    if (!dumper || !dumper->iteration_selected(iteration)) {
      if (draining_.load()) finish_lazy_stats();
      else begin_draining();
    }
    scenes_.iteration_end();
    ids_.prune();
    std::lock_guard<std::mutex> lock(forward_mutex_);
    for (auto it = forward_ops_.begin(); it != forward_ops_.end();)
      it = spare_forward_ops_.erase(forward_ops_, it, [](ForwardOp&) {});
    orphan_nodes_.clear();
    backward_nodes_.clear();
  }

  static std::unique_ptr<at::ObserverContext> start_cb(const at::RecordFunction& fn) {
    if (!instance().runtime_.dumping()) {
      if (instance().draining_.load(std::memory_order_relaxed)) instance().drain(fn);
      return nullptr;
    }
    ThreadState& ts = state();
    if (ts.busy) return nullptr;
    if (ts.depth == 0) {
      Busy busy(ts);  // releasing runs tensor destructors: not ops, but keep our own calls unobserved
      instance().barrier_.releases().release();
    }
    try {
      std::unique_ptr<at::ObserverContext> ctx = instance().start(fn, ts);
      // (last: an exception before this leaves them on, as no end callback would turn them on again)
      if (ctx && static_cast<RecordCtx*>(ctx.get())->kind == RecordCtx::Kind::Op &&
          static_cast<OpCtx*>(ctx.get())->records_off_below)
        at::enableRecordFunction(false);
      return ctx;
    } catch (const std::exception& e) {
      instance().runtime_.disable_after_error(std::string("in the start callback of ") + fn.name() + ": " + e.what());
    }
    return nullptr;
  }

  static void end_cb(const at::RecordFunction& fn, at::ObserverContext* raw) {
    if (!raw) return;
    ThreadState& ts = state();
    switch (static_cast<RecordCtx*>(raw)->kind) {
      case RecordCtx::Kind::Nested:
        --ts.depth;
        return;
      case RecordCtx::Kind::Node:
        if (!ts.nodes.empty()) ts.nodes.pop_back();
        return;
      case RecordCtx::Kind::Engine:
        --ts.engine;
        return;
      case RecordCtx::Kind::Op:
        if (static_cast<OpCtx*>(raw)->records_off_below) at::enableRecordFunction(true);
        break;
    }
    try {
      instance().end(fn, ts, static_cast<OpCtx*>(raw));
    } catch (const std::exception& e) {
      instance().runtime_.disable_after_error(std::string("in the end callback of ") + fn.name() + ": " + e.what());
    }
  }

  // The one observer the RecordFunction callbacks reach (install_observer sets it before it
  // registers any callback; never destroyed: callbacks may run during exit).
  static Observer& instance() { return *installed_observer_; }
  static inline Observer* installed_observer_ = nullptr;

 private:
  void sync_iteration(ThreadState& ts) {
    const uint64_t it = runtime_.iteration();
    if (ts.iteration == it) return;
    ts.iteration = it;
    ts.calls.clear();
    // The cache outlives iterations (parameters are summarized once per update, not twice), but
    // entries of tensors that died are dropped here.
    ts.cache.drop_dead();
  }

  std::unique_ptr<at::ObserverContext> start(const at::RecordFunction& fn, ThreadState& ts) {
    sync_iteration(ts);
    const char* name = fn.name();
    if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
      auto ctx = std::make_unique<MarkCtx>(RecordCtx::Kind::Node);
      NodeFrame f;
      f.base_depth = ts.depth;
      std::string_view node = name;
      if (const size_t colons = node.rfind("::"); colons != std::string_view::npos) node.remove_prefix(colons + 2);
      {
        std::lock_guard<std::mutex> lock(forward_mutex_);
        auto it = forward_ops_.find({fn.forwardThreadId(), fn.seqNr()});
        if (it != forward_ops_.end()) {
          const ForwardOp& fwd = it->second;
          if (!fwd.short_name.empty())
            f.prefix = identity::backward_scope(fwd.short_name, node, backward_nodes_.next(fwd.short_name, node));
          f.model = fwd.model;
          f.model_id = fwd.model_id;
        } else {
          // Nodes without a forward op (AccumulateGrad) are numbered per node type.
          f.prefix = identity::orphan_backward_scope(node, orphan_nodes_.next("", node));
        }
      }
      ts.nodes.push_back(std::move(f));
      return ctx;
    }
    const OpTraits& op = ts.op_traits.of(fn);
    if (!op.is_operator) {
      if (std::strncmp(name, "autograd::engine::evaluate_function: ", 37) != 0) return nullptr;
      auto ctx = std::make_unique<MarkCtx>(RecordCtx::Kind::Engine);
      ++ts.engine;
      return ctx;
    }

    const int level = level_.load(std::memory_order_relaxed);
    // Only the front end's module records, or inside an api op: only the nesting depth matters,
    // and what the op writes.
    const bool below_level = level == static_cast<int>(ObserveLevel::Modules) ||
                             (level == static_cast<int>(ObserveLevel::Api) &&
                              ts.depth > (ts.nodes.empty() ? 0 : ts.nodes.back().base_depth));
    if (below_level && op.written.empty()) {
      if (!ts.open.empty()) note_record_below(*ts.open.back());
      ++ts.depth;
      return std::make_unique<MarkCtx>(RecordCtx::Kind::Nested);
    }
    auto ctx = std::make_unique<OpCtx>();
    // Always, even with nothing cached or pending yet: this op's own input capture below summarizes
    // what it is about to write at once only when it knows (the first in-place op of a dump was
    // summarized after it wrote).
    collect_written(fn, op, ctx->written, ctx->written_storages);
    barrier_.force(ctx->written_storages);  // summarize before this op writes it
    ctx->fills = !ctx->written.empty() && op.derives == OpTraits::Derives::Fill;
    if (!ctx->written.empty() && !ts.cache.empty()) {
      if (op.derives == OpTraits::Derives::AddInPlace) note_added_to_zeros(fn, ts.cache, *ctx);
      if (op.derives == OpTraits::Derives::MulInPlace) note_scaled(fn, ts.cache, *ctx);
    }
    if (op.aliases_input && !ts.cache.empty()) {
      const auto inputs = fn.inputs();
      if (!inputs.empty() && inputs[0].isTensor()) ctx->aliased_input = inputs[0].toTensor();
    }
    ctx->depth = ts.depth++;
    if (below_level) {
      if (!ts.open.empty()) note_record_below(*ts.open.back(), ctx->written_storages);
      return ctx;
    }
    ctx->report = runtime_.begin_op();
    if (!ctx->report) return ctx;  // no dump, or it is closing
    DumpSink* dumper = &ctx->report.dumper();
    OpCtx* parent = ts.open.empty() ? nullptr : ts.open.back();
    const std::string_view op_type = op.type;
    // A kernel whose only children are views and metadata (mkldnn_convolution calling
    // as_strided_) is still the innermost op that computes.
    ctx->computes = !(dumper->settings().skip_no_compute_ops && op.computes_nothing);
    if (parent && ctx->computes) parent->had_child = true;
    ts.open.push_back(ctx.get());
    const int base = ts.nodes.empty() ? 0 : ts.nodes.back().base_depth;
    const bool top = ctx->depth == base;

    std::string model;
    uint64_t model_id = 0;
    if (ts.nodes.empty()) {
      model = scopes::current_model();
      model_id = ctx->report.model_id(model);
    } else {
      model = ts.nodes.back().model;
      model_id = ts.nodes.back().model_id;
    }
    if (top) {
      ctx->top = ctx.get();
      if (ts.nodes.empty()) {
        const ModuleScope& module = module_scope_path(ts.module_scope);
        std::string_view scope = module.path, short_scope = module.brief;
        std::string gradient_scope, gradient_short_scope;
        if (ts.engine > 0) {  // gradient hooks and accumulation: backward, outside any node
          gradient_scope = "Gradients/" + module.path;
          gradient_short_scope = "Gradients/" + module.brief;
          scope = gradient_scope;
          short_scope = gradient_short_scope;
        }
        // In the backward pass an op takes the name of its counted type (add_ and add alike): PyTorch 2.x's
        // engine sums two gradients of one tensor in place only while nothing else holds their memory, as
        // statistics pending on the background thread do, and the dump must rename nothing.
        const std::string_view named_type = ts.engine > 0 ? identity::counted_type(op_type) : op_type;
        const uint64_t n = ts.calls.next(scope, named_type);
        ctx->name = identity::op_name(scope, named_type, n);
        // The autograd nodes this op creates (possibly several: linear makes TBackward0 and
        // AddmmBackward0) take the sequence numbers from here to the one current at its end.
        // (fn.seqNr() is -1 when autocast, not autograd, dispatched the op.)
        if (at::GradMode::is_enabled()) {
          ctx->seq_start = static_cast<int64_t>(at::sequence_number::peek());
          ctx->short_name = identity::op_name(short_scope, named_type, n);
        }
        ctx->thread_id = at::RecordFunction::currentThreadId();
        ctx->model = model;
        ctx->model_id = model_id;
      } else {
        NodeFrame& f = ts.nodes.back();
        ctx->name = identity::op_name(f.prefix, op_type, f.calls.next("", identity::counted_type(op_type)));
      }
    } else if (parent && parent->top) {
      ctx->top = parent->top;
      ctx->name = identity::op_name(ctx->top->op_name(), op_type, ctx->top->calls.next("", op_type));
    } else {
      ctx->name = op_type;
    }

    const AdapterSettings& settings = dumper->settings();
    const bool level_ok = settings.level != ObserveLevel::Api || top;
    if (!level_ok) return ctx;
    // The watcher checks after in-place writers too (zero_, copy_, fill_ overwrite memory).
    if (settings.skip_no_compute_ops && op.computes_nothing &&
        !(settings.scene == Scene::Watcher && !ctx->written.empty())) {
      const int copied = op.copied_input;
      const auto inputs = fn.inputs();
      if (copied >= 0 && static_cast<size_t>(copied) < inputs.size() && inputs[copied].isTensor())
        ctx->alias_from = inputs[copied].toTensor();
      return ctx;
    }

    // Every op of the level is in the execution order, dumped or not.
    ctx->report.identify(op_type, std::move(ctx->name), model, model_id);
    ctx->executed = true;
    if (op.returns_nothing && !ctx->written.empty()) written_results(fn, op, ctx->written_results);
    Tensors tensors(ts);
    std::vector<at::Tensor>& inputs = tensors.of(fn.inputs());
    if (settings.level == ObserveLevel::Api) {
      if (op.records_below == OpTraits::RecordsBelow::Unknown) {
        ctx->learns_records_below = &op;
        // (what it writes itself was finished at its start and is forgotten at its end)
        for (const at::Tensor& t : inputs)
          if (const c10::StorageImpl* s = storage_of(t); s && std::find(ctx->written_storages.begin(),
                                                                       ctx->written_storages.end(), s) ==
                                                             ctx->written_storages.end())
            ctx->input_storages.push_back(s);
      } else {
        ctx->records_off_below = op.records_below == OpTraits::RecordsBelow::Off && sole_op_observer();
      }
    }
    ids_.ids(inputs, ts.tensor_ids, ctx->input_ids, &ctx->named);
    const OpPlan plan = ctx->report.decide();
    if (plan.scene) {
      ctx->in_scene = true;
      // an .h5 overflow check names the datasets of the ops it writes by their arguments
      if (settings.scene == Scene::Overflow && settings.h5_file)
        ctx->report.write_kernel_args(kernel_args_json(fn, fn.inputs(), ctx->op_name()));
      Busy busy(ts);
      // (the scene keeps the op's tensors: moved there unless the dump captures them below)
      scenes_.start(fn, op, *dumper, plan.dump ? inputs : std::move(inputs), ctx->written, ctx->scene);
    }
    if (!plan.dump) return ctx;

    ctx->selected = true;
    ctx->dump_outputs = plan.outputs;
    if (plan.inputs) {
      std::vector<bool> out_buffers;
      if (!op.out.empty()) out_buffers = out_buffer_slots(fn, op);
      Busy busy(ts);
      capture_tensors(inputs, *dumper, ts.cache, ts.device_stats, barrier_, ctx->inputs,
                      ctx->report.stream_id(), &ctx->written_storages, &out_buffers);
    }
    if (plan.kernel_args) ctx->report.write_kernel_args(kernel_args_json(fn, fn.inputs(), ctx->op_name()));
    return ctx;
  }

  void end(const at::RecordFunction& fn, ThreadState& ts, OpCtx* ctx) {
    --ts.depth;
    if (ctx->learns_records_below)
      ctx->learns_records_below->records_below =
          !ctx->wrote_inputs_below && ctx->records_seen_below >= kRecordsWorthSwitchingOff ? OpTraits::RecordsBelow::Off
                                                                                           : OpTraits::RecordsBelow::Kept;
    if (!ts.open.empty() && ts.open.back() == ctx) ts.open.pop_back();
    if (!ts.cache.empty())
      for (const c10::TensorImpl* impl : ctx->written) ts.cache.forget(impl);
    if (ctx->added_to_zeros.defined()) {
      const auto& outs = fn.outputs();
      // (an add_ that threw wrote nothing: its version is unchanged)
      if (!outs.empty() && outs[0].isTensor() && outs[0].toTensor()._version() != ctx->zeros_version)
        ts.cache.share(outs[0].toTensor(), ctx->added_to_zeros, barrier_);
    }
    if (ctx->scaled_from) {
      const auto& outs = fn.outputs();
      const DumpSink* dumper = ctx->report ? ctx->report.shared_dumper().get() : runtime_.dump_sink().get();
      // (a mul_ that threw wrote nothing: its version is unchanged)
      if (!outs.empty() && outs[0].isTensor() && outs[0].toTensor()._version() != ctx->scaled_version &&
          remembers_host_statistics(dumper))
        ts.cache.remember_scaled(outs[0].toTensor(), *ctx->scaled_from, ctx->scale_factor, barrier_);
    }
    if (!ctx->written_storages.empty() && scene_.load(std::memory_order_relaxed) == static_cast<int>(Scene::Overflow)) {
      scenes_.written(ctx->written_storages);
      if (ctx->fills) scenes_.filled(fn, ts.op_traits.of(fn));  // the gradients an optimizer zeroes are bounded by 0
    }
    // Optimizers zero every gradient that backward then accumulates into (add_ in place): its
    // input statistics would be a pass over all gradients on the training thread.
    // (also zero_ nested in an api op: torch 1.13's zero_grad() is one _foreach_zero_ over all gradients)
    if (ctx->fills)
      remember_filled(fn, ts, ctx->report ? ctx->report.shared_dumper().get() : runtime_.dump_sink().get(), barrier_);
    if (ctx->seq_start >= 0) {
      const int64_t seq_end = static_cast<int64_t>(at::sequence_number::peek());
      if (seq_end > ctx->seq_start) {
        const ForwardOp fwd{std::move(ctx->short_name), std::move(ctx->model), ctx->model_id};
        std::lock_guard<std::mutex> lock(forward_mutex_);
        for (int64_t seq = ctx->seq_start; seq < seq_end; ++seq) {
          auto it = forward_ops_.find({ctx->thread_id, seq});
          // (copied into a kept node's strings: no allocation once they are long enough)
          if (it != forward_ops_.end()) it->second = fwd;
          else spare_forward_ops_.insert(forward_ops_, std::make_pair(ctx->thread_id, seq), fwd);
        }
      }
    }
    if (ctx->alias_from.defined()) {
      const auto& outs = fn.outputs();
      if (!outs.empty() && outs[0].isTensor()) ids_.alias(ctx->alias_from, outs[0].toTensor());
    }
    // (before the outputs are captured: a parameter's gradient, detached from the one its backward op
    // returned, is known without a pass over it)
    if (ctx->aliased_input.defined()) {
      const auto& outs = fn.outputs();
      if (!outs.empty() && outs[0].isTensor()) ts.cache.alias(ctx->aliased_input, outs[0].toTensor());
    }
    if (!ctx->executed) return;
    OpReport& report = ctx->report;
    DumpSink& dumper = report.dumper();
    Tensors tensors(ts);
    std::vector<at::Tensor>& results = tensors.of(fn.outputs());
    // An in-place op whose schema returns nothing (an optimizer's _foreach_add_): its results are
    // the arguments it wrote, which the dump would otherwise never show after the op.
    const bool returns_nothing = !ctx->written_results.empty();
    if (returns_nothing) results = std::move(ctx->written_results);
    TensorIds::List output_ids;
    ids_.ids(results, ts.tensor_ids, output_ids, &ctx->named);
    if (dumper.settings().level == ObserveLevel::Kernel) {
      if (OpCtx* parent = ts.open.empty() ? nullptr : ts.open.back(); parent && ctx->computes)
        parent->ids_below.append(output_ids.begin(), output_ids.end());
      if (ctx->had_child && !returns_own_tensor(*ctx, results, output_ids)) {  // not a kernel: its children are
        report.name_tensors(ctx->named);
        return;
      }
    }
    std::string source;
    if (dumper.wants_source(report.record().model_id)) {
      Busy busy(ts);
      source = runtime_.python_location();
    }
    report.record_execution(TensorIdList(ctx->input_ids.data(), ctx->input_ids.size()),
                            TensorIdList(output_ids.data(), output_ids.size()), source, ctx->named);
    if (!report.record().arguments.empty()) report.add_output_layouts(tensor_layouts_json(results));
    if (ctx->in_scene) {
      for (const at::Tensor& t : results)
        *report.stream_id() = std::max(*report.stream_id(), stream_of(t));
      Busy busy(ts);
      // (an optimizer's _foreach_add_ is checked on what it wrote; a _foreach_zero_'s zeros hold no overflow)
      scenes_.end(fn, report.shared_dumper(), report.record(),
                  returns_nothing && ctx->fills ? std::vector<at::Tensor>() : ctx->selected ? results : std::move(results),
                  ctx->scene);
    }
    if (!ctx->selected) return;
    std::vector<DumpTensor> outputs;
    if (ctx->dump_outputs) {
      Busy busy(ts);
      capture_tensors(results, dumper, ts.cache, ts.device_stats, barrier_, outputs,
                      report.stream_id());
    }
    report.dump(ctx->inputs, outputs);
  }

  // Whether an op returns a tensor with elements that neither its computing children returned nor it was
  // given (batch_norm's empty reserve does not count).
  static bool returns_own_tensor(const OpCtx& ctx, const std::vector<at::Tensor>& results,
                                 const TensorIds::List& output_ids) {
    auto has = [](const TensorIds::List& ids, uint64_t id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); };
    for (size_t i = 0; i < output_ids.size() && i < results.size(); ++i)
      if (const uint64_t id = output_ids[i]; id && results[i].defined() && results[i].numel() > 0 &&
                                             !has(ctx.ids_below, id) && !has(ctx.input_ids, id))
        return true;
    return false;
  }

  static void remember_filled(const at::RecordFunction& fn, ThreadState& ts, const DumpSink* dumper,
                              PendingWork& barrier) {
    if (!remembers_host_statistics(dumper)) return;
    const auto& outputs = fn.outputs();
    if (outputs.empty() || !outputs[0].isTensor()) return;
    const at::Tensor& t = outputs[0].toTensor();
    DType dtype;
    if (!t.defined() || !t.device().is_cpu() || t.layout() != at::kStrided || !dtype_of(t.scalar_type(), &dtype)) return;
    ts.cache.remember_filled(t, dtype, barrier);
  }

  // Statistics still pending are computed now (dumping stops, or draining took too long):
  // afterwards tensors may change without the observer seeing it.
  void finish_lazy_stats() {
    barrier_.force_all();
    barrier_.releases().release();
    stop_draining();
  }

  // Dumping pauses (an iteration that is not dumped): the statistics thread finishes what is
  // pending while training goes on, and the writer threads get the batched rows; meanwhile the
  // callback stays on to force the statistics of anything an op is about to write (host_stats.h).
  void begin_draining() {
    if (auto dumper = runtime_.dump_sink()) dumper->flush_pending_rows();
    if (!barrier_.empty()) draining_.store(true);
  }

  // An op while draining: only its writes matter.
  void drain(const at::RecordFunction& fn) {
    ThreadState& ts = state();
    if (ts.busy) return;
    try {
      WrittenTensors written;
      WrittenStorages storages;
      collect_written(fn, ts.op_traits.of(fn), written, storages);
      barrier_.force(storages);
      if (!barrier_.empty()) return;
      {
        Busy busy(ts);  // releasing runs tensor destructors
        barrier_.releases().release();
      }
      stop_draining();
    } catch (const std::exception& e) {
      barrier_.force_all();
      stop_draining();
      log_error(std::string("while finishing statistics at ") + fn.name() + ": " + e.what());
    }
  }

  void stop_draining() {
    if (!draining_.load()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    draining_.store(false);
    apply_callback_state_locked();
  }

  // Off iterations cost nothing: the callback is disabled, not merely skipped, once draining is over.
  void apply_callback_state_locked() {
    const bool want = runtime_.dumping() || draining_.load();
    if (!installed_ || want == enabled_) return;
    if (want) at::reenableCallback(handle_);
    else at::disableCallback(handle_);
    enabled_ = want;
  }

  RuntimeInterface& runtime_;
  PendingWork barrier_;  // lazy statistics and host overflow checks, and the writes that wait for them
  DebugScenes scenes_;
  std::mutex mutex_;
  bool installed_ = false, enabled_ = false;
  std::atomic<bool> draining_{false};
  at::CallbackHandle handle_ = 0;
  std::mutex forward_mutex_;
  using ForwardOps = std::map<std::pair<uint64_t, int64_t>, ForwardOp>;  // (forward thread, sequence nr)
  ForwardOps forward_ops_;
  NodeRecycler<ForwardOps> spare_forward_ops_;  // under forward_mutex_: every iteration makes them anew
  identity::CallIndex orphan_nodes_;  // under forward_mutex_
  identity::CallIndex backward_nodes_;  // (forward op, node type) -> nodes run so far; under forward_mutex_
  TensorIds ids_;
  std::atomic<int> level_{static_cast<int>(ObserveLevel::Api)};
  std::atomic<int> scene_{static_cast<int>(Scene::Normal)};
};

}  // namespace

RuntimeListener& install_observer(RuntimeInterface& runtime) {
  static Observer* observer = [&runtime] {
    auto* o = new Observer(runtime);
    Observer::installed_observer_ = o;
    runtime.add_listener(o);  // registers the callbacks when a dump is active
    return o;
  }();
  return *observer;
}

}  // namespace opdump::pt::detail
