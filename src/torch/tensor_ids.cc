#include "tensor_ids.h"

#include "runtime/runtime_interface.h"

namespace opdump::pt::detail {
namespace {

bool has_storage(const at::Tensor& t) { return t.defined() && t.has_storage() && t.layout() == at::kStrided; }

// Whether a tensor covers the whole of its storage (a copy into a slice is not a copy of it).
bool whole_storage(const at::Tensor& t) {
  return t.storage_offset() == 0 && t.is_contiguous() &&
         static_cast<size_t>(t.numel()) * t.element_size() == t.storage().nbytes();
}

std::atomic<uint64_t> g_generations{1};  // (0: a slot never cached)

}  // namespace

TensorIds::TensorIds(const RuntimeInterface& runtime) : runtime_(runtime), generation_(g_generations.fetch_add(1)) {}

void TensorIds::next_generation_locked() { generation_.store(g_generations.fetch_add(1), std::memory_order_release); }

TensorIds::Entry* TensorIds::entry_locked(const at::Tensor& t, bool* fresh) {
  if (!has_storage(t)) return nullptr;
  const c10::StorageImpl* key = t.storage().unsafeGetStorageImpl();
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    it = entries_.emplace(key, Entry{t.storage().getWeakStorageImpl(), next_++}).first;
    if (fresh) *fresh = true;
  }
  return &it->second;
}

void TensorIds::ids(const std::vector<at::Tensor>& tensors, ThreadCache& cache, List& out,
                    std::vector<std::pair<uint64_t, std::string>>* named) {
  // Most of an op's tensors were seen by an earlier op on this thread (its parameters, the last
  // op's outputs): their ids come from this thread's cache, without the lock and the map.
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
  for (const at::Tensor& t : tensors) {
    if (!has_storage(t)) {
      out.push_back(kNone);
      continue;
    }
    const c10::StorageImpl* key = t.storage().unsafeGetStorageImpl();
    ThreadCache::Slot& slot = cache.slots_[(reinterpret_cast<uintptr_t>(key) >> 4) % ThreadCache::kSlots];
    if (slot.key == key && slot.generation == generation) {
      out.push_back(slot.id);
      continue;
    }
    if (!lock.owns_lock()) lock.lock();
    bool fresh = false;
    Entry* e = entry_locked(t, &fresh);
    out.push_back(e->id);
    if (fresh && named) name_of(t, e->id, *named);
    slot = ThreadCache::Slot{key, e->id, generation};
  }
}

void TensorIds::name_of(const at::Tensor& t, uint64_t id, std::vector<std::pair<uint64_t, std::string>>& named) const {
  std::string name = runtime_.tensor_name(reinterpret_cast<uint64_t>(t.storage().data()));
  if (!name.empty()) named.emplace_back(id, std::move(name));
}

void TensorIds::alias(const at::Tensor& from, const at::Tensor& to) {
  if (!has_storage(from) || !has_storage(to) || !whole_storage(to)) return;
  const c10::StorageImpl* key = to.storage().unsafeGetStorageImpl();
  if (key == from.storage().unsafeGetStorageImpl()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  next_generation_locked();  // `to`'s id changes: no thread's cached one holds
  const Entry source = *entry_locked(from);
  *entry_locked(to) = Entry{to.storage().getWeakStorageImpl(), source.id};
}

void TensorIds::prune() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Before any entry goes: a storage freed here may be made anew at the same address.
  next_generation_locked();
  // (erase moves the entries after it back by one: the iterator it returns is the next one to look at)
  for (auto it = entries_.begin(); it != entries_.end();)
    if (it->second.alive.expired()) it = entries_.erase(it);
    else ++it;
}

}  // namespace opdump::pt::detail
