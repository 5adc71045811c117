// Threads a computation may still start, shared by nested parallel loops (compare's row workers
// and the splits of one large tensor inside them): nesting never runs more threads than asked
// for, and a loop that finishes early hands its threads to the ones still running.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>

namespace opdump {

// The cores this process may use, asked once: std::thread::hardware_concurrency() reads sysfs on
// every call (open, read, close: microseconds), and it was asked per tensor and per compared row.
inline unsigned hardware_threads() {
  static const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  return n;
}

// The length of each of `parts` pieces, a whole number of `block`s, that together cover [0, n): piece p
// is [min(n, p * len), min(n, (p + 1) * len)). Rounding n / parts down instead once left the tail out.
inline uint64_t part_length(uint64_t n, uint64_t parts, uint64_t block) {
  return ((n + parts - 1) / parts + block - 1) / block * block;
}

class ThreadBudget {
 public:
  explicit ThreadBudget(unsigned threads) : free_(threads) {}
  // Up to `wanted` threads (0 when none is free); give them back when they are done.
  unsigned take(unsigned wanted) {
    unsigned now = free_.load(std::memory_order_relaxed);
    while (true) {
      const unsigned n = std::min(now, wanted);
      if (n == 0) return 0;
      if (free_.compare_exchange_weak(now, now - n, std::memory_order_acq_rel)) return n;
    }
  }
  void give_back(unsigned n) { free_.fetch_add(n, std::memory_order_acq_rel); }

 private:
  std::atomic<unsigned> free_;
};

}  // namespace opdump
