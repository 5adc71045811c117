#include "writer/copy_pool.h"

#include <unistd.h>

#include <iterator>
#include <utility>

namespace opdump {
namespace {

size_t page_rounded(size_t n) {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}

}  // namespace

CopyMemory::CopyMemory(std::shared_ptr<CopyPool> pool, std::unique_ptr<HeapBuffer> block, size_t size,
                       std::shared_ptr<const void> charge)
    : charge_(std::move(charge)), pool_(std::move(pool)), block_(std::move(block)), size_(size) {}

CopyMemory::~CopyMemory() {
  if (pool_) pool_->give_back(std::move(block_));
}

std::shared_ptr<CopyMemory> CopyPool::allocate(size_t size, std::shared_ptr<const void> charge) {
  if (size < HeapBuffer::kMappedFrom)
    return std::shared_ptr<CopyMemory>(
        new CopyMemory(nullptr, std::make_unique<HeapBuffer>(size), size, std::move(charge)));
  const size_t rounded = page_rounded(size);
  Blocks victims;  // unmapped once the lock is released
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last_use_ = Clock::now();
    // The same tensors come back every step: most copies find a block of their own size. A larger one
    // does too, up to a quarter more (beyond that it would hold memory a bigger copy needs).
    auto it = spare_.lower_bound(rounded);
    if (it != spare_.end() && it->first <= rounded + rounded / 4) {
      spare_bytes_ -= it->first;
      std::unique_ptr<HeapBuffer> block = std::move(it->second);
      spare_.erase(it);
      return std::shared_ptr<CopyMemory>(new CopyMemory(shared_from_this(), std::move(block), size, std::move(charge)));
    }
    victims = take_spare_locked(rounded);
    mapped_bytes_ += rounded;
  }
  victims.clear();
  std::unique_ptr<HeapBuffer> block;
  try {
    block = std::make_unique<HeapBuffer>(rounded);  // mapped pages of its own, faulted in up front
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    mapped_bytes_ -= rounded;
    throw;
  }
  return std::shared_ptr<CopyMemory>(new CopyMemory(shared_from_this(), std::move(block), size, std::move(charge)));
}

// Spare blocks, largest first, until `room_for` more bytes fit within the limit (or none is left).
CopyPool::Blocks CopyPool::take_spare_locked(uint64_t room_for) {
  Blocks taken;
  while (!spare_.empty() && mapped_bytes_ + room_for > limit_) {
    auto last = std::prev(spare_.end());
    spare_bytes_ -= last->first;
    mapped_bytes_ -= last->first;
    taken.insert(spare_.extract(last));
  }
  return taken;
}

void CopyPool::give_back(std::unique_ptr<HeapBuffer> block) {
  const size_t rounded = block->size();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last_use_ = Clock::now();
    // Kept while the pool is open and within its limit (copies charged by open ops can take the
    // memory in use past it: those blocks go back to the system).
    if (!closed_ && mapped_bytes_ <= limit_) {
      spare_.emplace(rounded, std::move(block));
      spare_bytes_ += rounded;
      return;
    }
    mapped_bytes_ -= rounded;
  }
  block.reset();  // unmapped outside the lock
}

void CopyPool::trim(Clock::duration idle) {
  Blocks spare;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (spare_.empty() || Clock::now() - last_use_ < idle) return;
    spare.swap(spare_);
    mapped_bytes_ -= spare_bytes_;
    spare_bytes_ = 0;
  }
}

void CopyPool::close() {
  Blocks spare;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    spare.swap(spare_);
    mapped_bytes_ -= spare_bytes_;
    spare_bytes_ = 0;
  }
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
