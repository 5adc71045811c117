// Core throughput, measured side by side in one run on the same buffers:
//  - statistics (max/min/avg/l2norm/nan/inf counts) vs memcpy of the same buffer;
//  - the asynchronous writer vs a raw sequential write of the same bytes.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "debug_scenes/debug_scenes.h"
#include "format/npy.h"
#include "stats/stats.h"
#include "writer/async_writer.h"

using namespace opdump;
using Clock = std::chrono::steady_clock;

template <typename F>
double best_seconds(int reps, F&& f) {
  double best = 1e9;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::stoull(argv[1]) : size_t(64) << 20;  // elements
  const std::string dir = argc > 2 ? argv[2] : "/tmp/opdump-bench";
  std::filesystem::create_directories(dir);

  std::vector<float> f32(n);
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0, 1);
  for (auto& x : f32) x = d(rng);
  std::vector<uint16_t> bf16(n);
  for (size_t i = 0; i < n; ++i) bf16[i] = float_to_bf16(f32[i]);
  std::vector<char> dst(n * 4);

  std::printf("statistics vs memcpy (%zu elements; ratio = stats GB/s / memcpy GB/s of the same bytes)\n", n);
  for (auto [name, data, dtype, bytes] :
       {std::make_tuple("float32", static_cast<const void*>(f32.data()), DType::Float32, n * 4),
        std::make_tuple("bfloat16", static_cast<const void*>(bf16.data()), DType::BFloat16, n * 2)}) {
    const double copy = best_seconds(5, [&] { std::memcpy(dst.data(), data, bytes); });
    // Every category, then the default ones (max, min, l2norm: no sign counts), on one thread.
    for (auto [threads, sign_counts] : {std::pair{1u, true}, std::pair{2u, true}, std::pair{1u, false}}) {
      StatsOptions o;
      o.threads = threads;
      o.sign_counts = sign_counts;
      volatile double sink = 0;
      const double stat = best_seconds(5, [&] { sink = compute_stats(TensorView{data, dtype, {int64_t(n)}}, o).sum; });
      std::printf("  %-8s threads=%u  stats%s %6.2f GB/s  memcpy %6.2f GB/s  ratio %.2f\n", name, threads,
                  sign_counts ? "" : " (no sign counts)", bytes / stat / 1e9, bytes / copy / 1e9, copy / stat);
    }
    // The overflow modes' check (NaN/Inf and float16's range), one thread, as a dump runs it.
    volatile uint64_t flagged = 0;
    const double check = best_seconds(5, [&] { flagged = check_overflow(TensorView{data, dtype, {int64_t(n)}}).nan_or_inf; });
    std::printf("  %-8s overflow check %6.2f GB/s  memcpy %6.2f GB/s  ratio %.2f\n", name, bytes / check / 1e9,
                bytes / copy / 1e9, copy / check);
  }

  // Writer vs raw sequential write: 64 files of n*4/64 bytes each.
  const size_t files = 64, per = n * 4 / files;
  auto raw = [&] {
    for (size_t i = 0; i < files; ++i) {
      std::string p = dir + "/raw" + std::to_string(i);
      int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0640);
      size_t off = 0;
      const char* src = reinterpret_cast<const char*>(f32.data()) + i * per;
      while (off < per) off += static_cast<size_t>(::write(fd, src + off, per - off));
      ::close(fd);
    }
  };
  auto async = [&] {
    AsyncWriter w(WriterOptions{2, uint64_t(1) << 30});
    for (size_t i = 0; i < files; ++i) {
      auto view = std::make_shared<HeapBuffer>(0);
      struct Slice : Buffer {
        const void* p;
        size_t s;
        const void* data() const override { return p; }
        size_t size() const override { return s; }
      };
      auto slice = std::make_shared<Slice>();
      slice->p = reinterpret_cast<const char*>(f32.data()) + i * per;
      slice->s = per;
      w.write_file(dir + "/w" + std::to_string(i) + ".npy", npy_header(DType::Float32, {int64_t(per / 4)}), slice);
    }
    w.drain();
  };
  const double t_raw = best_seconds(3, raw), t_async = best_seconds(3, async);
  std::printf("writer vs raw sequential write (%zu files, %.0f MB in all, %s)\n", files, n * 4 / 1e6, dir.c_str());
  std::printf("  raw write %6.2f GB/s  opdump writer %6.2f GB/s  ratio %.2f\n", n * 4 / t_raw / 1e9,
              n * 4 / t_async / 1e9, t_raw / t_async);
  std::filesystem::remove_all(dir);
  return 0;
}
