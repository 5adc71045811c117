// Ids of the tensors ops read and write, for the data flow of the execution order files: one id
// per storage (every view of it shares it), a new id for a new storage, and never one id for two
// storages that lived at the same address (each entry holds a weak reference, so the address is
// not reused while it is listed). Process-wide: backward may run on other threads than forward.
#pragma once
#include <ATen/ATen.h>
#include <c10/util/SmallVector.h>
#include <c10/util/flat_hash_map.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/runtime_interface.h"

namespace opdump::pt::detail {

class TensorIds {
 public:
  explicit TensorIds(const RuntimeInterface& runtime);
  static constexpr uint64_t kNone = 0;  // an undefined tensor, or one without storage
  // An op's ids: held inline for the usual few tensors (no allocation per op on the training thread).
  using List = c10::SmallVector<uint64_t, 8>;

  // The ids a thread looked up, without the lock: each valid while the TensorIds' generation is
  // what it was when it was cached (prune and alias change it before they drop an entry or change
  // an id; generations are unique in the process, whichever TensorIds they are of). Kept in the
  // thread's own state: a thread_local here would be one more TLS lookup per op.
  class ThreadCache {
   public:
    ThreadCache() = default;
    ThreadCache(const ThreadCache&) = delete;
    ThreadCache& operator=(const ThreadCache&) = delete;

   private:
    friend class TensorIds;
    struct Slot {
      const c10::StorageImpl* key = nullptr;
      uint64_t id = 0;
      uint64_t generation = 0;
    };
    static constexpr size_t kSlots = 256;
    Slot slots_[kSlots];
  };

  // The id of each of an op's tensors (tensors_of its arguments or results, in dump slot order),
  // appended to `out`, found in `cache` where this thread looked them up before.
  // `named` gets (id, name) of tensors seen for the first time that have a name (parameters and
  // buffers of registered models, Runtime::tensor_name).
  void ids(const std::vector<at::Tensor>& tensors, ThreadCache& cache, List& out,
           std::vector<std::pair<uint64_t, std::string>>* named = nullptr);
  // `to` holds a copy of `from` made by an op the dump skips (a cast, contiguous, clone): it
  // takes `from`'s id, so that data flow runs through the copy. Partial copies are ignored.
  void alias(const at::Tensor& from, const at::Tensor& to);
  // Forgets storages that died (between iterations).
  void prune();

 private:
  struct Entry {
    c10::weak_intrusive_ptr<c10::StorageImpl> alive;
    uint64_t id;
  };
  // nullptr for tensors without storage; valid until the next entry is added (entries move when the table grows)
  Entry* entry_locked(const at::Tensor& t, bool* fresh = nullptr);
  void next_generation_locked();
  void name_of(const at::Tensor& t, uint64_t id, std::vector<std::pair<uint64_t, std::string>>& named) const;
  const RuntimeInterface& runtime_;  // the names of tensors (its snapshot: no lock)
  std::mutex mutex_;
  // Open addressing, entries in one array (no node per storage: storages die and are replaced every
  // iteration; a lookup is one cache miss).
  using Entries = ska::flat_hash_map<const c10::StorageImpl*, Entry>;
  Entries entries_;
  uint64_t next_ = 1;
  std::atomic<uint64_t> generation_;
};

}  // namespace opdump::pt::detail
