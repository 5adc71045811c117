// libFuzzer target: the npy reader, then statistics over what it accepted.
#include <cstddef>
#include <cstdint>

#include "opdump/error.h"
#include "format/npy.h"
#include "stats/stats.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    opdump::Tensor t = opdump::parse_npy(std::make_shared<opdump::HeapBuffer>(data, size), "fuzz.npy");
    // Whatever the reader accepted must lie inside the bytes it was given.
    if (t.nbytes() > size) __builtin_trap();
    opdump::StatsOptions so;
    so.threads = 1;
    so.md5 = true;
    (void)opdump::compute_stats(t.view(), so);
  } catch (const opdump::Error&) {
  }
  return 0;
}
