// libFuzzer target: the Ascend bin reader (protobuf header + offsets), then every tensor it
// accepted is read whole. What was read is checked against the input itself, not against the
// sizes the header declares.
#include <cstddef>
#include <cstdint>

#include "format/ascend_bin.h"
#include "opdump/error.h"
#include "stats/stats.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto bytes = std::make_shared<opdump::HeapBuffer>(data, size);
    opdump::BinDump d = opdump::parse_ascend_bin(bytes, "fuzz.bin");
    const auto* begin = static_cast<const uint8_t*>(bytes->data());
    for (const auto* list : {&d.inputs, &d.outputs})
      for (const opdump::BinTensor& t : *list) {
        if (t.offset > size || t.size > size - t.offset) __builtin_trap();
        try {
          opdump::Tensor x = d.tensor(t);
          uint64_t n;
          if (__builtin_mul_overflow(x.numel(), opdump::dtype_size(x.dtype), &n)) __builtin_trap();
          // Stored bytes widen at most 4 times (8-bit floats to float32); they come from the input.
          if (n > 4 * t.size || !x.buffer || x.buffer->size() < n) __builtin_trap();
          const auto* at = static_cast<const uint8_t*>(x.data);
          if (x.buffer == d.file && (at < begin || n > size || at > begin + size - n)) __builtin_trap();
          opdump::StatsOptions so;
          so.threads = 1;
          (void)opdump::compute_stats(x.view(), so);
        } catch (const opdump::Error&) {
        }
      }
  } catch (const opdump::Error&) {
  }
  return 0;
}
