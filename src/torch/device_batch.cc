#include "device_batch.h"

#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <cfloat>
#include <limits>
#include <stdexcept>
#include <utility>

#include "capture.h"

namespace opdump::pt::detail {
namespace {

constexpr size_t kStatisticsFeatures = 9;  // nan, +inf, -inf, <0, >0 counts; finite sum, sum of squares; min, -max
constexpr size_t kOverflowFeatures = 2;    // NaN/Inf count, finite values beyond float16's range

size_t features(Reduction what) { return what == Reduction::Statistics ? kStatisticsFeatures : kOverflowFeatures; }

bool batched_type(at::ScalarType s) {
  switch (s) {
    case at::kFloat: case at::kDouble: case at::kHalf: case at::kBFloat16: case at::kBool: case at::kByte:
    case at::kChar: case at::kShort: case at::kInt: case at::kLong:
      return true;
    default:
      return false;
  }
}

// `values` on the host, in memory the device can copy from without waiting for the training.
at::Tensor upload(const std::vector<int64_t>& values, const at::Device& device) {
  at::Tensor host = at::from_blob(const_cast<int64_t*>(values.data()), {static_cast<int64_t>(values.size())}, at::kLong);
  if (device.is_cpu()) return host.clone();
  at::Tensor pinned = at::empty_like(host, host.options().pinned_memory(true));
  pinned.copy_(host);
  return pinned.to(device, /*non_blocking=*/true);
}

}  // namespace

bool ReductionBatcher::batched(const at::Tensor& t) const {
  if (!t.defined() || t.layout() != at::kStrided || !batched_type(t.scalar_type())) return false;
  if (what_ == Reduction::Overflow && !t.is_floating_point()) return false;
  return t.numel() > 0 && t.numel() <= kMaxElements;
}

std::vector<StagedTensor> ReductionBatcher::stage(const std::vector<at::Tensor>& tensors) {
  // One flat copy per dtype: an op's outputs usually share one, so one launch.
  std::vector<ReductionBatch::Piece> pieces;
  std::vector<std::vector<at::Tensor>> flat;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::ScalarType type = tensors[i].scalar_type();
    size_t p = 0;
    while (p < pieces.size() && pieces[p].type != type) ++p;
    if (p == pieces.size()) {
      pieces.push_back(ReductionBatch::Piece{type, {}, {}, {}});
      flat.emplace_back();
    }
    flat[p].push_back(tensors[i].reshape({-1}));
    pieces[p].lengths.push_back(tensors[i].numel());
    pieces[p].tensors.push_back(i);
  }
  for (size_t p = 0; p < pieces.size(); ++p) pieces[p].values = at::cat(flat[p]);
  const at::Device device = tensors.front().device();
  const c10::Stream stream = c10::impl::getDeviceGuardImpl(device.type())->getStream(device);
  std::vector<size_t> members;
  std::shared_ptr<ReductionBatch> batch = open_.lock();
  bool full = false;
  if (!batch || !batch->add(pieces, stream, &members, &full)) {
    batch = std::make_shared<ReductionBatch>(what_, stream);
    batch->add(pieces, stream, &members, &full);  // a new batch takes any op
  }
  if (full) open_.reset(); else open_ = batch;
  std::vector<StagedTensor> out;
  for (size_t i = 0; i < tensors.size(); ++i)
    out.push_back(StagedTensor{batch, members[i], static_cast<uint64_t>(tensors[i].numel()) * tensors[i].element_size()});
  return out;
}

bool ReductionBatch::add(const std::vector<Piece>& pieces, const c10::Stream& stream, std::vector<size_t>* members,
                         bool* full) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (sealed_ || stream != stream_) return false;
  size_t tensors = 0;
  for (const Piece& p : pieces) tensors += p.tensors.size();
  members->assign(tensors, 0);
  for (const Piece& p : pieces) {
    size_t g = 0;
    while (g < groups_.size() && groups_[g].type != p.type) ++g;
    if (g == groups_.size()) groups_.push_back(Group{p.type, {}, {}, {}});
    Group& group = groups_[g];
    group.pieces.push_back(p.values);
    for (size_t k = 0; k < p.tensors.size(); ++k) {
      (*members)[p.tensors[k]] = counts_.size();
      group.members.push_back(counts_.size());
      group.lengths.push_back(p.lengths[k]);
      counts_.push_back(static_cast<uint64_t>(p.lengths[k]));
      elements_ += static_cast<uint64_t>(p.lengths[k]);
    }
  }
  sealed_ = *full = elements_ >= ReductionBatcher::kSealElements;
  return true;
}

at::Tensor ReductionBatch::reduce_group(const Group& g) const {
  at::Tensor x = g.pieces.size() == 1 ? g.pieces.front() : at::cat(g.pieces);
  // Sums and integers in double as the host kernels keep them; float16 and bfloat16 widen exactly.
  if (!at::isFloatingType(g.type)) x = x.to(at::kDouble);
  else if (g.type == at::kHalf || g.type == at::kBFloat16) x = x.to(at::kFloat);
  // Features are stacked feature-major ([features, elements]) and reduced with one segment
  // reduction: the segments' lengths repeat once per feature. Counts are summed in float32,
  // exact below 2^24 elements per segment (kMaxElements).
  const int64_t n = static_cast<int64_t>(g.lengths.size());
  std::vector<int64_t> lengths;
  const size_t repeats = what_ == Reduction::Statistics ? 5 : 2;
  for (size_t r = 0; r < repeats; ++r) lengths.insert(lengths.end(), g.lengths.begin(), g.lengths.end());
  const at::Tensor segments = upload(lengths, x.device());
  auto reduce = [&](const std::vector<at::Tensor>& rows, const char* how) {
    const int64_t k = static_cast<int64_t>(rows.size());
    return at::segment_reduce(at::stack(rows).reshape({-1}), how, segments.narrow(0, 0, k * n), {}, {}, 0,
                              /*unsafe=*/true);  // lengths known good: no check that waits for the device
  };
  const double inf = std::numeric_limits<double>::infinity();
  if (what_ == Reduction::Overflow) {
    const at::Tensor a = x.abs();
    const at::Tensor finite = a.le(x.scalar_type() == at::kDouble ? DBL_MAX : FLT_MAX);  // NaN compares false
    const double limit = float16_limit(g.type);
    return reduce({finite.logical_not().to(at::kFloat), a.gt(limit).logical_and(finite).to(at::kFloat)}, "sum")
        .to(at::kDouble);
  }
  const at::Tensor counts =
      reduce({x.isnan().to(at::kFloat), x.eq(inf).to(at::kFloat), x.eq(-inf).to(at::kFloat), x.lt(0).to(at::kFloat),
              x.gt(0).to(at::kFloat)},
             "sum");
  const at::Tensor finite = at::nan_to_num(x, 0.0, 0.0, 0.0).to(at::kDouble);
  const at::Tensor sums = reduce({finite, finite * finite}, "sum");
  // The largest finite value is minus the smallest of the negated values: one "min" for both ends.
  const at::Tensor ends = reduce({at::nan_to_num(x, inf, inf, inf), at::nan_to_num(x.neg(), inf, inf, inf)}, "min");
  return at::cat({counts.to(at::kDouble), sums, ends.to(at::kDouble)});
}

void ReductionBatch::reduce() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (results_ || !error_.empty()) return;
  sealed_ = true;
  try {
    QuietAten quiet;
    c10::StreamGuard on(stream_);  // behind the staging copies, on the training's stream
    std::vector<at::Tensor> blocks;
    places_.assign(counts_.size(), Place{0, 0, 0});
    size_t offset = 0;
    for (const Group& g : groups_) {
      blocks.push_back(reduce_group(g));
      for (size_t j = 0; j < g.members.size(); ++j) places_[g.members[j]] = Place{offset, g.members.size(), j};
      offset += g.members.size() * features(what_);
    }
    results_ = host_copy(at::cat(blocks));
  } catch (const std::exception& e) {
    error_ = std::string("reducing staged tensors on ") + stream_.device().str() + " failed: " + e.what();
  }
  groups_.clear();  // the staging memory goes back to the allocator, after the reduction in stream order
}

bool ReductionBatch::sealed() {
  std::lock_guard<std::mutex> lock(mutex_);
  return sealed_;
}

bool ReductionBatch::ready() {
  if (arrived_.load(std::memory_order_acquire)) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  return !error_.empty() || (results_ && results_->ready());
}

void ReductionBatch::values(size_t member, double* out) {
  if (!arrived_.load(std::memory_order_acquire)) {
    reduce();
    if (!error_.empty()) throw std::runtime_error(error_);
    results_->wait_ready();
    arrived_.store(true, std::memory_order_release);  // the rows after the first ask the device nothing
  }
  const Place& p = places_[member];
  const double* data = static_cast<const double*>(results_->data());
  for (size_t f = 0; f < features(what_); ++f) out[f] = data[p.offset + f * p.size + p.j];
}

TensorStats ReductionBatch::statistics(size_t member) {
  double v[kStatisticsFeatures];
  values(member, v);
  const double count = static_cast<double>(counts_[member]);
  // In the order of DeviceReduction's blocks: nan, +inf, -inf, <0, >0, ==0, sum, sum of squares, min, max, finite.
  const double block[11] = {v[0], v[1], v[2], v[3], v[4], count - v[0] - v[3] - v[4], v[5], v[6], v[7], -v[8],
                            count - v[0] - v[1] - v[2]};
  return statistics_of(block, counts_[member]);
}

OverflowCheck ReductionBatch::overflow(size_t member) {
  double v[kOverflowFeatures];
  values(member, v);
  return OverflowCheck{static_cast<uint64_t>(v[0]), static_cast<uint64_t>(v[1])};
}

namespace {
class BatchedStats final : public DeferredStats {
 public:
  explicit BatchedStats(StagedTensor staged) : staged_(std::move(staged)) {}
  TensorStats get() override { return staged_.batch->statistics(staged_.member); }

 private:
  StagedTensor staged_;
};
}  // namespace

std::shared_ptr<DeferredStats> batched_stats(StagedTensor staged) {
  return std::make_shared<BatchedStats>(std::move(staged));
}

}  // namespace opdump::pt::detail
