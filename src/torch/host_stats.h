// Statistics of CPU tensors, computed lazily on a background thread from the live tensor (no
// copy; the training thread does not wait), and remembered per tensor version so that an op's output
// is not summarized again as the next op's input. When the framework's intra-op threads take every
// core there is no core for that thread: it would preempt one of them, and every parallel region
// of an op would wait for the preempted one; then the work is done as each op ends, on its own
// thread, split over the intra-op threads (the op's data still in cache).
//
// Lazy is safe because whatever could write a tensor first finishes its pending statistics:
// an op about to write a storage (schema "(a!)" arguments, batch_norm's running statistics),
// through the tensor itself or any view or alias of it, forces those reading that storage in
// its start callback. When dumping stops every pending one is forced; in an iteration that is
// not dumped the callback stays on, forcing them on writes, until none is left.
#pragma once
#include <ATen/ATen.h>
#include <c10/util/SmallVector.h>
#include <c10/util/flat_hash_map.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <deque>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "config/config.h"
#include "dumper/dump_sink.h"
#include "stats/stats.h"
#include "node_recycler.h"

namespace opdump::pt::detail {

class PendingWork;

// The tensors a piece of lazy work is done with (most hold one or two: no allocation for them).
using ReleasedTensors = c10::SmallVectorImpl<at::Tensor>;

// Work on tensors done later (host statistics, overflow checks): on whichever thread asks first,
// once. The tensors it held are handed to its barrier's ReleaseQueue when it is done.
class LazyWork {
 public:
  virtual ~LazyWork();
  void run();
  bool done() const { return done_.load(std::memory_order_acquire); }
  // Work whose findings are reported in the order it was added (overflow checks: overflow_number
  // dumps the first ones in execution order), whichever thread computes it: see run_earlier().
  virtual bool in_order() const { return false; }

 protected:
  explicit LazyWork(PendingWork& barrier, bool done = false) : barrier_(barrier) {
    done_.store(done, std::memory_order_relaxed);
  }
  PendingWork& barrier() const { return barrier_; }
  // Called once, under the work's lock; moves the tensors it no longer needs into `release`.
  virtual void compute(ReleasedTensors& release) = 0;

 private:
  PendingWork& barrier_;
  std::mutex mutex_;
  std::atomic<bool> done_{false};
  bool pending_ = false;  // counted by the barrier until done
  uint64_t added_ = 0;    // the order the barrier got it in (force_all runs the rest in that order)
  friend class PendingWork;
};

class LazyStats final : public LazyWork, public DeferredStats {
 public:
  LazyStats(PendingWork& barrier, at::Tensor tensor, DType dtype, StatsOptions options);
  LazyStats(PendingWork& barrier, const TensorStats& done, uint64_t bytes);  // already known
  // The statistics of a tensor holding `same_values`' elements with every zero +0 (x + 0, each
  // x = -0 becoming +0): the same numbers, read from `same_values` instead of a second pass.
  LazyStats(PendingWork& barrier, std::shared_ptr<LazyStats> same_values, uint64_t bytes);
  // Computes on first call (on whichever thread asks first); later calls return the result.
  TensorStats get() override {
    run();
    return stats_;
  }
  uint64_t bytes() const { return bytes_; }
  // Whether these statistics hold all a pass with `wanted` would (its hashes and sign counts):
  // a tensor's remembered statistics outlive the dump that asked for them.
  bool answers(const StatsOptions& wanted) const { return content_.answers(wanted); }
  // Whether memory of this fingerprint holds what the statistics were computed from (valid once
  // done(); false for statistics not computed from a tensor of their own, and for a tensor written
  // while it was read).
  bool computed_from(uint64_t fingerprint) const { return !torn_ && fingerprint_ == fingerprint; }

 private:
  void compute(ReleasedTensors& release) override;
  at::Tensor tensor_;
  uint64_t fingerprint_ = 0;  // written before done(), read after
  bool torn_ = false;         // ...as this: the memory changed while the pass read it
  std::shared_ptr<LazyStats> same_values_;
  DType dtype_;
  StatsOptions options_;
  StatsContent content_;  // set when made: the background thread may compute stats_ meanwhile
  TensorStats stats_;
  uint64_t bytes_ = 0;
};

// Tensors whose statistics are done, released on a training thread: dropping the last
// reference to a tensor that owns its Python object needs the GIL, which a background thread
// must never wait for (the training thread may hold it while waiting for that thread).
class ReleaseQueue {
 public:
  void push(ReleasedTensors& tensors);  // moves them all in
  void release();  // on training threads (op callbacks, iteration ends)

 private:
  std::mutex mutex_;
  std::vector<at::Tensor> tensors_;  // keeps its capacity from one release to the next
  std::atomic<bool> pending_{false};
};

// Lazy work not yet done, by the storages it reads (process-wide: a tensor may be written on
// another thread than the one that captured it): the write barrier. Each is also handed at once to
// a background thread: the sooner it is done, the sooner the tensors are released, and tensors
// held longer than the training would hold them cost it fresh memory (page faults, cold caches:
// +15% on resnet18 with statistics computed 64 rows late, +4% at once).
// The adapter's observer owns one (it serves every thread); its background thread stops when it
// is destroyed.
class PendingWork {
 public:
  PendingWork();
  ~PendingWork();
  PendingWork(const PendingWork&) = delete;
  PendingWork& operator=(const PendingWork&) = delete;
  // Queues `work` for the background thread, or does it now on this thread (host_work: inline,
  // or auto with every core taken by the framework's intra-op threads).
  void add(const std::vector<const c10::StorageImpl*>& storages, const std::shared_ptr<LazyWork>& work) {
    add(storages.data(), storages.size(), work);
  }
  void add(const c10::StorageImpl* storage, const std::shared_ptr<LazyWork>& work) { add(&storage, 1, work); }
  // Decided once, when dumping starts, on the thread that starts it: ops on other threads (the
  // autograd engine's) may see another intra-op thread count, and a dump whose work were partly
  // inline and partly queued would report overflows out of order.
  // `auto` runs the work inline when torch's intra-op threads take every core, and for overflow
  // checks (`overflow`), whose operands' checks are then done when an op ends: most outputs are
  // known clean from their bounds at once, with nothing queued or held.
  void set_placement(HostWork where, bool overflow = false);
  bool runs_inline() const { return inline_.load(std::memory_order_relaxed); }
  // Whether work added now is left for the background thread (not done at once on the caller's).
  bool defers() const { return !in_forked_child() && !runs_inline(); }
  // Does, now and on this thread, the pending work reading `storage` (or any of `storages`).
  void force(const c10::StorageImpl* storage);
  void force(c10::ArrayRef<const c10::StorageImpl*> storages) {
    for (const c10::StorageImpl* s : storages) force(s);
  }
  void force_all();
  // Does, now and on this thread, the in-order work added before `work` that is not done yet, in
  // the order it was added: called by in-order work about to report something, so that what it
  // reports comes after what earlier work reports, wherever each was computed (a check forced by
  // the write barrier runs before the background thread reaches older ones). Work only ever waits
  // for older work here, so no two threads wait for each other.
  void run_earlier(const LazyWork& work);
  // No work left to do.
  bool empty() const { return in_forked_child() || undone_.load(std::memory_order_acquire) == 0; }
  // Tensors done with, to be released on a training thread.
  ReleaseQueue& releases() { return releases_; }

 private:
  friend class LazyWork;
  void add(const c10::StorageImpl* const* storages, size_t count, const std::shared_ptr<LazyWork>& work);
  void prune();  // drops entries already done

  std::mutex mutex_;
  // One node per (storage, work), not a node and a vector per storage: an allocation less per tensor.
  using ByStorage = std::unordered_multimap<const c10::StorageImpl*, std::weak_ptr<LazyWork>>;
  ByStorage by_storage_;
  NodeRecycler<ByStorage> spare_;  // under mutex_
  std::atomic<size_t> undone_{0};
  std::atomic<uint64_t> added_{0};
  std::deque<std::weak_ptr<LazyWork>> in_order_;  // in-order work in the order it came (under mutex_)
  // The background thread's queue.
  void worker_loop();
  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::vector<std::weak_ptr<LazyWork>> queue_;
  bool worker_waiting_ = false;
  bool stopping_ = false;
  std::unique_ptr<std::thread> worker_;  // started with the first work
  // In a forked child (DataLoader workers) the background thread is gone and locks may have
  // been held at the fork: the child does not dump, so it leaves all of this alone.
  static bool in_forked_child();
  size_t adds_since_prune_ = 0;
  ReleaseQueue releases_;
  std::atomic<bool> inline_{false};
};

// Statistics of tensors already summarized (per thread): keyed by TensorImpl, valid while the
// impl lives and its version, data pointer and fingerprint are unchanged.
class StatsCache {
 public:
  // The statistics of `t` (contiguous CPU tensor or not), lazily computed unless `now`.
  // (Pending ones go to `barrier`.) `made`, when given: whether they are new, a pass over `t` (not remembered).
  std::shared_ptr<LazyStats> lookup_or_add(const at::Tensor& t, DType dtype, const StatsOptions& options, bool now,
                                           PendingWork& barrier, bool* made = nullptr);
  // `t` was just filled with one value (zero_, fill_): its statistics follow from one element.
  void remember_filled(const at::Tensor& t, DType dtype, PendingWork& barrier);
  // Whether `t`, as it is now, holds +0 only, as zero_ or fill_(0) left it.
  bool holds_zeros(const at::Tensor& t);
  // `out` was just made `zeros + same` (a gradient accumulated into the `.grad` an optimizer
  // zeroed): it holds `same`'s elements, zeros as +0, and takes `same`'s statistics when they are
  // known for `same` as it is now. Both contiguous, of one dtype and shape.
  void share(const at::Tensor& out, const at::Tensor& same, PendingWork& barrier);
  // The statistics remembered for `t` as it is now (nullptr when none are).
  std::shared_ptr<LazyStats> remembered(const at::Tensor& t);
  // `out` was just multiplied in place by `factor` (mul_ by a scalar: SGD's and Adam's momentum
  // buffers, RMSprop's averages, AdamW's decay), `before` the statistics of what it held. Its
  // statistics follow from those without a pass over it where that is exact -- float32 or float64
  // (each product rounded once), `factor` in (0.5, 1] (no element rounds to zero, changes sign or
  // overflows, so counts stay; min and max are the rounded products of the old ones), denormals
  // neither flushed nor read as zero -- and are remembered then; sums are the old ones times
  // `factor` (squares times its square), within the rounding of the pass's own float32 lanes.
  void remember_scaled(const at::Tensor& out, LazyStats& before, double factor, PendingWork& barrier);
  // `to` was just made from `from` by an op that returns its input under another tensor object sharing its
  // version counter (op_kinds::aliases_input: detach, alias, a view). Where both read the same elements in
  // the same order (one storage, offset, sizes, strides and dtype), `to` takes what is remembered of `from`,
  // checked as any entry is when `to` is looked up: autograd gives a parameter its gradient detached
  // from the one its backward op returned (PyTorch 2.x's zero_grad sets .grad to None), which was
  // summarized as that op's output, and the optimizer reads it next.
  void alias(const at::Tensor& from, const at::Tensor& to);
  // Whether a product by `factor` of a tensor of `type` can take such statistics (the dtype and factor
  // conditions above).
  static bool scales_exactly(at::ScalarType type, double factor);
  void forget(const c10::TensorImpl* impl);
  void drop_dead();  // entries of tensors that died
  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    c10::weak_intrusive_ptr<c10::TensorImpl> impl;
    uint32_t version;
    const void* data;
    uint64_t fingerprint;
    std::shared_ptr<LazyStats> stats;
    bool zeros = false;  // filled with +0
    // The fingerprint is the one `stats` takes as it is computed (an op's output is not sampled on
    // the training thread when it is captured, only when it is looked up after its statistics are done).
    bool fingerprint_of_stats = false;
  };
  // Whether `e` describes `t` (`memory` its elements in memory order) as it is now: the tensor
  // lives at this version and data pointer, and its sampled words are those the statistics were
  // computed from. Statistics still pending need no samples: every write through an op forces
  // them first (the write barrier), so what they will be computed from is what `t` holds now.
  static bool describes(const Entry& e, const at::Tensor& t, const at::Tensor& memory);
  // Open addressing, entries in one array: a lookup is one cache miss, not a bucket, a node and its
  // chain (the map's lookups were the largest single item of the op path with both cores training).
  using Entries = ska::flat_hash_map<const c10::TensorImpl*, Entry>;
  // The entry of a contiguous `t` when it describes `t` as it is now (entries_.end() when none does).
  Entries::iterator current(const at::Tensor& t);
  // `at`: the tensor's entry if it has one (entries_.end() when not known).
  // `fp`: the fingerprint of `t`'s memory now; nullopt: the one `stats` takes as it is computed.
  void remember(const at::Tensor& t, std::optional<uint64_t> fp, std::shared_ptr<LazyStats> stats,
                Entries::iterator at, bool zeros = false);
  Entries entries_;  // (no node per entry: activations die and are replaced every iteration)
};

// The storage a tensor reads (nullptr for tensors without one).
inline const c10::StorageImpl* storage_of(const at::Tensor& t) {
  return t.defined() && t.has_storage() ? t.storage().unsafeGetStorageImpl() : nullptr;
}

// A cheap fingerprint of a buffer: 32 sampled 8-byte words and both ends. Some kernels write
// tensors without bumping their version (native_batch_norm's running statistics in PyTorch
// 1.x), and NumPy views write them unseen; such whole-buffer writes change the samples, so
// what is remembered of a tensor is not served stale.
uint64_t fingerprint(const void* data, size_t bytes);
// That of a host tensor's whole storage (0 without one).
uint64_t storage_fingerprint(const at::Tensor& t);

}  // namespace opdump::pt::detail
