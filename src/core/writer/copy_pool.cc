#include "writer/copy_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <new>
#include <utility>

namespace opdump {
namespace {

size_t page_rounded(size_t n) {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}

void unmap_all(const std::multimap<size_t, uint8_t*>& blocks) {
  for (const auto& [mapped, bytes] : blocks) ::munmap(bytes, mapped);
}

}  // namespace

CopyMemory::CopyMemory(std::shared_ptr<CopyPool> pool, uint8_t* bytes, size_t size, size_t mapped,
                       std::shared_ptr<const void> charge)
    : charge_(std::move(charge)), pool_(std::move(pool)), bytes_(bytes), size_(size), mapped_(mapped) {}

CopyMemory::~CopyMemory() {
  if (pool_)
    pool_->give_back(bytes_, mapped_);
  else
    delete[] bytes_;
}

CopyPool::~CopyPool() { unmap_all(spare_); }

std::shared_ptr<CopyMemory> CopyPool::allocate(size_t size, std::shared_ptr<const void> charge) {
  if (size < HeapBuffer::kMappedFrom)
    return std::shared_ptr<CopyMemory>(new CopyMemory(nullptr, new uint8_t[size], size, 0, std::move(charge)));
  const size_t mapped = page_rounded(size);
  std::multimap<size_t, uint8_t*> victims;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last_use_ = Clock::now();
    // The same tensors come back every step: most copies find a block of their own size. A larger one
    // does too, up to a quarter more (beyond that it would hold memory a bigger copy needs).
    auto it = spare_.lower_bound(mapped);
    if (it != spare_.end() && it->first <= mapped + mapped / 4) {
      const size_t found = it->first;
      uint8_t* bytes = it->second;
      spare_.erase(it);
      spare_bytes_ -= found;
      return std::shared_ptr<CopyMemory>(new CopyMemory(shared_from_this(), bytes, size, found, std::move(charge)));
    }
    victims = take_spare_locked(mapped);
    mapped_bytes_ += mapped;
  }
  unmap_all(victims);
  // Populated up front: the block is about to be filled whole, and one call faults it in faster than a
  // page fault per 4 KiB.
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) {
    std::lock_guard<std::mutex> lock(mutex_);
    mapped_bytes_ -= mapped;
    throw std::bad_alloc();
  }
  return std::shared_ptr<CopyMemory>(
      new CopyMemory(shared_from_this(), static_cast<uint8_t*>(p), size, mapped, std::move(charge)));
}

// Spare blocks, largest first, until `room_for` more bytes fit within the limit (or none is left).
std::multimap<size_t, uint8_t*> CopyPool::take_spare_locked(uint64_t room_for) {
  std::multimap<size_t, uint8_t*> taken;
  while (!spare_.empty() && mapped_bytes_ + room_for > limit_) {
    auto last = std::prev(spare_.end());
    spare_bytes_ -= last->first;
    mapped_bytes_ -= last->first;
    taken.insert(*last);
    spare_.erase(last);
  }
  return taken;
}

void CopyPool::give_back(uint8_t* bytes, size_t mapped) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last_use_ = Clock::now();
    // Kept while the pool is open and within its limit (copies charged by open ops can take the
    // memory in use past it: those blocks go back to the system).
    if (!closed_ && mapped_bytes_ <= limit_) {
      spare_.emplace(mapped, bytes);
      spare_bytes_ += mapped;
      return;
    }
    mapped_bytes_ -= mapped;
  }
  ::munmap(bytes, mapped);
}

void CopyPool::trim(Clock::duration idle) {
  std::multimap<size_t, uint8_t*> spare;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (spare_.empty() || Clock::now() - last_use_ < idle) return;
    spare.swap(spare_);
    mapped_bytes_ -= spare_bytes_;
    spare_bytes_ = 0;
  }
  unmap_all(spare);
}

void CopyPool::close() {
  std::multimap<size_t, uint8_t*> spare;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    spare.swap(spare_);
    mapped_bytes_ -= spare_bytes_;
    spare_bytes_ = 0;
  }
  unmap_all(spare);
}

uint64_t CopyPool::spare_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return spare_bytes_;
}

uint64_t CopyPool::mapped_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return mapped_bytes_;
}

}  // namespace opdump
