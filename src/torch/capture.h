// Tensors as the Dumper takes them (shared by the observer and the debug scenes).
#pragma once
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <ATen/record_function.h>

#include <memory>
#include <vector>

#include "dumper/dump_sink.h"
#include "written_args.h"

namespace opdump::pt::detail {

// opdump's own ATen calls: not ops of the model (no RecordFunction callbacks), no autograd. Made
// only where ATen runs: entering and leaving a RecordFunctionGuard costs torch 1.13 more than a
// small op's statistics or overflow check (2% of a tiny-op model's dumped step per guard and op).
struct QuietAten {
  at::RecordFunctionGuard no_record{false};
  at::NoGradGuard no_grad;
};

bool dtype_of(at::ScalarType s, DType* out);
// A host copy of a tensor; for device tensors an asynchronous copy into pinned memory that
// Buffer::wait_ready() waits for. With a `dump`, a copy to be written: its bytes count as in flight
// until the copy is dropped (DumpSink::charge), and host copies reuse its writer's copy memory.
std::shared_ptr<Buffer> host_copy(const at::Tensor& t, DumpSink* dump = nullptr);
// Every tensor of an op's arguments or results in dump slot order (undefined ones included),
// appended to `out`. `Values`: RecordFunction::inputs() or outputs(), whose types differ between
// versions.
template <typename Values>
void tensors_of(const Values& values, std::vector<at::Tensor>& out) {
  for (const c10::IValue& v : values) {
    if (v.isTensor()) {
      out.push_back(v.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector()) out.push_back(t);
    } else if (v.isList()) {
      for (const c10::IValue& e : v.toListRef())
        if (e.isTensor()) out.push_back(e.toTensor());
    }
  }
}
// ...in a vector of their own.
template <typename Values>
std::vector<at::Tensor> tensors_of(const Values& values) {
  std::vector<at::Tensor> out;
  out.reserve(values.size());  // one allocation: most arguments are single tensors
  tensors_of(values, out);
  return out;
}
// Why a tensor cannot be dumped as data ("" when it can): undefined, a layout other than strided
// (sparse, mkldnn), a quantized or other dtype without a dump format, a meta tensor.
std::string undumpable_reason(const at::Tensor& t);
// A host copy as the Dumper takes it; a placeholder for what cannot be dumped.
DumpTensor dump_copy(const at::Tensor& t);
// A copy of a contiguous host tensor, made by a memcpy into a fresh tensor: no ATen op runs, so no
// QuietAten is needed around it (whose guard costs more than copying a small tensor).
at::Tensor copy_contiguous_host(const at::Tensor& t);
// The stream an op ran on (0 on the CPU).
uint64_t stream_of(const at::Tensor& t);

class StatsCache;
class PendingWork;
class ReductionBatcher;
// An op's tensors as the Dumper takes them, appended to `out` in slot order: a host copy when
// tensors are dumped (or bin files written), statistics reduced on the device for device tensors
// (staged into the thread's `batcher` where they are small enough, device_batch.h),
// otherwise host statistics of the tensor itself, without a copy, once per tensor version, on the
// statistics thread (`cache`, `barrier`: host_stats.h) unless the op is about to modify it
// (`written`: the storages it writes; those are summarized at once). `out_buffers`: per tensor,
// whether it is an out= argument, which the op overwrites without reading: the one kind of memory
// known to hold nothing the op uses, dumped as a placeholder. Every other tensor is dumped as it
// is, whatever made it: storages filled by code no observer sees (torch.tensor's copy from Python
// data, extensions writing data_ptr) hold real bytes. `stream_id`: raised to the tensors' stream.
// Runs ATen calls: the caller keeps its own callbacks from observing them.
void capture_tensors(const std::vector<at::Tensor>& tensors, DumpSink& dumper, StatsCache& cache,
                     ReductionBatcher& batcher, PendingWork& barrier, std::vector<DumpTensor>& out, uint64_t* stream_id,
                     const WrittenStorages* written = nullptr,
                     const std::vector<bool>* out_buffers = nullptr);
}  // namespace opdump::pt::detail
