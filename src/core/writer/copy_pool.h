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
// blocks of HeapBuffer::kMappedFrom bytes and more, pages from the pool that go back to it.
class CopyMemory final : public Buffer {
 public:
  CopyMemory(const CopyMemory&) = delete;
  CopyMemory& operator=(const CopyMemory&) = delete;
  ~CopyMemory() override;
  const void* data() const override { return bytes_; }
  uint8_t* mutable_data() { return bytes_; }
  size_t size() const override { return size_; }
  bool charged() const override { return charge_ != nullptr; }

 private:
  friend class CopyPool;
  CopyMemory(std::shared_ptr<CopyPool> pool, uint8_t* bytes, size_t size, size_t mapped,
             std::shared_ptr<const void> charge);
  std::shared_ptr<const void> charge_;  // released last, once the bytes are back
  std::shared_ptr<CopyPool> pool_;      // null: heap bytes (small copies)
  uint8_t* bytes_;
  size_t size_, mapped_;
};

class CopyPool : public std::enable_shared_from_this<CopyPool> {
 public:
  using Clock = std::chrono::steady_clock;
  static std::shared_ptr<CopyPool> create(uint64_t limit) { return std::shared_ptr<CopyPool>(new CopyPool(limit)); }
  ~CopyPool();
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
  void give_back(uint8_t* bytes, size_t mapped);
  std::multimap<size_t, uint8_t*> take_spare_locked(uint64_t room_for);

  const uint64_t limit_;
  mutable std::mutex mutex_;
  std::multimap<size_t, uint8_t*> spare_;  // by mapped size
  uint64_t spare_bytes_ = 0, mapped_bytes_ = 0;
  bool closed_ = false;
  Clock::time_point last_use_ = Clock::now();
};

}  // namespace opdump
