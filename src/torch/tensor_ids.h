// Ids of the tensors ops read and write, for the data flow of the execution order files: one id
// per storage (every view of it shares it), a new id for a new storage, and never one id for two
// storages that lived at the same address (each entry holds a weak reference, so the address is
// not reused while it is listed). Process-wide: backward may run on other threads than forward.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "adapter_internal.h"

namespace opdump::pt::detail {

class TensorIds {
 public:
  static constexpr uint64_t kNone = 0;  // an undefined tensor, or one without storage

  // The id of each tensor of an op's arguments or results, in dump slot order.
  template <typename Values>
  void ids(const Values& values, std::vector<uint64_t>& out) {
    const std::vector<at::Tensor> tensors = tensors_of(values);
    std::lock_guard<std::mutex> lock(mutex_);
    for (const at::Tensor& t : tensors) out.push_back(id_locked(t));
  }
  // `to` holds a copy of `from` made by an op the dump skips (a cast, contiguous, clone): it
  // takes `from`'s id, so that data flow runs through the copy. Partial copies are ignored.
  void alias(const at::Tensor& from, const at::Tensor& to);
  // Forgets storages that died (between iterations).
  void prune();

 private:
  uint64_t id_locked(const at::Tensor& t);
  struct Entry {
    c10::weak_intrusive_ptr<c10::StorageImpl> alive;
    uint64_t id;
  };
  std::mutex mutex_;
  std::unordered_map<const c10::StorageImpl*, Entry> entries_;
  uint64_t next_ = 1;
};

}  // namespace opdump::pt::detail
