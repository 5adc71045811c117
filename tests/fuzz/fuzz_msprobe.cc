// libFuzzer target: msprobe's dump.json, with construct.json and stack.json after the first and
// second NUL byte of the input (after expand.h's repetition: nesting a million deep, 100k APIs).
#include <cstddef>
#include <cstdint>
#include <string>

#include "expand.h"
#include "format/msprobe_dump.h"
#include "opdump/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = opdump::fuzz::expand(data, size);
  const size_t a = input.find('\0');
  const size_t b = a == std::string::npos ? a : input.find('\0', a + 1);
  const std::string dump = input.substr(0, a);
  const std::string construct = a == std::string::npos ? "" : input.substr(a + 1, b == std::string::npos ? b : b - a - 1);
  const std::string stack = b == std::string::npos ? "" : input.substr(b + 1);
  try {
    (void)opdump::parse_msprobe_dump(dump, construct, stack, "fuzz/dump.json");
  } catch (const opdump::Error&) {
  }
  try {
    (void)opdump::parse_msprobe_calls(dump, "fuzz/dump.json");  // what replay reads
  } catch (const opdump::Error&) {
  }
  return 0;
}
