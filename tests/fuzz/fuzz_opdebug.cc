// libFuzzer target: CANN's Opdebug overflow records, as bin (the first input byte even) or as
// MindSpore's JSON conversion (odd).
#include <cstddef>
#include <cstdint>

#include "format/opdebug.h"
#include "opdump/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  try {
    if (data[0] % 2 == 0) {
      auto bytes = std::make_shared<opdump::HeapBuffer>(data + 1, size - 1);
      (void)opdump::parse_opdebug_bin(bytes, "fuzz.opdebug").overflowed();
    } else {
      (void)opdump::parse_opdebug_json(reinterpret_cast<const char*>(data + 1), size - 1, "fuzz.json").overflowed();
    }
  } catch (const opdump::Error&) {
  }
  return 0;
}
