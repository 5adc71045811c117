// The PyTorch adapter: at::RecordFunction callbacks -> opdump::Dumper.
//
// Naming (identity/op_names.h; identical across runs, devices at api level, threads and
// unrelated ops):
//   forward api op:  {module scope}/{op}-op{n}            n counts ops of this type in this scope
//   nested op:       {api op name}/{op}-op{k}             k counts ops of this type below the api op
//   backward op:     Gradients/{forward op, short scope}/{Node}/{op}-op{k}
//                    (the autograd node's sequence number names the forward op that created it)
#include <ATen/ATen.h>
#include <ATen/SequenceNumber.h>
#include <ATen/record_function.h>
#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "adapter_internal.h"
#include "host_stats.h"
#include "identity/op_names.h"
#include "tensor_ids.h"
#include "opdump/error.h"
#include "opdump/log.h"
#include "opdump/runtime.h"
#include "opdump/torch.h"

namespace opdump::pt {
namespace detail {

// ---- tensors -> opdump ----------------------------------------------------------------------

bool dtype_of(at::ScalarType s, DType* out) {
  switch (s) {
    case at::kBool: *out = DType::Bool; return true;
    case at::kChar: *out = DType::Int8; return true;
    case at::kShort: *out = DType::Int16; return true;
    case at::kInt: *out = DType::Int32; return true;
    case at::kLong: *out = DType::Int64; return true;
    case at::kByte: *out = DType::UInt8; return true;
    case at::kHalf: *out = DType::Float16; return true;
    case at::kBFloat16: *out = DType::BFloat16; return true;
    case at::kFloat: *out = DType::Float32; return true;
    case at::kDouble: *out = DType::Float64; return true;
    case at::kComplexFloat: *out = DType::Complex64; return true;
    case at::kComplexDouble: *out = DType::Complex128; return true;
    default: return false;
  }
}

// A host copy of a tensor; for device tensors an asynchronous copy into pinned memory that
// wait_ready() waits for (an event on the producing stream: no synchronisation of training).
class TensorBuffer final : public Buffer {
 public:
  TensorBuffer(at::Tensor host, std::unique_ptr<c10::Event> event)
      : host_(std::move(host)), event_(std::move(event)) {}
  const void* data() const override { return host_.data_ptr(); }
  size_t size() const override { return host_.numel() * host_.element_size(); }
  // Polls on a writer thread (c10::Event::synchronize is not in every PyTorch version).
  void wait_ready() const override {
    while (event_ && !event_->query()) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  bool ready() const override { return !event_ || event_->query(); }

 private:
  at::Tensor host_;
  std::unique_ptr<c10::Event> event_;
};

namespace {
std::unique_ptr<c10::Event> record_event(const at::Device& device) {
  auto event = std::make_unique<c10::Event>(device.type());
  const auto* impl = c10::impl::getDeviceGuardImpl(device.type());
  event->record(impl->getStream(device));
  return event;
}
}  // namespace

std::shared_ptr<Buffer> host_copy(const at::Tensor& t) {
  if (t.device().is_cpu()) {
    at::Tensor copy = at::empty(t.sizes(), t.options().memory_format(at::MemoryFormat::Contiguous));
    copy.copy_(t);
    return std::make_shared<TensorBuffer>(std::move(copy), nullptr);
  }
  at::Tensor pinned =
      at::empty(t.sizes(), t.options().device(at::kCPU).pinned_memory(true).memory_format(at::MemoryFormat::Contiguous));
  pinned.copy_(t, /*non_blocking=*/true);
  return std::make_shared<TensorBuffer>(std::move(pinned), record_event(t.device()));
}

uint64_t stream_of(const at::Tensor& t) {
  if (!t.defined() || t.device().is_cpu()) return 0;
  return static_cast<uint64_t>(c10::impl::getDeviceGuardImpl(t.device().type())->getStream(t.device()).id());
}

DumpTensor dump_copy(const at::Tensor& t) {
  DType dtype;
  if (!t.defined() || t.layout() != at::kStrided || !dtype_of(t.scalar_type(), &dtype))
    return DumpTensor{TensorView{nullptr, DType::Float32, {0}}, nullptr, nullptr};
  auto copy = host_copy(t.detach());
  return DumpTensor{TensorView{copy->data(), dtype, Shape(t.sizes().begin(), t.sizes().end())}, copy, nullptr};
}

// Statistics computed with ATen ops on the tensor's own device and stream; only a vector of 11
// doubles comes back, copied asynchronously.
std::function<TensorStats()> device_stats(const at::Tensor& t) {
  at::Tensor x = t.is_complex() ? t.abs() : t;
  if (x.scalar_type() == at::kBool) x = x.to(at::kByte);
  const bool floating = x.is_floating_point();
  std::vector<at::Tensor> parts;
  auto count = [](const at::Tensor& mask) { return mask.sum(at::kDouble); };
  at::Tensor finite = floating ? x.isfinite() : at::ones_like(x, x.options().dtype(at::kBool));
  parts.push_back(floating ? count(x.isnan()) : at::zeros({}, x.options().dtype(at::kDouble)));
  parts.push_back(floating ? count(x.isinf().logical_and(x > 0)) : at::zeros({}, x.options().dtype(at::kDouble)));
  parts.push_back(floating ? count(x.isinf().logical_and(x < 0)) : at::zeros({}, x.options().dtype(at::kDouble)));
  parts.push_back(count(x < 0));
  parts.push_back(count(x > 0));
  parts.push_back(count(x == 0));
  at::Tensor xd = x.to(at::kDouble);
  at::Tensor fin_values = floating ? xd.masked_fill(finite.logical_not(), 0) : xd;
  parts.push_back(fin_values.sum());
  parts.push_back((fin_values * fin_values).sum());
  const double inf = std::numeric_limits<double>::infinity();
  if (x.numel() > 0) {
    parts.push_back(floating ? xd.masked_fill(finite.logical_not(), inf).min() : xd.min());
    parts.push_back(floating ? xd.masked_fill(finite.logical_not(), -inf).max() : xd.max());
  } else {
    parts.push_back(at::full({}, inf, xd.options()));
    parts.push_back(at::full({}, -inf, xd.options()));
  }
  parts.push_back(count(finite));
  at::Tensor packed = at::stack(parts);
  auto buffer = host_copy(packed);
  const uint64_t n = static_cast<uint64_t>(t.numel());
  const bool complex = t.is_complex();
  return [buffer, n, complex] {
    buffer->wait_ready();
    const double* v = static_cast<const double*>(buffer->data());
    TensorStats s;
    s.count = n;
    s.nan = static_cast<uint64_t>(v[0]);
    s.pos_inf = static_cast<uint64_t>(v[1]);
    s.neg_inf = static_cast<uint64_t>(v[2]);
    s.negative = static_cast<uint64_t>(v[3]);
    s.positive = static_cast<uint64_t>(v[4]);
    s.zero = static_cast<uint64_t>(v[5]);
    s.sum = v[6];
    s.sum_sq = v[7];
    s.min = v[8];
    s.max = v[9];
    s.finite = static_cast<uint64_t>(v[10]);
    s.int_min = static_cast<int64_t>(v[8] > -9.2e18 ? v[8] : 0);
    s.int_max = static_cast<int64_t>(v[9] < 9.2e18 ? v[9] : 0);
    s.uint_min = static_cast<uint64_t>(v[8] > 0 ? v[8] : 0);
    s.uint_max = static_cast<uint64_t>(v[9] > 0 && v[9] < 1.8e19 ? v[9] : 0);
    (void)complex;
    return s;
  };
}

// ---- kernel arguments (seed 001's save_kernel_args) -------------------------------------------

namespace {
std::string json_escape(const std::string& in) {
  std::string out;
  for (unsigned char c : in) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string json_number(double v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// One argument as JSON; tensors become {"tensor": slot} in the order the dump numbers them.
std::string arg_json(const c10::IValue& v, uint32_t* slot) {
  if (v.isTensor()) return "{\"tensor\": " + std::to_string((*slot)++) + "}";
  if (v.isNone()) return "null";
  if (v.isBool()) return v.toBool() ? "true" : "false";
  if (v.isInt()) return std::to_string(v.toInt());
  if (v.isDouble()) return json_number(v.toDouble());
  if (v.isString()) return "\"" + json_escape(v.toStringRef()) + "\"";
  if (v.isDevice()) return "{\"device\": \"" + v.toDevice().str() + "\"}";
  if (v.isTensorList()) {
    std::string out = "{\"tensors\": [";
    const size_t n = v.toTensorVector().size();
    for (size_t i = 0; i < n; ++i) out += (i ? ", " : "") + std::to_string((*slot)++);
    return out + "]}";
  }
  if (v.isList()) {
    std::string out = "[";
    bool first = true;
    for (const c10::IValue& e : v.toListRef()) {
      out += (first ? "" : ", ") + arg_json(e, slot);
      first = false;
    }
    return out + "]";
  }
  if (v.isComplexDouble()) {
    auto z = v.toComplexDouble();
    return "{\"complex\": [" + json_number(z.real()) + ", " + json_number(z.imag()) + "]}";
  }
  return "{\"unsupported\": \"" + json_escape(v.tagKind()) + "\"}";
}

}  // namespace

std::string kernel_args_json(const at::RecordFunction& fn, c10::ArrayRef<const c10::IValue> inputs,
                             const std::string& op_name) {
  std::string out = "{\"op_name\": \"" + json_escape(op_name) + "\", \"operator\": \"" + json_escape(fn.name()) + "\"";
  auto schema = fn.operator_schema();
  if (schema) out += ", \"overload\": \"" + json_escape(schema->overload_name()) + "\"";
  out += ", \"arguments\": [";
  uint32_t slot = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = "arg" + std::to_string(i);
    bool kwarg_only = false;
    if (schema && i < schema->arguments().size()) {
      name = schema->arguments()[i].name();
      kwarg_only = schema->arguments()[i].kwarg_only();
    }
    out += std::string(i ? ", " : "") + "{\"name\": \"" + json_escape(name) + "\", \"kwarg_only\": " +
           (kwarg_only ? "true" : "false") + ", \"value\": " + arg_json(inputs[i], &slot) + "}";
  }
  return out + "]}\n";
}

}  // namespace detail

namespace {
using namespace detail;

// ---- per-thread and per-iteration state ------------------------------------------------------

struct OpCtx;

struct NodeFrame {
  std::string prefix;  // "Gradients/{forward op}/{Node}"
  std::string model;
  uint64_t model_id = 0;
  identity::CallIndex calls;  // the node's ops by type
  int base_depth = 0;
};

struct ThreadState {
  uint64_t iteration = UINT64_MAX;
  identity::CallIndex calls;  // forward api ops by (scope, type)
  int depth = 0;
  int engine = 0;  // open autograd::engine::evaluate_function records: gradient hooks run there
  bool busy = false;
  std::vector<NodeFrame> nodes;
  std::vector<OpCtx*> open;
  StatsCache cache;
  // Per operator overload (its schema's name pointer is one per overload): the arguments it writes
  // to (schema alias annotations "(a!)"), and among them its out= buffers.
  struct WrittenArgs {
    std::vector<uint32_t> written;
    std::vector<uint32_t> out;  // keyword-only "(a!)" arguments: what they held before does not matter
  };
  std::unordered_map<const char*, WrittenArgs> written_args;
};

ThreadState& state() {
  thread_local ThreadState s;
  return s;
}

// While opdump itself runs ATen code or tensor destructors on a thread, the callbacks ignore
// that thread's ops; the flag clears however the scope is left.
class Busy {
 public:
  explicit Busy(ThreadState& ts) : ts_(ts) { ts_.busy = true; }
  ~Busy() { ts_.busy = false; }
  Busy(const Busy&) = delete;
  Busy& operator=(const Busy&) = delete;

 private:
  ThreadState& ts_;
};

struct OpCtx final : at::ObserverContext {
  bool node = false;       // an autograd node frame, not an op
  bool engine = false;     // the autograd engine evaluating a node (hooks, then the node)
  bool selected = false;   // dump this op
  bool had_child = false;
  int depth = 0;
  OpCtx* top = nullptr;       // the api op (or node op) this op runs inside; itself at the top
  identity::CallIndex calls;  // ops below this top op, by type
  std::string name;
  at::Tensor alias_from;      // a skipped copy (cast, contiguous): its source, for data flow
  int8_t marks = 0;           // a skipped op: its output is uninitialized (1) or was just written (-1)
  OpRecord record;
  std::vector<DumpTensor> inputs;
  std::vector<const c10::TensorImpl*> written;  // tensors this op may modify in place
  std::vector<const c10::StorageImpl*> written_storages;  // and the storages they write
  bool fills = false;  // zero_ / fill_: the result's statistics follow from one element
  bool executed = false;    // an op of the configured level: listed in the execution order
  std::vector<uint64_t> input_ids;
  std::vector<std::pair<uint64_t, std::string>> named;  // tensors first seen here that have a name
  int64_t seq_start = -1;  // forward api ops: first autograd sequence number they may use
  uint64_t thread_id = 0;
  std::string short_name;  // forward api ops: the name as backward names embed it
  std::string model;
  uint64_t model_id = 0;
  bool in_scene = false;  // handled by a debug scene (overflow, exception, watcher)
  SceneOp scene;
};

struct ForwardOp {
  std::string short_name;  // the name as backward names embed it ("Default/net/layer1/0/conv1-Conv2d/conv2d-op0")
  std::string model;
  uint64_t model_id;
};

// Skipped ops whose output holds whatever the allocator left (until something writes it), and
// skipped ops that write their first argument: inputs read from the former are not dumped.
bool makes_uninitialized(const std::string& op_type) {
  return op_type == "empty" || op_type == "empty_like" || op_type == "empty_strided" || op_type == "new_empty" ||
         op_type == "new_empty_strided";
}
bool initializes(const std::string& op_type) {
  static const std::unordered_set<std::string> ops = {"zero_", "fill_", "copy_", "uniform_", "normal_", "bernoulli_",
                                                      "random_", "exponential_", "geometric_", "cauchy_", "log_normal_"};
  return ops.count(op_type) > 0;
}

// Skipped ops whose output copies an input (the slot given): data flow runs through them.
int copied_input(const std::string& op_type) {
  static const std::unordered_map<std::string, int> ops = {
      {"to", 0}, {"_to_copy", 0}, {"contiguous", 0}, {"clone", 0}, {"reshape", 0}, {"flatten", 0},
      {"type_as", 0}, {"copy_", 1}, {"_reshape_alias", 0}};
  auto it = ops.find(op_type);
  return it == ops.end() ? -1 : it->second;
}

// Ops that compute nothing from data: factories, views and metadata.
const std::unordered_set<std::string>& no_compute_ops() {
  static const std::unordered_set<std::string> ops = {
      "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "ones",
      "ones_like", "full", "full_like", "new_zeros", "new_ones", "new_full", "rand", "randn", "randint", "randperm",
      "rand_like", "randn_like", "arange", "linspace", "scalar_tensor", "view", "_unsafe_view", "reshape",
      "_reshape_alias", "as_strided", "t", "transpose", "permute", "expand", "expand_as", "squeeze", "unsqueeze",
      "select", "slice", "narrow", "detach", "detach_", "alias", "lift_fresh", "size", "stride", "numel", "dim",
      "is_same_size", "is_nonzero", "flatten", "unflatten", "view_as", "split", "chunk", "unbind", "resize_",
      "set_", "item", "_local_scalar_dense", "requires_grad_", "retain_grad", "to", "_to_copy", "contiguous",
      "clone", "copy_", "zero_", "fill_", "uniform_", "normal_", "bernoulli_", "random_", "result_type",
      "as_strided_", "resize_as_", "empty_like", "_empty_affine_quantized",
      "_has_compatible_shallow_copy_type", "record_stream", "output_nr", "_version", "is_leaf", "data",
      // views that only change how the same memory is read
      "resolve_conj", "resolve_neg", "conj", "_conj", "_neg_view", "view_as_real", "view_as_complex", "diagonal",
      "movedim", "moveaxis", "swapaxes", "swapdims", "unfold", "split_with_sizes", "tensor_split", "unsafe_split",
      "unsafe_chunk", "real", "imag", "adjoint", "numpy_T", "matrix_H", "mT", "mH", "_values", "_indices",
  };
  return ops;
}

// Ops whose name says they are not data computations ("autograd::engine::...", "profiler::").
bool is_operator(const char* name) {
  const char* sep = std::strstr(name, "::");
  if (!sep) return false;
  if (!std::strncmp(name, "autograd::", 10) || !std::strncmp(name, "profiler::", 10)) return false;
  return std::strchr(name, ' ') == nullptr;
}

// Tensors an op writes to in place. Not every kernel bumps the version counter of what it
// writes (native_batch_norm's running statistics, say), so the statistics cache forgets them.
const ThreadState::WrittenArgs& written_args(const at::RecordFunction& fn, ThreadState& ts) {
  static const ThreadState::WrittenArgs none;
  auto it = ts.written_args.find(fn.name());
  if (it != ts.written_args.end()) return it->second;
  auto schema = fn.operator_schema();
  if (!schema) return none;  // not a dispatcher op: nothing cached (its name may be a temporary)
  ThreadState::WrittenArgs w;
  const auto& args = schema->arguments();
  // PyTorch 1.x does not annotate the running statistics batch_norm kernels update in place.
  const bool batch_norm = std::strstr(fn.name(), "batch_norm") != nullptr;
  for (size_t i = 0; i < args.size(); ++i) {
    const bool writes = args[i].alias_info() && args[i].alias_info()->isWrite();
    if (writes || (batch_norm && (args[i].name() == "running_mean" || args[i].name() == "running_var")))
      w.written.push_back(static_cast<uint32_t>(i));
    if (writes && args[i].kwarg_only()) w.out.push_back(static_cast<uint32_t>(i));
  }
  return ts.written_args.emplace(fn.name(), std::move(w)).first->second;
}

// The dump slots of an op's out= buffers (their bytes before the op ran are whatever was there).
std::vector<bool> out_buffer_slots(const at::RecordFunction& fn, ThreadState& ts) {
  const auto& out = written_args(fn, ts).out;
  std::vector<bool> slots;
  const auto inputs = fn.inputs();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const size_t n = tensors_of(c10::ArrayRef<c10::IValue>(&inputs[i], 1)).size();
    const bool is_out = std::find(out.begin(), out.end(), static_cast<uint32_t>(i)) != out.end();
    slots.insert(slots.end(), n, is_out);
  }
  return slots;
}

void collect_written(const at::RecordFunction& fn, ThreadState& ts, std::vector<const c10::TensorImpl*>& out,
                     std::vector<const c10::StorageImpl*>& storages) {
  const auto& positions = written_args(fn, ts).written;
  if (positions.empty()) return;
  auto add = [&](const at::Tensor& t) {
    if (!t.defined()) return;
    out.push_back(t.unsafeGetTensorImpl());
    if (const c10::StorageImpl* storage = storage_of(t)) storages.push_back(storage);
  };
  const auto inputs = fn.inputs();
  for (uint32_t i : positions) {
    if (i >= inputs.size()) continue;
    if (inputs[i].isTensor()) {
      add(inputs[i].toTensor());
    } else if (inputs[i].isTensorList()) {  // _foreach_add_(Tensor(a!)[] self, ...): optimizers
      for (const at::Tensor& t : inputs[i].toTensorVector()) add(t);
    }
  }
}

class Observer final : public RuntimeListener {
 public:
  void on_activity(bool dumping) override {
    if (!dumping) {
      begin_draining();
      DebugScenes::instance().iteration_end(Runtime::instance().dumper().get());
    }
    if (dumping)
      if (auto d = Runtime::instance().dumper()) {
        level_.store(static_cast<int>(d->config().level));
        scene_.store(static_cast<int>(d->config().scene));
      }
    std::lock_guard<std::mutex> lock(mutex_);
    if (dumping) draining_.store(false);  // pending statistics are the dumped iteration's business again
    if (dumping && !installed_) {
      handle_ = at::addGlobalCallback(at::RecordFunctionCallback(&Observer::start_cb, &Observer::end_cb)
                                          .needsInputs(true)
                                          .needsOutputs(true)
                                          .needsIds(true)
                                          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
      installed_ = true;
      enabled_ = true;
    } else {
      apply_callback_state_locked();
    }
  }

  void on_dump_ending(Dumper& dumper) override {
    finish_lazy_stats();
    DebugScenes::instance().iteration_end(&dumper);
    DebugScenes::instance().dump_ending();
  }

  void on_iteration(uint64_t iteration) override {
    // Pending statistics must be done before tensors can change unobserved. When the new
    // iteration is dumped too, every write stays observed (written-argument rule), so they stay
    // with the statistics thread. Otherwise the callback keeps watching writes until that
    // thread is done (draining); one whole iteration later they are finished here.
    auto dumper = Runtime::instance().dumper();
    if (!dumper || !dumper->iteration_selected(iteration)) {
      if (draining_.load()) finish_lazy_stats();
      else begin_draining();
    }
    DebugScenes::instance().iteration_end(dumper.get());
    ids_.prune();
    std::lock_guard<std::mutex> lock(forward_mutex_);
    forward_ops_.clear();
    task_counter_.store(0);
    orphan_nodes_.clear();
  }

  static std::unique_ptr<at::ObserverContext> start_cb(const at::RecordFunction& fn) {
    if (!Runtime::instance().dumping()) {
      if (instance().draining_.load(std::memory_order_relaxed)) instance().drain(fn);
      return nullptr;
    }
    ThreadState& ts = state();
    if (ts.busy) return nullptr;
    if (ts.depth == 0) {
      Busy busy(ts);  // releasing runs tensor destructors: not ops, but keep our own calls unobserved
      ReleaseQueue::instance().release();
    }
    try {
      return instance().start(fn, ts);
    } catch (const std::exception& e) {
      Runtime::instance().disable_after_error(std::string("in the start callback of ") + fn.name() + ": " + e.what());
    }
    return nullptr;
  }

  static void end_cb(const at::RecordFunction& fn, at::ObserverContext* raw) {
    if (!raw) return;
    ThreadState& ts = state();
    try {
      instance().end(fn, ts, static_cast<OpCtx*>(raw));
    } catch (const std::exception& e) {
      Runtime::instance().disable_after_error(std::string("in the end callback of ") + fn.name() + ": " + e.what());
    }
  }

  static Observer& instance() {
    static Observer* o = new Observer();
    return *o;
  }

 private:
  void sync_iteration(ThreadState& ts) {
    const uint64_t it = Runtime::instance().iteration();
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
      auto ctx = std::make_unique<OpCtx>();
      ctx->node = true;
      NodeFrame f;
      f.base_depth = ts.depth;
      std::string node = name;
      if (const size_t colons = node.rfind("::"); colons != std::string::npos) node = node.substr(colons + 2);
      ForwardOp fwd{"", "", 0};
      {
        std::lock_guard<std::mutex> lock(forward_mutex_);
        auto it = forward_ops_.find({fn.forwardThreadId(), fn.seqNr()});
        if (it != forward_ops_.end()) fwd = it->second;
        // Nodes without a forward op (AccumulateGrad) are numbered per node type.
        else f.prefix = identity::orphan_backward_scope(node, orphan_nodes_.next("", node));
      }
      if (!fwd.short_name.empty()) f.prefix = identity::backward_scope(fwd.short_name, node);
      f.model = fwd.model;
      f.model_id = fwd.model_id;
      ts.nodes.push_back(std::move(f));
      return ctx;
    }
    if (!is_operator(name)) {
      if (std::strncmp(name, "autograd::engine::evaluate_function: ", 37) != 0) return nullptr;
      auto ctx = std::make_unique<OpCtx>();
      ctx->engine = true;
      ++ts.engine;
      return ctx;
    }

    auto ctx = std::make_unique<OpCtx>();
    if (!ts.cache.empty() || !PendingWork::instance().empty() ||
        scene_.load(std::memory_order_relaxed) != static_cast<int>(Scene::Normal)) {
      collect_written(fn, ts, ctx->written, ctx->written_storages);
      PendingWork::instance().force(ctx->written_storages);  // summarize before this op writes it
      ctx->fills = !ctx->written.empty() && (!std::strcmp(name, "aten::zero_") || !std::strcmp(name, "aten::fill_"));
    }
    ctx->depth = ts.depth++;
    if (level_.load(std::memory_order_relaxed) == static_cast<int>(ObserveLevel::Api) &&
        ctx->depth > (ts.nodes.empty() ? 0 : ts.nodes.back().base_depth))
      return ctx;  // inside an api op: only the nesting depth matters
    std::shared_ptr<Dumper> dumper = Runtime::instance().dumper();
    if (!dumper) return ctx;
    OpCtx* parent = ts.open.empty() ? nullptr : ts.open.back();
    const std::string op_type = std::strstr(name, "::") + 2;
    // A kernel whose only children are views and metadata (mkldnn_convolution calling
    // as_strided_) is still the innermost op that computes.
    if (parent && !(dumper->config().skip_no_compute_ops && no_compute_ops().count(op_type))) parent->had_child = true;
    ts.open.push_back(ctx.get());
    const int base = ts.nodes.empty() ? 0 : ts.nodes.back().base_depth;
    const bool top = ctx->depth == base;

    std::string model;
    uint64_t model_id = 0;
    if (ts.nodes.empty()) {
      model = scopes::current_model();
      if (!model.empty())
        if (auto m = Runtime::instance().find_model(model)) model_id = m->id;
    } else {
      model = ts.nodes.back().model;
      model_id = ts.nodes.back().model_id;
    }
    if (top) {
      ctx->top = ctx.get();
      if (ts.nodes.empty()) {
        auto [scope, short_scope] = scope_path();
        if (ts.engine > 0) {  // gradient hooks and accumulation: backward, outside any node
          scope = "Gradients/" + scope;
          short_scope = "Gradients/" + short_scope;
        }
        const uint64_t n = ts.calls.next(scope, ts.engine > 0 ? identity::counted_type(op_type) : op_type);
        ctx->name = identity::op_name(scope, op_type, n);
        // The autograd nodes this op creates (possibly several: linear makes TBackward0 and
        // AddmmBackward0) take the sequence numbers from here to the one current at its end.
        // (fn.seqNr() is -1 when autocast, not autograd, dispatched the op.)
        if (at::GradMode::is_enabled()) {
          ctx->seq_start = static_cast<int64_t>(at::sequence_number::peek());
          ctx->short_name = identity::op_name(short_scope, op_type, n);
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
      ctx->name = identity::op_name(ctx->top->name, op_type, ctx->top->calls.next("", op_type));
    } else {
      ctx->name = op_type;
    }

    const DumpConfig& config = dumper->config();
    const bool level_ok = config.level != ObserveLevel::Api || top;
    if (!level_ok) return ctx;
    // The watcher checks after in-place writers too (zero_, copy_, fill_ overwrite memory).
    if (config.skip_no_compute_ops && no_compute_ops().count(op_type) &&
        !(config.scene == Scene::Watcher && !ctx->written.empty())) {
      const int copied = copied_input(op_type);
      const auto inputs = fn.inputs();
      if (copied >= 0 && static_cast<size_t>(copied) < inputs.size() && inputs[copied].isTensor())
        ctx->alias_from = inputs[copied].toTensor();
      ctx->marks = makes_uninitialized(op_type) ? 1 : initializes(op_type) ? -1 : 0;
      return ctx;
    }

    // Every op of the level is in the execution order, dumped or not.
    ctx->record.id = OpIdentity{op_type, ctx->name, task_counter_.fetch_add(1), 0, now_microseconds()};
    ctx->record.model_name = model;
    ctx->record.model_id = model_id;
    ctx->record.iteration = Runtime::instance().iteration();
    ctx->executed = true;
    std::vector<bool> uninitialized;
    ids_.ids(fn.inputs(), ctx->input_ids, false, &uninitialized, &ctx->named);
    // CANN applies an acl model dump to models loaded after it was configured; every other dump
    // and every debug scene observes every model.
    if (!model.empty() && config.model_dump_needs_reload() && !Runtime::instance().model_enabled(model)) return ctx;
    if (config.scene != Scene::Normal) {
      ctx->in_scene = true;
      Busy busy(ts);
      DebugScenes::instance().start(fn, *dumper, ctx->written, ctx->scene);
      if (config.scene != Scene::Watcher) return ctx;  // nothing is dumped unless a check fires
    }
    if (!dumper->op_selected(model, ctx->name, op_type, scopes::marked())) return ctx;

    ctx->selected = true;
    if (config.dumps_inputs()) {
      if (!written_args(fn, ts).out.empty()) {
        const std::vector<bool> out = out_buffer_slots(fn, ts);
        for (size_t i = 0; i < out.size() && i < uninitialized.size(); ++i) uninitialized[i] = uninitialized[i] || out[i];
      }
      capture_all(fn.inputs(), *dumper, ts, ctx->inputs, &ctx->record.id.stream_id, &ctx->written_storages,
                  &uninitialized);
    }
    if (config.save_kernel_args) dumper->write_kernel_args(ctx->record, kernel_args_json(fn, fn.inputs(), ctx->name));
    return ctx;
  }

  void end(const at::RecordFunction& fn, ThreadState& ts, OpCtx* ctx) {
    if (ctx->node) {
      if (!ts.nodes.empty()) ts.nodes.pop_back();
      return;
    }
    if (ctx->engine) {
      --ts.engine;
      return;
    }
    --ts.depth;
    if (!ts.open.empty() && ts.open.back() == ctx) ts.open.pop_back();
    for (const c10::TensorImpl* impl : ctx->written) ts.cache.forget(impl);
    // Optimizers zero every gradient that backward then accumulates into (add_ in place): its
    // input statistics would be a pass over all gradients on the training thread.
    if (ctx->fills) remember_filled(fn, ts);
    if (ctx->seq_start >= 0) {
      const int64_t seq_end = static_cast<int64_t>(at::sequence_number::peek());
      if (seq_end > ctx->seq_start) {
        std::lock_guard<std::mutex> lock(forward_mutex_);
        for (int64_t seq = ctx->seq_start; seq < seq_end; ++seq)
          forward_ops_[{ctx->thread_id, seq}] = ForwardOp{ctx->short_name, ctx->model, ctx->model_id};
      }
    }
    if (ctx->alias_from.defined() || ctx->marks) {
      const auto& outs = fn.outputs();
      if (!outs.empty() && outs[0].isTensor()) {
        if (ctx->alias_from.defined()) ids_.alias(ctx->alias_from, outs[0].toTensor());
        if (ctx->marks) ids_.mark(outs[0].toTensor(), ctx->marks > 0);
      }
    }
    if (!ctx->executed) return;
    std::shared_ptr<Dumper> dumper = Runtime::instance().dumper();
    if (!dumper) return;
    if (dumper->config().level == ObserveLevel::Kernel && ctx->had_child) return;  // not innermost
    std::vector<uint64_t> output_ids;
    ids_.ids(fn.outputs(), output_ids, /*written=*/true, nullptr, &ctx->named);
    std::string source;
    if (dumper->wants_source(ctx->record.model_id)) {
      Busy busy(ts);
      source = Runtime::instance().python_location();
    }
    dumper->record_execution(ctx->record, std::move(ctx->input_ids), std::move(output_ids), source, ctx->named);
    if (ctx->in_scene) {
      for (const at::Tensor& t : tensors_of(fn.outputs()))
        ctx->record.id.stream_id = std::max(ctx->record.id.stream_id, stream_of(t));
      Busy busy(ts);
      DebugScenes::instance().end(fn, dumper, ctx->record, ctx->scene);
    }
    if (!ctx->selected) return;
    std::vector<DumpTensor> outputs;
    if (dumper->config().dumps_outputs()) {
      const auto& outs = fn.outputs();
      capture_all(outs, *dumper, ts, outputs, &ctx->record.id.stream_id);
    }
    dumper->dump_op(ctx->record, ctx->inputs, outputs);
  }

  static void remember_filled(const at::RecordFunction& fn, ThreadState& ts) {
    std::shared_ptr<Dumper> dumper = Runtime::instance().dumper();
    if (!dumper || !dumper->config().dumps_statistics() || dumper->config().stat_calc_mode == StatCalcMode::Device)
      return;
    const StatsOptions options = dumper->stats_options();
    if (options.md5 || options.xxhash) return;  // hashes need the data
    const auto& outputs = fn.outputs();
    if (outputs.empty() || !outputs[0].isTensor()) return;
    const at::Tensor& t = outputs[0].toTensor();
    DType dtype;
    if (!t.defined() || !t.device().is_cpu() || t.layout() != at::kStrided || !dtype_of(t.scalar_type(), &dtype)) return;
    ts.cache.remember_filled(t, dtype);
  }

  // The module scope, extended by TorchScript's module hierarchy when a scripted model runs; and
  // the form backward names embed: containers by attribute alone, the op's own module with its
  // class ("Default/net/layer1/0/conv1-Conv2d"), so that filters on a module's name still select
  // its backward ops while deep models stay under the file-name limit.
  static std::pair<std::string, std::string> scope_path() {
    std::string path = scopes::path(), brief = scopes::short_path();
    std::string last = scopes::depth() ? path.substr(path.rfind('/') + 1) : std::string();
    size_t last_short = scopes::depth() ? brief.size() - brief.rfind('/') - 1 : 0;
    auto hierarchy = torch::jit::currentModuleHierarchy();
    // Entries look like "conv(Conv2d)::forward"; "SELF(...)" is a method of the same module.
    for (size_t i = 1; i < hierarchy.size(); ++i) {  // [0] is the top module: already the model scope
      std::string e = hierarchy[i];
      if (const size_t method = e.find("::"); method != std::string::npos) e.resize(method);
      if (e.rfind("SELF(", 0) == 0) continue;
      auto [element, short_element] = identity::script_scope_element(e);
      path += "/" + element;
      brief += "/" + short_element;
      last = std::move(element);
      last_short = short_element.size();
    }
    if (!last.empty()) brief = brief.substr(0, brief.size() - last_short) + last;
    return {std::move(path), std::move(brief)};
  }

  // `written`: storages the op is about to modify (statistics of what reads them are computed at once).
  // `uninitialized`: per tensor, memory whose bytes mean nothing yet (a buffer from empty() no op
  // wrote, an out= argument): dumped as an empty placeholder, like an undefined tensor.
  template <typename Values>
  void capture_all(const Values& values, Dumper& dumper, ThreadState& ts, std::vector<DumpTensor>& out,
                   uint64_t* stream_id, const std::vector<const c10::StorageImpl*>* written = nullptr,
                   const std::vector<bool>* uninitialized = nullptr) {
    Busy busy(ts);
    at::RecordFunctionGuard no_record(false);
    at::NoGradGuard no_grad;
    const std::vector<at::Tensor> tensors = tensors_of(values);
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (uninitialized && i < uninitialized->size() && (*uninitialized)[i])
        out.push_back(DumpTensor{TensorView{nullptr, DType::Float32, {0}}, nullptr, nullptr});
      else
        capture(tensors[i], dumper, ts, out, stream_id, written);
    }
  }

  void capture(const at::Tensor& t, Dumper& dumper, ThreadState& ts, std::vector<DumpTensor>& out,
               uint64_t* stream_id, const std::vector<const c10::StorageImpl*>* written) {
    DType dtype;
    if (!t.defined() || t.layout() != at::kStrided || !dtype_of(t.scalar_type(), &dtype)) {
      // Keep slot numbers aligned with the op's tensor arguments: an empty entry.
      out.push_back(DumpTensor{TensorView{nullptr, DType::Float32, {0}}, nullptr, nullptr});
      return;
    }
    if (!t.device().is_cpu()) *stream_id = stream_of(t);
    const DumpConfig& config = dumper.config();
    Shape shape(t.sizes().begin(), t.sizes().end());
    DumpTensor d;
    d.view = TensorView{nullptr, dtype, shape};
    const bool on_device = !t.device().is_cpu() || config.stat_calc_mode == StatCalcMode::Device;
    if (config.dumps_tensors() || config.file_format == FileFormat::Bin) {
      auto copy = host_copy(t.detach());
      d.view.data = copy->data();
      d.owner = copy;
      if (config.dumps_statistics() && on_device) d.precomputed = device_stats(t.detach());
    } else if (on_device) {
      d.precomputed = device_stats(t.detach());
    } else {
      // Host statistics from the tensor itself (no copy), once per tensor version, on the
      // statistics thread unless this op is about to modify what the tensor reads (host_stats.h).
      const bool now = written && std::find(written->begin(), written->end(), storage_of(t)) != written->end();
      std::shared_ptr<LazyStats> stats = ts.cache.lookup_or_add(t, dtype, dumper.stats_options(), now);
      d.pending_bytes = stats->bytes();
      d.precomputed = [stats] { return stats->get(); };
    }
    out.push_back(std::move(d));
  }

  // Statistics still pending are computed now (dumping stops, or draining took too long):
  // afterwards tensors may change without the observer seeing it.
  void finish_lazy_stats() {
    PendingWork::instance().force_all();
    ReleaseQueue::instance().release();
    stop_draining();
  }

  // Dumping pauses (an iteration that is not dumped): the statistics thread finishes what is
  // pending while training goes on, and the writer threads get the batched rows; meanwhile the
  // callback stays on to force the statistics of anything an op is about to write (host_stats.h).
  void begin_draining() {
    if (auto dumper = Runtime::instance().dumper()) dumper->flush_pending_rows();
    if (!PendingWork::instance().empty()) draining_.store(true);
  }

  // An op while draining: only its writes matter.
  void drain(const at::RecordFunction& fn) {
    ThreadState& ts = state();
    if (ts.busy) return;
    try {
      std::vector<const c10::TensorImpl*> written;
      std::vector<const c10::StorageImpl*> storages;
      collect_written(fn, ts, written, storages);
      PendingWork::instance().force(storages);
      if (!PendingWork::instance().empty()) return;
      {
        Busy busy(ts);  // releasing runs tensor destructors
        ReleaseQueue::instance().release();
      }
      stop_draining();
    } catch (const std::exception& e) {
      PendingWork::instance().force_all();
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
    const bool want = Runtime::instance().dumping() || draining_.load();
    if (!installed_ || want == enabled_) return;
    if (want) at::reenableCallback(handle_);
    else at::disableCallback(handle_);
    enabled_ = want;
  }

  std::mutex mutex_;
  bool installed_ = false, enabled_ = false;
  std::atomic<bool> draining_{false};
  at::CallbackHandle handle_ = 0;
  std::mutex forward_mutex_;
  std::map<std::pair<uint64_t, int64_t>, ForwardOp> forward_ops_;  // (forward thread, sequence nr)
  std::atomic<uint64_t> task_counter_{0};
  identity::CallIndex orphan_nodes_;  // under forward_mutex_
  TensorIds ids_;
  std::atomic<int> level_{static_cast<int>(ObserveLevel::Api)};
  std::atomic<int> scene_{static_cast<int>(Scene::Normal)};
};

// Environment: OPDUMP_CONFIG (or MindSpore's MINDSPORE_DUMP_CONFIG) turns dumping on when the
// library loads; RANK / LOCAL_RANK give the rank and device of this process.
void configure_from_environment() {
  auto env_u32 = [](const char* name, uint32_t fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    unsigned long x = std::strtoul(v, &end, 10);
    return (end && *end == '\0' && x < 1u << 20) ? static_cast<uint32_t>(x) : fallback;
  };
  const uint32_t rank = env_u32("RANK", env_u32("LOCAL_RANK", 0));
  Runtime::instance().set_rank(rank, env_u32("LOCAL_RANK", rank));
  const char* path = std::getenv("OPDUMP_CONFIG");
  if (!path || !*path) path = std::getenv("MINDSPORE_DUMP_CONFIG");
  if (!path || !*path) return;
  try {
    Runtime::instance().init(path);
    log_info(std::string("dumping configured from ") + path);
  } catch (const std::exception& e) {
    log_error(std::string("cannot dump with ") + path + ": " + e.what());
  }
}

const bool g_installed = [] {
  install();
  configure_from_environment();
  return true;
}();

}  // namespace

void install() {
  static bool done = [] {
    Runtime::instance().add_listener(&Observer::instance());
    return true;
  }();
  (void)done;
  (void)g_installed;
}

ScriptModel::ScriptModel(const std::string& path, const std::string& name) : name_(name) {
  install();
  module_ = torch::jit::load(path);
  module_.eval();
  Runtime::instance().register_model(name);
}

c10::IValue ScriptModel::forward(std::vector<c10::IValue> inputs) {
  ModelScope scope(name_, module_.type()->name() ? module_.type()->name()->name() : "");
  return module_.forward(std::move(inputs));
}

}  // namespace opdump::pt
