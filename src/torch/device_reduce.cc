#include "device_reduce.h"

#include <limits>

#include "capture.h"

namespace opdump::pt::detail {
namespace {

at::Tensor statistics_parts(const at::Tensor& t) {
  at::Tensor x = t.is_complex() ? t.abs() : t;
  if (x.scalar_type() == at::kBool) x = x.to(at::kByte);
  const bool floating = x.is_floating_point();
  auto count = [](const at::Tensor& mask) { return mask.sum(at::kDouble); };
  auto zero = [&] { return at::zeros({}, x.options().dtype(at::kDouble)); };
  at::Tensor finite = floating ? x.isfinite() : at::ones_like(x, x.options().dtype(at::kBool));
  std::vector<at::Tensor> parts;
  parts.push_back(floating ? count(x.isnan()) : zero());
  parts.push_back(floating ? count(x.isinf().logical_and(x > 0)) : zero());
  parts.push_back(floating ? count(x.isinf().logical_and(x < 0)) : zero());
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
  return at::stack(parts);
}

at::Tensor overflow_parts(const at::Tensor& t, const at::Device& device) {
  if (!can_overflow(t)) return at::zeros({2}, at::TensorOptions().dtype(at::kDouble).device(device));
  at::Tensor x = t.is_complex() ? at::view_as_real(t) : t;
  at::Tensor finite = x.isfinite();
  const double limit = float16_limit(x.scalar_type());
  return at::stack({finite.logical_not().sum(at::kDouble), x.abs().gt(limit).logical_and(finite).sum(at::kDouble)})
      .to(device);
}

}  // namespace

double float16_limit(at::ScalarType type) { return type == at::kHalf ? 65503.5 : 65504.0; }

size_t reduction_size(Reduction r) { return r == Reduction::Statistics ? 11 : 2; }

bool can_overflow(const at::Tensor& t) {
  return t.defined() && t.layout() == at::kStrided && (t.is_floating_point() || t.is_complex());
}

namespace {
class DeviceStats final : public DeferredStats {
 public:
  explicit DeviceStats(const at::Tensor& t) : reduction_(Reduction::Statistics, std::vector<at::Tensor>{t}) {}
  TensorStats get() override { return reduction_.statistics(0); }

 private:
  DeviceReduction reduction_;
};
}  // namespace

std::shared_ptr<DeferredStats> device_stats(const at::Tensor& t) { return std::make_shared<DeviceStats>(t); }

DeviceReduction::DeviceReduction(Reduction what, const std::vector<at::Tensor>& tensors) : what_(what) {
  std::vector<at::Tensor> parts;
  at::Device device = at::kCPU;
  for (const at::Tensor& t : tensors)
    if (t.defined()) {
      device = t.device();
      break;
    }
  for (const at::Tensor& t : tensors) {
    counts_.push_back(t.defined() ? static_cast<uint64_t>(t.numel()) : 0);
    parts.push_back(what == Reduction::Statistics ? statistics_parts(t) : overflow_parts(t, device));
  }
  // One asynchronous copy of every block.
  values_ = host_copy(parts.empty() ? at::zeros({0}, at::TensorOptions().dtype(at::kDouble).device(device))
                                    : at::cat(parts));
}

const double* DeviceReduction::block(size_t i) const {
  values_->wait_ready();
  return static_cast<const double*>(values_->data()) + i * reduction_size(what_);
}

TensorStats statistics_of(const double* v, uint64_t count) {
  TensorStats s;
  s.count = count;
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
  return s;
}

TensorStats DeviceReduction::statistics(size_t i) const { return statistics_of(block(i), counts_[i]); }

OverflowCheck DeviceReduction::overflow(size_t i) const {
  const double* v = block(i);
  return OverflowCheck{static_cast<uint64_t>(v[0]), static_cast<uint64_t>(v[1])};
}

}  // namespace opdump::pt::detail
