// Tensors as the Dumper takes them: dtypes, host copies (pinned and asynchronous for device
// tensors) and statistics computed on the tensor's own device.
#include "capture.h"

#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <chrono>
#include <limits>
#include <thread>

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

}  // namespace opdump::pt::detail
