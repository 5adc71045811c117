#include "tensor_ids.h"

namespace opdump::pt::detail {
namespace {

bool has_storage(const at::Tensor& t) { return t.defined() && t.has_storage() && t.layout() == at::kStrided; }

// Whether a tensor covers the whole of its storage (a copy into a slice is not a copy of it).
bool whole_storage(const at::Tensor& t) {
  return t.storage_offset() == 0 && t.is_contiguous() &&
         static_cast<size_t>(t.numel()) * t.element_size() == t.storage().nbytes();
}

}  // namespace

uint64_t TensorIds::id_locked(const at::Tensor& t) {
  if (!has_storage(t)) return kNone;
  const c10::StorageImpl* key = t.storage().unsafeGetStorageImpl();
  auto it = entries_.find(key);
  if (it != entries_.end()) return it->second.id;
  const uint64_t id = next_++;
  entries_.emplace(key, Entry{t.storage().getWeakStorageImpl(), id});
  return id;
}

void TensorIds::alias(const at::Tensor& from, const at::Tensor& to) {
  if (!has_storage(from) || !has_storage(to) || !whole_storage(to)) return;
  const c10::StorageImpl* key = to.storage().unsafeGetStorageImpl();
  if (key == from.storage().unsafeGetStorageImpl()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t id = id_locked(from);
  auto it = entries_.find(key);
  if (it != entries_.end()) it->second.id = id;
  else entries_.emplace(key, Entry{to.storage().getWeakStorageImpl(), id});
}

void TensorIds::prune() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.alive.expired()) it = entries_.erase(it);
    else ++it;
  }
}

}  // namespace opdump::pt::detail
