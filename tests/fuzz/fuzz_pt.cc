// libFuzzer target: torch.save files (msprobe's .pt tensors): the zip directory, the restricted
// unpickler and the view checks, then statistics over what was accepted. Inputs starting with 'P'
// (after expand.h's repetition) are a data.pkl alone: the unpickler is fuzzed without a zip, and
// inputs can nest or repeat a million times.
#include <cstddef>
#include <cstdint>

#include "expand.h"
#include "format/torch_pt.h"
#include "opdump/error.h"
#include "stats/stats.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = opdump::fuzz::expand(data, size);
  try {
    if (!input.empty() && input[0] == 'P') {
      (void)opdump::detail::unpickle_kind(input.data() + 1, input.size() - 1, "fuzz.pkl");
      return 0;
    }
    opdump::Tensor t =
        opdump::parse_torch_pt(std::make_shared<opdump::HeapBuffer>(input.data(), input.size()), "fuzz.pt");
    // What was accepted is backed by as many bytes as it claims (a stride-0 view may claim more
    // than the file holds, but never more than its buffer).
    uint64_t n;
    if (__builtin_mul_overflow(t.numel(), opdump::dtype_size(t.dtype), &n)) __builtin_trap();
    if (!t.buffer || t.buffer->size() < n) __builtin_trap();
    opdump::StatsOptions so;
    so.threads = 1;
    (void)opdump::compute_stats(t.view(), so);  // reads every byte the reader said is there
  } catch (const opdump::Error&) {
  }
  return 0;
}
