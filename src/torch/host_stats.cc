#include "host_stats.h"
#include "intra_op_split.h"

#include "util/fork.h"
#include "util/log.h"
#include "util/thread_budget.h"
#include "util/own_thread.h"

#include <ATen/Parallel.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <chrono>
#include <pthread.h>

#include <cstring>
#include <thread>

namespace opdump::pt::detail {

LazyWork::~LazyWork() {
  if (pending_ && !done()) barrier_.undone_.fetch_sub(1, std::memory_order_acq_rel);
}

void LazyWork::run() {
  if (done()) return;
  c10::SmallVector<at::Tensor, 2> release;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!done_.load(std::memory_order_relaxed)) {
      compute(release);
      done_.store(true, std::memory_order_release);
      if (pending_) barrier_.undone_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
  if (!release.empty()) barrier_.releases().push(release);
}

namespace {
// A tensor of its own over `t`'s memory: the same storage, sizes, strides and offset, made without
// an op (`t` itself where it has no host storage).
at::Tensor same_memory(const at::Tensor& t) {
  if (!t.defined() || !t.has_storage() || !t.is_cpu()) return t;
  auto impl = c10::make_intrusive<c10::TensorImpl>(c10::Storage(t.storage()), c10::DispatchKeySet(c10::DispatchKey::CPU),
                                                   t.dtype());
  impl->set_sizes_and_strides(t.sizes(), t.strides());
  impl->set_storage_offset(t.storage_offset());
  return at::Tensor(std::move(impl));
}
}  // namespace

LazyStats::LazyStats(PendingWork& barrier, at::Tensor tensor, DType dtype, StatsOptions options)
    : LazyWork(barrier),
      tensor_(std::move(tensor)),
      dtype_(dtype),
      options_(options),
      content_(StatsContent::of(options)),
      bytes_(static_cast<uint64_t>(tensor_.numel()) * tensor_.element_size()) {}

LazyStats::LazyStats(PendingWork& barrier, const TensorStats& done, uint64_t bytes)
    : LazyWork(barrier, /*done=*/true),
      dtype_(DType::Float32),
      content_(StatsContent::of(done)),
      stats_(done),
      bytes_(bytes) {}

LazyStats::LazyStats(PendingWork& barrier, std::shared_ptr<LazyStats> same_values, uint64_t bytes)
    : LazyWork(barrier),
      same_values_(std::move(same_values)),
      dtype_(DType::Float32),
      content_(same_values_->content_),
      bytes_(bytes) {}

namespace {
// The fingerprint of a tensor's elements in memory order (`memory` contiguous or a dense permutation).
uint64_t memory_fingerprint(const at::Tensor& memory) {
  return memory.numel() ? fingerprint(memory.data_ptr(), static_cast<size_t>(memory.numel()) * memory.element_size()) : 0;
}
}  // namespace

void LazyStats::compute(ReleasedTensors& release) {
  if (same_values_) {
    stats_ = same_values_->get();  // counts, sums and squares are the same with a zero's sign changed
    if (stats_.min == 0) stats_.min = 0.0;  // -0 became +0
    if (stats_.max == 0) stats_.max = 0.0;
    same_values_.reset();
    return;
  }
  // A write no op shows (through NumPy) may race the pass: the memory is read again until the
  // fingerprints around a pass agree. Statistics of memory that kept changing describe no state
  // the tensor was in (torn): whatever it holds then is summarized again when an op reads it.
  constexpr int kPasses = 8;
  for (int pass = 1;; ++pass) {
    const uint64_t before = memory_fingerprint(tensor_);
    stats_ = compute_stats(TensorView{tensor_.numel() ? tensor_.data_ptr() : nullptr, dtype_,
                                      Shape(tensor_.sizes().begin(), tensor_.sizes().end())},
                           intra_op_split().applied_to(options_));
    fingerprint_ = memory_fingerprint(tensor_);
    torn_ = fingerprint_ != before;
    if (!torn_ || pass == kPasses) break;
  }
  release.push_back(std::move(tensor_));
}

namespace {
bool finished(const std::weak_ptr<LazyWork>& w) {
  auto s = w.lock();
  return !s || s->done();
}
void forget_work(std::weak_ptr<LazyWork>& w) { w.reset(); }
constexpr auto kLinger = std::chrono::microseconds(1000);  // the background thread's look for more work
}  // namespace

void PendingWork::set_placement(HostWork where, bool overflow) {
  const bool all_cores_busy = at::get_num_threads() >= static_cast<int>(hardware_threads());
  inline_.store(where == HostWork::Inline || (where == HostWork::Auto && (all_cores_busy || overflow)),
                std::memory_order_relaxed);
}

PendingWork::PendingWork() {
  watch_forks();
}

PendingWork::~PendingWork() {
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (!worker_) return;
  if (in_forked_child()) (void)worker_.release();  // the thread stayed in the parent: nothing to join
  else worker_->join();
}

bool PendingWork::in_forked_child() { return opdump::in_forked_child(); }

void PendingWork::add(const c10::StorageImpl* const* storages, size_t count, const std::shared_ptr<LazyWork>& work) {
  if (!defers()) {
    work->run();
    return;
  }
  work->pending_ = true;  // before other threads can see it
  work->added_ = added_.fetch_add(1, std::memory_order_relaxed);
  undone_.fetch_add(1, std::memory_order_acq_rel);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < count; ++i)
      if (storages[i]) spare_.insert(by_storage_, storages[i], std::weak_ptr<LazyWork>(work));
    if (work->in_order()) {
      while (!in_order_.empty() && finished(in_order_.front()))
        in_order_.pop_front();
      in_order_.push_back(work);
    }
    // Most entries are computed by the background thread long before anything forces them.
    if (++adds_since_prune_ >= 4096) prune();
  }
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    if (!worker_) worker_ = std::make_unique<std::thread>([this] { worker_loop(); });
    queue_.push_back(work);
    // A busy or lingering worker finds it without a wake-up call (in-order work too: what it
    // reports is ordered by run_earlier, not by calling the worker at once).
    wake = worker_waiting_;
  }
  if (wake) queue_cv_.notify_one();
}

void PendingWork::worker_loop() {
  become_own_thread("opdump-stats");
  std::vector<std::weak_ptr<LazyWork>> batch;
  std::unique_lock<std::mutex> lock(queue_mutex_);
  while (true) {
    // After a batch the thread lingers a little, looking for more without being called: a dumped
    // step adds work every few hundred microseconds, and each wake-up call is a futex system call
    // and an inter-processor interrupt on the training thread (5 ms per resnet18 step here).
    if (queue_.empty() && !stopping_) {
      queue_cv_.wait_for(lock, kLinger, [this] { return !queue_.empty() || stopping_; });
    }
    if (queue_.empty() && !stopping_) {
      worker_waiting_ = true;
      queue_cv_.wait(lock, [this] { return !queue_.empty() || stopping_; });
      worker_waiting_ = false;
    }
    if (stopping_) return;
    batch.swap(queue_);
    lock.unlock();
    for (auto& w : batch) {
      try {
        if (auto s = w.lock()) s->run();
      } catch (const std::exception& e) {  // left pending: the dump's writer reports it
        log_warning(std::string("statistics or an overflow check not done in the background: ") + e.what());
      }
    }
    batch.clear();
    lock.lock();
  }
}

void PendingWork::prune() {
  for (auto it = by_storage_.begin(); it != by_storage_.end();)
    it = finished(it->second) ? spare_.erase(by_storage_, it, forget_work) : std::next(it);
  in_order_.erase(std::remove_if(in_order_.begin(), in_order_.end(), finished), in_order_.end());
  adds_since_prune_ = 0;
}

void PendingWork::force(const c10::StorageImpl* storage) {
  if (!storage || empty()) return;  // (always empty in a forked child)
  std::vector<std::shared_ptr<LazyWork>> list;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto [it, last] = by_storage_.equal_range(storage);
    while (it != last) {
      if (auto s = it->second.lock()) list.push_back(std::move(s));
      it = spare_.erase(by_storage_, it, forget_work);
    }
  }
  // In the order the work came (a multimap keeps no order among one storage's entries).
  std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a->added_ < b->added_; });
  for (auto& s : list) s->run();
}

void PendingWork::run_earlier(const LazyWork& work) {
  if (!work.pending_) return;  // done inline, in order
  std::vector<std::shared_ptr<LazyWork>> earlier;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& w : in_order_) {
      auto s = w.lock();
      if (!s || s->done()) continue;
      if (s->added_ >= work.added_) break;
      earlier.push_back(std::move(s));
    }
  }
  for (auto& s : earlier) s->run();
}

void PendingWork::force_all() {
  if (in_forked_child()) return;
  std::unordered_multimap<const c10::StorageImpl*, std::weak_ptr<LazyWork>> all;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    all.swap(by_storage_);
    adds_since_prune_ = 0;
  }
  // In the order the work came (overflow checks report the first overflowing ops first), once each.
  std::vector<std::shared_ptr<LazyWork>> works;
  for (auto& [storage, w] : all)
    if (auto s = w.lock(); s && !s->done()) works.push_back(std::move(s));
  std::sort(works.begin(), works.end(), [](const auto& a, const auto& b) { return a->added_ < b->added_; });
  works.erase(std::unique(works.begin(), works.end()), works.end());
  for (auto& s : works) s->run();
}

void ReleaseQueue::push(ReleasedTensors& tensors) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (at::Tensor& t : tensors) tensors_.push_back(std::move(t));
  tensors.clear();
  pending_.store(true, std::memory_order_relaxed);
}

void ReleaseQueue::release() {
  if (!pending_.load(std::memory_order_relaxed)) return;
  std::vector<at::Tensor> dead;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dead.swap(tensors_);
    pending_.store(false, std::memory_order_relaxed);
  }
  dead.clear();  // the tensors' destructors, outside the lock
  // The emptied vector's capacity goes back for the next pushes (a vector grown anew per release
  // was an allocation for about every tensor summarized).
  std::lock_guard<std::mutex> lock(mutex_);
  if (tensors_.empty()) tensors_.swap(dead);
}

uint64_t fingerprint(const void* data, size_t bytes) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  constexpr uint64_t kPrime = 1099511628211ull;
  uint64_t h = 1469598103934665603ull ^ bytes;
  if (bytes < 8) {
    for (size_t i = 0; i < bytes; ++i) {
      h ^= p[i];
      h *= kPrime;
      h ^= h >> 29;
    }
    return h;
  }
  // The same words as ever (32 strides and both ends), in four chains whose multiplies overlap:
  // every step is a bijection of its chain, and so is the fold of the chains for each one, so a
  // change in any one sampled word changes the fingerprint. (It runs for every remembered
  // statistic an op reads, and twice around each pass.)
  constexpr size_t kSamples = 32;
  const size_t stride = (bytes - 8) / kSamples;
  auto word = [p](size_t at) {
    uint64_t w;
    std::memcpy(&w, p + at, 8);
    return w;
  };
  uint64_t a = h, b = h ^ 0x9e3779b97f4a7c15ull, c = h ^ 0xc2b2ae3d27d4eb4full, d = h ^ 0x165667b19e3779f9ull;
  for (size_t i = 0; i < kSamples; i += 4) {
    const size_t at = stride * i;
    a = (a ^ word(at)) * kPrime;
    b = (b ^ word(at + stride)) * kPrime;
    c = (c ^ word(at + 2 * stride)) * kPrime;
    d = (d ^ word(at + 3 * stride)) * kPrime;
  }
  a = (a ^ word(stride * kSamples)) * kPrime;
  b = (b ^ word(bytes - 8)) * kPrime;
  h = a;
  for (const uint64_t lane : {b, c, d}) h = ((h ^ (h >> 29)) * kPrime) ^ lane;
  return h ^ (h >> 29);
}

uint64_t storage_fingerprint(const at::Tensor& t) {
  const c10::StorageImpl* s = storage_of(t);
  return s && s->data() && s->nbytes() ? fingerprint(s->data(), s->nbytes()) : 0;
}

bool StatsCache::describes(const Entry& e, const at::Tensor& t, const at::Tensor& memory) {
  if (e.impl.expired() || e.version != static_cast<uint32_t>(t._version()) ||
      e.data != (t.numel() ? t.data_ptr() : nullptr))
    return false;
  if (!e.fingerprint_of_stats) return e.fingerprint == memory_fingerprint(memory);
  if (!e.stats->done()) return true;
  return e.stats->computed_from(memory_fingerprint(memory));
}

std::shared_ptr<LazyStats> StatsCache::lookup_or_add(const at::Tensor& t, DType dtype, const StatsOptions& options,
                                                     bool now, PendingWork& barrier, bool* made) {
  if (made) *made = false;
  const bool tracked = !t.is_inference();  // inference tensors have no version counter
  // A dense permutation of its memory (a transposed weight, a channels-last activation) has the
  // statistics of that memory in its own order, which need no copy; hashes follow element order.
  const bool in_memory_order = t.is_contiguous() || (!options.md5 && !options.xxhash && t.is_non_overlapping_and_dense());
  at::Tensor c = in_memory_order ? t : t.contiguous();
  auto it = tracked ? entries_.find(t.unsafeGetTensorImpl()) : entries_.end();
  if (it != entries_.end() && it->second.stats->answers(options) && describes(it->second, t, c)) {
    if (now) it->second.stats->get();
    return it->second.stats;
  }
  if (made) *made = true;
  // A copy's statistics are of what was copied, which no write barrier holds for the tensor: its
  // entry keeps the tensor's fingerprint as it is now.
  const std::optional<uint64_t> fp = in_memory_order || !tracked ? std::nullopt : std::optional(memory_fingerprint(c));
  const c10::StorageImpl* storage = storage_of(c);
  // Statistics left for the background thread hold the tensor's memory, not the tensor: a tensor
  // held after its op ended is one that something else still uses. Autograd's AccumulateGrad takes a
  // gradient as the parameter's .grad only while nothing else holds it (.grad set to None, as
  // PyTorch 2.x's zero_grad does by default), and copies it otherwise: every gradient, every step.
  const bool deferred = tracked && !now && barrier.defers();
  auto stats = std::make_shared<LazyStats>(barrier, deferred && in_memory_order ? same_memory(c) : std::move(c), dtype,
                                           options);
  if (deferred) barrier.add(storage, stats);
  else stats->get();
  if (tracked) remember(t, fp, stats, it);  // `it` still valid: only this thread's observer changes entries_
  return stats;
}

void StatsCache::remember_filled(const at::Tensor& t, DType dtype, PendingWork& barrier) {
  if (t.is_inference() || !t.is_contiguous() || t.numel() == 0) return;
  const uint64_t n = static_cast<uint64_t>(t.numel());
  const uint64_t bytes = n * t.element_size();
  TensorStats stats = constant_stats(TensorView{t.data_ptr(), dtype, {1}}, n);
  const bool zeros = stats.count == stats.zero && !std::signbit(stats.max);  // +0, not -0
  remember(t, memory_fingerprint(t), std::make_shared<LazyStats>(barrier, stats, bytes),
           entries_.find(t.unsafeGetTensorImpl()), zeros);
}

StatsCache::Entries::iterator StatsCache::current(const at::Tensor& t) {
  // (a fingerprint reads numel elements from the data pointer: only a contiguous tensor's)
  if (t.is_inference() || !t.is_contiguous()) return entries_.end();
  auto it = entries_.find(t.unsafeGetTensorImpl());
  return it != entries_.end() && describes(it->second, t, t) ? it : entries_.end();
}

bool StatsCache::holds_zeros(const at::Tensor& t) {
  auto it = current(t);
  return it != entries_.end() && it->second.zeros;
}

void StatsCache::share(const at::Tensor& out, const at::Tensor& same, PendingWork& barrier) {
  if (out.is_inference() || !out.is_contiguous() || !same.is_contiguous() || out.scalar_type() != same.scalar_type() ||
      out.sizes() != same.sizes() || !same.device().is_cpu() || out.numel() == 0)
    return;
  auto source = current(same);
  if (source == entries_.end()) return;
  const uint64_t bytes = static_cast<uint64_t>(out.numel()) * out.element_size();
  auto stats = std::make_shared<LazyStats>(barrier, source->second.stats, bytes);
  remember(out, memory_fingerprint(out), std::move(stats), entries_.find(out.unsafeGetTensorImpl()));
}

void StatsCache::alias(const at::Tensor& from, const at::Tensor& to) {
  if (!from.defined() || !to.defined() || from.is_inference() || to.is_inference() ||
      from.unsafeGetTensorImpl() == to.unsafeGetTensorImpl() || !from.has_storage() || !to.has_storage())
    return;
  if (to.scalar_type() != from.scalar_type() || !to.is_alias_of(from) || to.storage_offset() != from.storage_offset() ||
      to.sizes() != from.sizes() || to.strides() != from.strides())
    return;
  auto source = entries_.find(from.unsafeGetTensorImpl());
  if (source == entries_.end()) return;
  const Entry& e = source->second;
  // Of `from` as it is now (the fingerprint is checked when `to` is looked up); `to` shares its version and data.
  const auto version = static_cast<uint32_t>(from._version());
  if (e.impl.expired() || e.version != version || static_cast<uint32_t>(to._version()) != version ||
      e.data != (from.numel() ? from.data_ptr() : nullptr))
    return;
  const std::optional<uint64_t> fp = e.fingerprint_of_stats ? std::nullopt : std::optional(e.fingerprint);
  std::shared_ptr<LazyStats> stats = e.stats;
  const bool zeros = e.zeros;
  remember(to, fp, std::move(stats), entries_.find(to.unsafeGetTensorImpl()), zeros);
}

std::shared_ptr<LazyStats> StatsCache::remembered(const at::Tensor& t) {
  if (!t.device().is_cpu()) return nullptr;
  auto it = current(t);
  return it == entries_.end() ? nullptr : it->second.stats;
}

namespace {
// Whether this thread's floating point keeps denormals: neither flushed to zero when produced nor
// read as zero (x86's MXCSR FTZ and DAZ, Arm's FPCR FZ; torch.set_flush_denormal sets them).
bool denormals_kept() {
#if defined(__x86_64__) || defined(__i386__)
  return (_mm_getcsr() & 0x8040u) == 0;
#elif defined(__aarch64__)
  uint64_t fpcr;
  asm volatile("mrs %0, fpcr" : "=r"(fpcr));
  return (fpcr & (uint64_t(1) << 24)) == 0;
#else
  return false;  // unknown: never derived
#endif
}

// x * factor as the kernel computes it for a tensor of `T` (the scalar converted to T first).
template <typename T>
double product(double x, double factor) {
  return static_cast<double>(static_cast<T>(x) * static_cast<T>(factor));
}
}  // namespace

bool StatsCache::scales_exactly(at::ScalarType type, double factor) {
  if (type == at::kFloat) factor = static_cast<double>(static_cast<float>(factor));  // 0.5 + tiny rounds to 0.5
  return (type == at::kFloat || type == at::kDouble) && factor > 0.5 && factor <= 1.0;
}

void StatsCache::remember_scaled(const at::Tensor& out, LazyStats& before, double factor, PendingWork& barrier) {
  const at::ScalarType type = out.scalar_type();
  if (!scales_exactly(type, factor) || out.is_inference() || !out.is_contiguous() || out.numel() == 0 ||
      !denormals_kept())
    return;
  // Done before the product was taken (the write barrier forced them): pending ones would now read the product.
  if (!before.done()) return;
  TensorStats stats = before.get();
  // (a hash needs the data: dumps that ask for one never get here)
  if (stats.count != static_cast<uint64_t>(out.numel()) || !stats.md5.empty() || !stats.xxhash.empty()) return;
  if (stats.finite) {
    stats.max = type == at::kFloat ? product<float>(stats.max, factor) : product<double>(stats.max, factor);
    stats.min = type == at::kFloat ? product<float>(stats.min, factor) : product<double>(stats.min, factor);
    const double f = type == at::kFloat ? static_cast<double>(static_cast<float>(factor)) : factor;
    stats.sum *= f;
    stats.sum_sq *= f * f;
  }
  const uint64_t bytes = static_cast<uint64_t>(out.numel()) * out.element_size();
  remember(out, memory_fingerprint(out), std::make_shared<LazyStats>(barrier, stats, bytes),
           entries_.find(out.unsafeGetTensorImpl()));
}

void StatsCache::remember(const at::Tensor& t, std::optional<uint64_t> fp, std::shared_ptr<LazyStats> stats,
                          Entries::iterator at, bool zeros) {
  Entry entry{c10::weak_intrusive_ptr<c10::TensorImpl>(t.getIntrusivePtr()),
              static_cast<uint32_t>(t._version()),
              t.numel() ? t.data_ptr() : nullptr,
              fp.value_or(0),
              std::move(stats),
              zeros,
              !fp.has_value()};
  if (at != entries_.end()) at->second = std::move(entry);
  else entries_.emplace(t.unsafeGetTensorImpl(), std::move(entry));
}

void StatsCache::forget(const c10::TensorImpl* impl) {
  if (auto it = entries_.find(impl); it != entries_.end()) entries_.erase(it);
}

void StatsCache::drop_dead() {
  // (erase moves the entries after it back by one: the iterator it returns is the next one to look at)
  for (auto e = entries_.begin(); e != entries_.end();)
    if (e->second.impl.expired()) e = entries_.erase(e);
    else ++e;
}

}  // namespace opdump::pt::detail
