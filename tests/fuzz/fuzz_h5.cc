// libFuzzer target: .h5 dumps (the torch_npu 1.5 dumper's layout). The bytes become a file (HDF5
// reads files), which the dump index walks; every tensor it accepts is read and summarized, as
// compare, stats and convert would.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "expand.h"
#include "opdump/error.h"
#include "read/h5_index.h"
#include "stats/stats.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("OPDUMP_H5_READ_TIMEOUT", "2", 1);  // a library loop ends the reading child, not the fuzzer
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/opdump_fuzz_h5_" + std::to_string(::getpid()) + ".h5";
  const std::string input = opdump::fuzz::expand(data, size);
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(input.data(), 1, input.size(), f);
    std::fclose(f);
  } else {
    return 0;
  }
  try {
    std::vector<opdump::DumpEntry> entries;
    opdump::index_h5_dump(path, opdump::DumpPosition{}, entries);
    for (const auto& e : entries) {
      if (!e.unreadable.empty() || !e.placeholder.empty()) continue;
      try {
        const opdump::Tensor t = opdump::load_h5_entry(e);
        if (t.shape != e.shape || t.dtype != e.dtype) __builtin_trap();  // read as indexed
        uint64_t n;
        if (__builtin_mul_overflow(t.numel(), opdump::dtype_size(t.dtype), &n) || !t.buffer || t.buffer->size() < n)
          __builtin_trap();
        opdump::StatsOptions so;
        so.threads = 1;
        (void)opdump::compute_stats(t.view(), so);
      } catch (const opdump::Error&) {
      }
    }
  } catch (const opdump::Error&) {
  }
  std::remove(path.c_str());
  return 0;
}
