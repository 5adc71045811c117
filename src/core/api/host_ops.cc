// dump_op(): operators reported by a runtime that has no adapter (an inference engine, a
// custom framework, a C program). Named and selected the way the PyTorch adapter names and
// selects its ops, so that the two dumps line up in compare.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "api/host_ops.h"
#include "config/config.h"
#include "dumper/dumper.h"
#include "identity/op_names.h"
#include "layout/layout.h"
#include "opdump/error.h"
#include "opdump/opdump.h"
#include "runtime/op_report.h"
#include "runtime/runtime.h"
#include "util/tensor.h"

namespace opdump {
namespace {

// The calls of each op type per scope on this thread, counted afresh every iteration.
struct ThreadCalls {
  identity::CallIndex calls;
  uint64_t iteration = UINT64_MAX;
};

// The tensors' views, checked before anything is named or written: a rejected call leaves no trace.
std::vector<TensorView> views_of(const std::vector<HostTensor>& tensors, const char* io, const std::string& op_type) {
  std::vector<TensorView> views;
  for (size_t slot = 0; slot < tensors.size(); ++slot) {
    const HostTensor& t = tensors[slot];
    const auto where = [&] { return "dump_op: " + op_type + " " + io + " " + std::to_string(slot) + ": "; };
    const std::optional<DType> dtype = dtype_from_name(t.dtype);
    if (!dtype) throw Error(where() + "dtype \"" + t.dtype + "\" is not one opdump writes (numpy names: float32, bfloat16, int64, ...)");
    for (int64_t d : t.shape)
      if (d < 0) throw Error(where() + "shape " + shape_to_string(t.shape) + " has a negative dimension");
    TensorView view{t.data, *dtype, t.shape};
    if (view.nbytes() > 0 && !t.data) throw Error(where() + "data is null for " + std::to_string(view.nbytes()) + " bytes");
    views.push_back(view);
  }
  return views;
}

// A copy the writer owns (the caller's memory is theirs again when dump_op returns).
std::vector<DumpTensor> copies_of(const std::vector<TensorView>& views) {
  std::vector<DumpTensor> out;
  for (TensorView view : views) {
    auto buffer = std::make_shared<HeapBuffer>(view.data, static_cast<size_t>(view.nbytes()));
    view.data = buffer->data();
    out.push_back(data_tensor(view, buffer));
  }
  return out;
}

// The op path from a checked call to the writer; `name_of` names the op once it is reported.
template <typename NameOf>
void report_host_op(const std::string& op_type, const std::vector<HostTensor>& inputs,
                    const std::vector<HostTensor>& outputs, NameOf name_of) {
  if (op_type.empty()) throw Error("dump_op: op_type is empty");
  const Runtime& runtime = Runtime::instance();
  OpReport report = OpReport::begin(runtime);
  if (!report) return;
  const std::vector<TensorView> input_views = views_of(inputs, "input", op_type);
  const std::vector<TensorView> output_views = views_of(outputs, "output", op_type);
  const std::string& model = scopes::current_model();
  report.identify(op_type, name_of(runtime), model, report.model_id(model));
  report.record_execution({}, {});
  const OpPlan plan = report.decide();
  if (plan.scene || !plan.dump) return;  // the debug scenes check tensors of adapters only
  report.dump(plan.inputs ? copies_of(input_views) : std::vector<DumpTensor>{},
              plan.outputs ? copies_of(output_views) : std::vector<DumpTensor>{});
}

}  // namespace

void dump_op(const std::string& op_type, const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outputs) {
  report_host_op(op_type, inputs, outputs, [&op_type](const Runtime& runtime) {
    thread_local ThreadCalls calls;
    if (calls.iteration != runtime.iteration()) {
      calls.calls.clear();
      calls.iteration = runtime.iteration();
    }
    const std::string& scope = scopes::path();
    return identity::op_name(scope, op_type, calls.calls.next(scope, op_type));
  });
}

void dump_named_op(const std::string& op_type, const std::string& op_name, const std::vector<HostTensor>& inputs,
                   const std::vector<HostTensor>& outputs) {
  if (op_name.empty()) throw Error("dump_op: " + op_type + ": the op name is empty");
  report_host_op(op_type, inputs, outputs, [&op_name](const Runtime&) { return op_name; });
}

}  // namespace opdump
