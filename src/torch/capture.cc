// Tensors as the Dumper takes them: dtypes, host copies (pinned and asynchronous for device
// tensors), and how each tensor of an op is captured (a copy, device or lazy host statistics).
#include "capture.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <sstream>
#include <thread>

#include "device_batch.h"
#include "device_reduce.h"
#include "format/placeholders_csv.h"
#include "host_stats.h"

namespace opdump::pt::detail {

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
  TensorBuffer(at::Tensor host, std::unique_ptr<c10::Event> event, std::shared_ptr<const Buffer> memory,
               std::shared_ptr<const void> charge)
      : charge_(std::move(charge)), memory_(std::move(memory)), host_(std::move(host)), event_(std::move(event)) {}
  const void* data() const override { return host_.data_ptr(); }
  size_t size() const override { return host_.numel() * host_.element_size(); }
  // Polls on a writer thread (c10::Event::synchronize is not in every PyTorch version).
  void wait_ready() const override {
    while (event_ && !event_->query()) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  bool ready() const override { return !event_ || event_->query(); }
  bool charged() const override { return charge_ != nullptr || (memory_ && memory_->charged()); }

 private:
  std::shared_ptr<const void> charge_;    // released after the bytes below are freed
  std::shared_ptr<const Buffer> memory_;  // host_'s bytes when opdump allocated them; outlives host_
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

std::shared_ptr<Buffer> host_copy(const at::Tensor& t, DumpSink* dump) {
  const size_t bytes = static_cast<size_t>(t.numel()) * t.element_size();
  if (t.device().is_cpu()) {
    // Into opdump's own memory (the dump writer's reused copy memory, or a HeapBuffer: large blocks are
    // unmapped once done with), not the framework allocator's, whose freed blocks would stay in the
    // process's heaps.
    std::shared_ptr<const Buffer> memory;
    uint8_t* bytes_at;
    if (dump) {
      CopyBytes copy_memory = dump->allocate_copy(bytes);
      bytes_at = copy_memory.data;
      memory = std::move(copy_memory.owner);
    } else {
      auto heap = std::make_shared<HeapBuffer>(bytes);
      bytes_at = heap->mutable_data();
      memory = std::move(heap);
    }
    at::Tensor copy = at::from_blob(bytes_at, t.sizes(), at::TensorOptions().dtype(t.scalar_type()));
    copy.copy_(t);
    return std::make_shared<TensorBuffer>(std::move(copy), nullptr, std::move(memory), nullptr);
  }
  std::shared_ptr<const void> charge = dump ? dump->charge(bytes) : nullptr;
  at::Tensor pinned =
      at::empty(t.sizes(), t.options().device(at::kCPU).pinned_memory(true).memory_format(at::MemoryFormat::Contiguous));
  pinned.copy_(t, /*non_blocking=*/true);
  return std::make_shared<TensorBuffer>(std::move(pinned), record_event(t.device()), nullptr, std::move(charge));
}

at::Tensor copy_contiguous_host(const at::Tensor& t) {
  at::Tensor copy(at::detail::empty_cpu(t.sizes(), t.scalar_type()));
  if (t.numel()) std::memcpy(copy.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()) * t.element_size());
  return copy;
}

uint64_t stream_of(const at::Tensor& t) {
  if (!t.defined() || t.device().is_cpu()) return 0;
  return static_cast<uint64_t>(c10::impl::getDeviceGuardImpl(t.device().type())->getStream(t.device()).id());
}

std::string undumpable_reason(const at::Tensor& t) {
  if (!t.defined()) return std::string(kUndefinedPlaceholder) + " (no value was passed)";
  if (t.layout() != at::kStrided) {
    std::ostringstream layout;
    layout << t.layout();
    return "layout " + layout.str() + " is not dumped (only strided tensors are)";
  }
  if (t.is_quantized()) return std::string("quantized dtype ") + c10::toString(t.scalar_type()) + " is not dumped";
  if (t.is_meta()) return "meta tensor: it has no data";
  DType dtype;
  if (!dtype_of(t.scalar_type(), &dtype)) return std::string("dtype ") + c10::toString(t.scalar_type()) + " has no dump format";
  return {};
}

DumpTensor dump_copy(const at::Tensor& t) {
  if (std::string why = undumpable_reason(t); !why.empty()) return placeholder_tensor(std::move(why), t.defined());
  DType dtype;
  dtype_of(t.scalar_type(), &dtype);
  auto copy = host_copy(t.detach());
  return data_tensor(TensorView{copy->data(), dtype, Shape(t.sizes().begin(), t.sizes().end())}, copy);
}

namespace {

// A tensor whose statistics are reduced on its device: staged with the op's others (device_batch.h)
// where it is small enough, else reduced on its own.
struct ToStage {
  size_t slot;
  at::Tensor tensor;
};

void capture_one(const at::Tensor& t, DumpSink& dumper, StatsCache& cache, ReductionBatcher& batcher,
                 PendingWork& barrier, std::vector<DumpTensor>& out, std::vector<ToStage>& to_stage,
                 uint64_t* stream_id, const WrittenStorages* written,
                 std::optional<QuietAten>& quiet) {
  if (std::string why = undumpable_reason(t); !why.empty()) {
    out.push_back(placeholder_tensor(std::move(why), t.defined()));  // keeps slot numbers aligned with the op's tensors
    return;
  }
  DType dtype;
  dtype_of(t.scalar_type(), &dtype);
  if (!t.device().is_cpu()) *stream_id = stream_of(t);
  const AdapterSettings& settings = dumper.settings();
  DumpTensor d;
  d.view = TensorView{nullptr, dtype, Shape(t.sizes().begin(), t.sizes().end())};
  if (t.numel() == 0 && !(settings.tensors || settings.bin_files)) {
    // Nothing to read: the Dumper writes the row of an empty view itself. On a device the reduction
    // would still launch a dozen kernels (cuDNN's empty batch-norm reserve: ~200 us of host time
    // per backward op on an H200).
    out.push_back(std::move(d));
    return;
  }
  const bool on_device = !t.device().is_cpu() || settings.device_path_on_cpu;
  // Only host statistics of a contiguous tensor run no ATen op (copies, detach, device reductions do).
  if (!quiet && (on_device || settings.tensors || settings.bin_files || !t.is_contiguous()))
    quiet.emplace();
  if (settings.tensors || settings.bin_files) {
    // Counted against max_inflight_mb before it is allocated: an op's input copies wait for its
    // outputs, and each op nested in it holds copies of its own.
    auto copy = host_copy(t.detach(), &dumper);
    d.view.data = copy->data();
    d.owner = copy;
  }
  if (on_device && (settings.statistics || !(settings.tensors || settings.bin_files))) {
    d.bytes_read = static_cast<uint64_t>(t.numel()) * t.element_size();  // (reduced on the device each time)
    if (batcher.batched(t))
      to_stage.push_back(ToStage{out.size(), t.detach()});
    else
      d.deferred_stats = device_stats(t.detach());
  } else if (!(settings.tensors || settings.bin_files)) {
    const bool now = written && std::find(written->begin(), written->end(), storage_of(t)) != written->end();
    bool made = false;
    std::shared_ptr<LazyStats> stats = cache.lookup_or_add(t, dtype, dumper.stats_options(), now, barrier, &made);
    if (made) d.bytes_read = stats->bytes();
    // Charged against max_inflight_mb only while the statistics still hold the tensor: computed ones
    // (remembered from an earlier op, or computed at once where host work runs inline) hold none of its memory.
    d.pending_bytes = stats->done() ? 0 : stats->bytes();
    d.deferred_stats = std::move(stats);
  }
  out.push_back(std::move(d));
}

}  // namespace

void capture_tensors(const std::vector<at::Tensor>& tensors, DumpSink& dumper, StatsCache& cache,
                     ReductionBatcher& batcher, PendingWork& barrier, std::vector<DumpTensor>& out,
                     uint64_t* stream_id, const WrittenStorages* written,
                     const std::vector<bool>* out_buffers) {
  std::optional<QuietAten> quiet;  // made before the first ATen call
  std::vector<ToStage> to_stage;
  out.reserve(out.size() + tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (out_buffers && i < out_buffers->size() && (*out_buffers)[i])
      out.push_back(placeholder_tensor(std::string(kOutBufferPlaceholder) + ": the op overwrites it without reading it"));
    else
      capture_one(tensors[i], dumper, cache, batcher, barrier, out, to_stage, stream_id, written, quiet);
  }
  // One staging call per device (device_path_on_cpu may mix host and device tensors in one op).
  while (!to_stage.empty()) {
    const at::Device device = to_stage.front().tensor.device();
    std::vector<ToStage> here, rest;
    for (ToStage& s : to_stage) (s.tensor.device() == device ? here : rest).push_back(std::move(s));
    std::vector<at::Tensor> staged_tensors;
    for (const ToStage& s : here) staged_tensors.push_back(s.tensor);
    std::vector<StagedTensor> staged = batcher.stage(staged_tensors);
    for (size_t k = 0; k < here.size(); ++k) {
      DumpTensor& d = out[here[k].slot];
      d.pending_bytes = staged[k].bytes;
      d.deferred_stats = batched_stats(std::move(staged[k]));
    }
    to_stage.swap(rest);
  }
}


}  // namespace opdump::pt::detail
