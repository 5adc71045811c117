// Core throughput, measured side by side in one run on the same buffers:
//  - statistics (max/min/avg/l2norm/nan/inf counts) vs memcpy of the same buffer;
//  - the asynchronous writer vs a raw sequential write of the same bytes;
//  - statistic.csv rows as the writer formats them vs snprintf of the same cells (the writer thread
//    formats every row of a statistics dump: about 1,400 a resnet18 training step).
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
#include "format/statistic_csv.h"
#include "stats/stats.h"
#include "stats/stats_kernels.h"
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
  std::vector<uint16_t> bf16(n), f16(n);
  for (size_t i = 0; i < n; ++i) {
    bf16[i] = float_to_bf16(f32[i]);
    f16[i] = float_to_half(f32[i]);
  }
  std::vector<char> dst(n * 4);

  std::printf("statistics vs memcpy (%zu elements; ratio = stats GB/s / memcpy GB/s of the same bytes)\n", n);
  for (auto [name, data, dtype, bytes] :
       {std::make_tuple("float32", static_cast<const void*>(f32.data()), DType::Float32, n * 4),
        std::make_tuple("bfloat16", static_cast<const void*>(bf16.data()), DType::BFloat16, n * 2),
        std::make_tuple("float16", static_cast<const void*>(f16.data()), DType::Float16, n * 2)}) {
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
    // Each build of the kernels this CPU runs, on the same bytes, one thread: every category, and the default ones.
    size_t nbuilds = 0;
    const detail::KernelBuild* builds = detail::runnable_kernel_builds(&nbuilds);
    for (size_t b = 0; b < nbuilds; ++b) {
      detail::StatsPartial part;
      const double with_signs = best_seconds(5, [&] { builds[b].compute(data, 0, n, dtype, true, &part); });
      const double without = best_seconds(5, [&] { builds[b].compute(data, 0, n, dtype, false, &part); });
      uint64_t nonfinite = 0, beyond = 0;
      double largest = 0;
      const double scan =
          best_seconds(5, [&] { builds[b].range_scan(data, n, dtype, false, &nonfinite, &beyond, &largest); });
      std::printf("  %-8s kernel build %-8s stats %6.2f GB/s, without sign counts %6.2f GB/s; overflow range scan "
                  "%6.2f GB/s\n", name, builds[b].name, bytes / with_signs / 1e9, bytes / without / 1e9,
                  bytes / scan / 1e9);
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

  // Rows of resnet18's statistics dump: a long op name, a 4-d shape, MindSpore's default categories
  // plus avg and count, values from the tensor above.
  const std::vector<StatCategory> categories = {StatCategory::Max, StatCategory::Min, StatCategory::Avg,
                                                StatCategory::L2Norm, StatCategory::Count};
  std::vector<StatisticRow> rows(4096);
  for (size_t i = 0; i < rows.size(); ++i) {
    StatisticRow& r = rows[i];
    r.op.op_type = "convolution_backward";
    r.op.op_name = "Gradients/Default/layer4.1-BasicBlock/conv2-Conv2d/ConvolutionBackward0/convolution_backward-op" +
                   std::to_string(i % 7);
    r.op.timestamp = 1700000000000000 + i;
    r.slot = static_cast<uint32_t>(i % 3);
    r.shape = {512, 512, 3, 3};
    r.data_size = 512 * 512 * 9 * 4;
    r.stats.max = f32[i % n] * 3;
    r.stats.min = -f32[(i + 1) % n] * 3;
    r.stats.sum = f32[(i + 2) % n] * 1000;
    r.stats.sum_sq = 12345.678 + i;
    r.stats.count = r.stats.finite = 2359296;
  }
  std::string out;
  out.reserve(rows.size() * 256);
  const double t_rows = best_seconds(5, [&] {
    out.clear();
    for (const StatisticRow& r : rows) append_statistic_csv_row(out, r, categories);
  });
  std::string ref;
  ref.reserve(rows.size() * 256);
  const double t_ref = best_seconds(5, [&] {
    ref.clear();
    char line[512];
    for (const StatisticRow& r : rows) {
      const int len = std::snprintf(
          line, sizeof line, "%s,%s,0,0,%llu,%s,%u,%llu,%s,\"(%lld,%lld,%lld,%lld)\",%.9g,%.9g,%.17g,%.17g,%llu\n",
          r.op.op_type.c_str(), r.op.op_name.c_str(), static_cast<unsigned long long>(r.op.timestamp), "output", r.slot,
          static_cast<unsigned long long>(r.data_size), "float32", static_cast<long long>(r.shape[0]),
          static_cast<long long>(r.shape[1]), static_cast<long long>(r.shape[2]), static_cast<long long>(r.shape[3]),
          r.stats.max, r.stats.min, r.stats.avg(), r.stats.l2norm(), static_cast<unsigned long long>(r.stats.count));
      ref.append(line, static_cast<size_t>(len));
    }
  });
  std::printf("statistic.csv rows (%zu rows of %zu bytes on average)\n", rows.size(), out.size() / rows.size());
  std::printf("  opdump %6.2f us/row  snprintf of the same cells %6.2f us/row  ratio %.2f\n", t_rows / rows.size() * 1e6,
              t_ref / rows.size() * 1e6, t_ref / t_rows);
  return 0;
}
