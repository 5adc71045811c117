// What the PyTorch observer keeps per thread (nesting, autograd node frames, the op counters of
// the iteration, the statistics cache) and per op, from its start callback to its end callback.
#pragma once
#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "capture.h"
#include "device_batch.h"
#include "dumper/dump_sink.h"
#include "host_stats.h"
#include "identity/op_names.h"
#include "module_scope.h"
#include "runtime/op_report.h"
#include "scene_capture.h"
#include "tensor_ids.h"
#include "op_traits.h"
#include "written_args.h"

namespace opdump::pt::detail {

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
  ReductionBatcher device_stats{Reduction::Statistics};  // statistics of device tensors, staged per op
  OpTraitsCache op_traits;
  TensorIds::ThreadCache tensor_ids;
  LastModuleScope module_scope;
  // An op's tensors while its callback looks at them (empty between callbacks: it holds no tensor).
  std::vector<at::Tensor> tensors;
};

// This thread's state.
ThreadState& state();

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

// An op's tensors in this thread's ThreadState::tensors (no vector per op), dropped when the
// callback is done with them.
class Tensors {
 public:
  explicit Tensors(ThreadState& ts) : tensors_(ts.tensors) {}
  ~Tensors() { tensors_.clear(); }
  Tensors(const Tensors&) = delete;
  Tensors& operator=(const Tensors&) = delete;
  // tensors_of(values), valid until this object goes (what is moved out of it is the mover's).
  template <typename Values>
  std::vector<at::Tensor>& of(const Values& values) {
    tensors_.clear();
    // (a debug scene takes the vector's memory with the tensors: one allocation then, not one per doubling)
    tensors_.reserve(values.size());
    tensors_of(values, tensors_);
    return tensors_;
  }

 private:
  std::vector<at::Tensor>& tensors_;
};

// What a start callback hands torch for the end callback: an op's whole context (OpCtx), or the
// kind of a record whose end only closes what its start opened (a MarkCtx: three records in four
// are these, and making and deleting an OpCtx for each took 0.6 ms of a tiny-op model's 10 ms step).
struct RecordCtx : at::ObserverContext {
  enum class Kind : uint8_t {
    Op,      // an OpCtx
    Nested,  // an op nested below the configured level that writes nothing: its nesting depth
    Node,    // an autograd node: its frame (ThreadState::nodes)
    Engine,  // the autograd engine evaluating a node (hooks, then the node): ThreadState::engine
  };
  explicit RecordCtx(Kind k) : kind(k) {}
  const Kind kind;
};

struct MarkCtx final : RecordCtx {
  explicit MarkCtx(Kind k) : RecordCtx(k) {}
  // made and deleted for most records, on the thread that runs them: from a free list per thread
  static void* operator new(size_t size);
  static void operator delete(void* block);
};

struct OpCtx final : RecordCtx {
  OpCtx() : RecordCtx(Kind::Op) {}
  // torch gets one per op of the level (and per nested op that writes) and deletes it at the op's
  // end on the same thread: a free list per thread spares the malloc and free of each.
  static void* operator new(size_t size);
  static void operator delete(void* block);

  bool selected = false;   // dump this op
  bool dump_outputs = false;  // ...and its outputs
  bool had_child = false;
  bool computes = false;  // a child that counts: not a factory, view or metadata op (skip_no_compute_ops)
  // At kernel level: the tensors the computing ops below this one returned, by tensor id. An op with such
  // children that returns a tensor none of them made (oneDNN's LSTM layer calls cat and add for its weights,
  // then runs the recurrence itself) is a kernel too.
  TensorIds::List ids_below;
  int depth = 0;
  OpCtx* top = nullptr;       // the api op (or node op) this op runs inside; itself at the top
  identity::CallIndex calls;  // ops below this top op, by type
  std::string name;  // (op_name() once executed)
  at::Tensor alias_from;      // a skipped copy (cast, contiguous): its source, for data flow
  at::Tensor aliased_input;   // detach, alias, view: the input whose remembered statistics may hold for the output
  std::vector<DumpTensor> inputs;
  WrittenTensors written;  // tensors this op may modify in place
  WrittenStorages written_storages;  // and the storages they write
  std::vector<at::Tensor> written_results;  // an executed op whose schema returns nothing: what it writes
  bool fills = false;  // zero_ / fill_ / _foreach_zero_: the result's statistics follow from one element
  at::Tensor added_to_zeros;  // add_ into a tensor holding +0 only: the tensor added (StatsCache::share)
  uint32_t zeros_version = 0;  // ...and the version of the tensor it adds into, before
  std::shared_ptr<LazyStats> scaled_from;  // mul_ by a scalar: the statistics of the tensor before
  double scale_factor = 1;                 // ...the scalar (StatsCache::remember_scaled)
  uint32_t scaled_version = 0;             // ...and the tensor's version, before
  bool executed = false;    // an op of the configured level: listed in the execution order
  // At api level (OpTraits::records_below): an op's first call counts the records below it and watches
  // them for writes to the memory of its inputs; later calls may switch them off.
  const OpTraits* learns_records_below = nullptr;
  WrittenStorages input_storages;  // (while it learns)
  uint32_t records_seen_below = 0;
  bool wrote_inputs_below = false;
  bool records_off_below = false;
  TensorIds::List input_ids;
  std::vector<std::pair<uint64_t, std::string>> named;  // tensors first seen here that have a name
  int64_t seq_start = -1;  // forward api ops: first autograd sequence number they may use
  uint64_t thread_id = 0;
  std::string short_name;  // forward api ops: the name as backward names embed it
  std::string model;
  uint64_t model_id = 0;
  bool in_scene = false;  // handled by a debug scene (overflow, exception, watcher)
  SceneOp scene;
  OpReport report;  // the dump this op reports to, from its start to its end

  // Its name: once it is listed (`executed`) the report holds it, moved there from `name`.
  const std::string& op_name() const { return executed ? report.record().id.op_name : name; }
};

struct ForwardOp {
  std::string short_name;  // the name as backward names embed it ("Default/net/layer1/0/conv1-Conv2d/conv2d-op0")
  std::string model;
  uint64_t model_id;
};

}  // namespace opdump::pt::detail
