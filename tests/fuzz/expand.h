// Lets a small fuzz input stand for a large file: hostile files are often a few bytes repeated a
// million times (a tuple per byte, a bracket per byte), longer than libFuzzer's inputs.
// An input starting with 0xFE is read as segments [repeat exponent e][length n][n bytes], each
// written 2^e times (e at most 20, the whole at most 8 MiB); any other input is used as it is.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace opdump::fuzz {

inline std::string expand(const uint8_t* data, size_t size) {
  if (size == 0 || data[0] != 0xFE) return std::string(reinterpret_cast<const char*>(data), size);
  constexpr size_t kMax = size_t(8) << 20;
  std::string out;
  for (size_t i = 1; i + 2 <= size;) {
    const unsigned e = data[i] % 21;
    const size_t n = std::min<size_t>(data[i + 1], size - i - 2);
    const std::string chunk(reinterpret_cast<const char*>(data + i + 2), n);
    i += 2 + n;
    for (size_t r = 0; r < (size_t(1) << e) && out.size() + n <= kMax; ++r) out += chunk;
  }
  return out;
}

}  // namespace opdump::fuzz
