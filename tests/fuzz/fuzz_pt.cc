// libFuzzer target: torch.save files (msprobe's .pt tensors): the zip directory, the restricted
// unpickler and the view checks, then statistics over what was accepted.
#include <cstddef>
#include <cstdint>

#include "format/torch_pt.h"
#include "opdump/error.h"
#include "stats/stats.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    opdump::Tensor t = opdump::parse_torch_pt(std::make_shared<opdump::HeapBuffer>(data, size), "fuzz.pt");
    opdump::StatsOptions so;
    so.threads = 1;
    (void)opdump::compute_stats(t.view(), so);  // reads every byte the reader said is there
  } catch (const opdump::Error&) {
  }
  return 0;
}
