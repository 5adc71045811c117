// Memory for host copies waiting to be written, reused from one copy to the next.
//
// A tensor dump copies hundreds of MB per step. Fresh mapped pages cost the training thread a page
// fault and the zeroing of every 4 KiB, and unmapping them costs it again; on resnet18 that held the
// training up more than the copy itself (716 against 1107 MB/s once blocks were reused, same rounds).
// Spare blocks are kept while copies keep coming, within `limit` bytes mapped in all (the writer's
// max_inflight_mb: the copies in flight are charged against it anyway, so the dump's memory stays
// within the cap), and go back to the system once no copy has been made for a while.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "util/tensor.h"

namespace opdump {

class CopyPool;

// Writable bytes of a host copy: counted as in flight until freed (the charge it holds), and for
// copies of HeapBuffer::kMappedFrom bytes and more, a mapped block of the pool that goes back to it.
class CopyMemory final : public Buffer {
 public:
  CopyMemory(const CopyMemory&) = delete;
  CopyMemory& operator=(const CopyMemory&) = delete;
  ~CopyMemory() override;
  const void* data() const override { return block_->data(); }
  uint8_t* mutable_data() { return block_->mutable_data(); }
  size_t size() const override { return size_; }
  bool charged() const override { return charge_ != nullptr; }

 private:
  friend class CopyPool;
  CopyMemory(std::shared_ptr<CopyPool> pool, std::unique_ptr<HeapBuffer> block, size_t size,
             std::shared_ptr<const void> charge);
  std::shared_ptr<const void> charge_;  // released last, once the bytes are back
  std::shared_ptr<CopyPool> pool_;      // null: a block of its own (small copies, from the heap)
  std::unique_ptr<HeapBuffer> block_;   // page-rounded for pooled copies: size_ or a little more
  size_t size_;
};

class CopyPool : public std::enable_shared_from_this<CopyPool> {
 public:
  using Clock = std::chrono::steady_clock;
  static std::shared_ptr<CopyPool> create(uint64_t limit) { return std::shared_ptr<CopyPool>(new CopyPool(limit)); }
  CopyPool(const CopyPool&) = delete;
  CopyPool& operator=(const CopyPool&) = delete;

  // `size` writable bytes holding `charge` (AsyncWriter::charge) until freed. Throws std::bad_alloc.
  std::shared_ptr<CopyMemory> allocate(size_t size, std::shared_ptr<const void> charge);
  // Unmaps the spare blocks when no block was taken or given back for `idle`.
  void trim(Clock::duration idle);
  // Unmaps the spare blocks; blocks given back from now on are unmapped at once.
  void close();

  uint64_t spare_bytes() const;   // mapped, waiting for a copy
  uint64_t mapped_bytes() const;  // spare and in use

 private:
  friend class CopyMemory;
  explicit CopyPool(uint64_t limit) : limit_(limit) {}
  using Blocks = std::multimap<size_t, std::unique_ptr<HeapBuffer>>;  // by size, page-rounded
  void give_back(std::unique_ptr<HeapBuffer> block);
  Blocks take_spare_locked(uint64_t room_for);

  const uint64_t limit_;
  mutable std::mutex mutex_;
  Blocks spare_;
  uint64_t spare_bytes_ = 0, mapped_bytes_ = 0;
  bool closed_ = false;
  Clock::time_point last_use_ = Clock::now();
};

}  // namespace opdump
