// libFuzzer target: the Ascend bin reader (protobuf header + offsets), then every tensor it
// accepted is read whole.
#include <cstddef>
#include <cstdint>

#include "format/ascend_bin.h"
#include "opdump/error.h"
#include "stats/stats.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto bytes = std::make_shared<opdump::HeapBuffer>(data, size);
    opdump::BinDump d = opdump::parse_ascend_bin(bytes, "fuzz.bin");
    for (const auto* list : {&d.inputs, &d.outputs})
      for (const opdump::BinTensor& t : *list) {
        if (t.offset > size || t.size > size - t.offset) __builtin_trap();
        try {
          opdump::Tensor x = d.tensor(t);
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
