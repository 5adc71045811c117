#include "util/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace opdump {
namespace {

struct DTypeInfo {
  DType type;
  const char* name;
  size_t size;
};

constexpr DTypeInfo kInfo[kDTypeCount] = {
    {DType::Bool, "bool", 1},          {DType::Int8, "int8", 1},
    {DType::Int16, "int16", 2},        {DType::Int32, "int32", 4},
    {DType::Int64, "int64", 8},        {DType::UInt8, "uint8", 1},
    {DType::UInt16, "uint16", 2},      {DType::UInt32, "uint32", 4},
    {DType::UInt64, "uint64", 8},      {DType::Float16, "float16", 2},
    {DType::BFloat16, "bfloat16", 2},  {DType::Float32, "float32", 4},
    {DType::Float64, "float64", 8},    {DType::Complex64, "complex64", 8},
    {DType::Complex128, "complex128", 16},
};

}  // namespace

size_t dtype_size(DType t) { return kInfo[static_cast<int>(t)].size; }
std::string_view dtype_name(DType t) { return kInfo[static_cast<int>(t)].name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& i : kInfo)
    if (name == i.name) return i.type;
  if (name == "float" || name == "float_") return DType::Float32;
  if (name == "double") return DType::Float64;
  if (name == "half") return DType::Float16;
  return std::nullopt;
}

bool dtype_is_float(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}
bool dtype_is_complex(DType t) { return t == DType::Complex64 || t == DType::Complex128; }

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: value = mant * 2^-24
      float f = std::ldexp(static_cast<float>(mant), -24);
      std::memcpy(&bits, &f, 4);
      bits |= sign;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return sign | (absx > 0x7f800000u ? 0x7e00 : 0x7c00);
  if (absx >= 0x477ff000u) return sign | 0x7c00;  // rounds to >= 65520: inf
  if (absx < 0x38800000u) {                      // subnormal or zero in half
    float a;
    std::memcpy(&a, &absx, 4);
    return sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f));  // a / 2^-24
  }
  uint32_t mant = absx & 0x7fffffu;
  uint32_t exp = (absx >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // round to nearest even
  return sign | static_cast<uint16_t>(h);
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace opdump

namespace opdump {

float float8_e5m2_to_float(uint8_t v) { return half_to_float(static_cast<uint16_t>(v) << 8); }  // float16's top byte

float float8_e4m3fn_to_float(uint8_t v) {
  const float sign = (v & 0x80) ? -1.0f : 1.0f;
  const int exponent = (v >> 3) & 0xF, mantissa = v & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa) / 8.0f, -6);
  return sign * std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
}

float float8_e8m0_to_float(uint8_t v) {
  if (v == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  return std::ldexp(1.0f, static_cast<int>(v) - 127);
}

float hifloat8_to_float(uint8_t v) {
  const float sign = (v & 0x80) ? -1.0f : 1.0f;
  if (v == 0x00) return 0.0f;
  if (v == 0x80) return std::numeric_limits<float>::quiet_NaN();
  if ((v & 0x7F) == 0x6F) return sign * std::numeric_limits<float>::infinity();
  int exponent = 0, mantissa_bits = 3;
  if (v & 0x60) {  // dot 01, 10, 11: exponent width D = 2, 3, 4
    const int width = ((v >> 5) & 0x3) + 1;
    mantissa_bits = 5 - width;
    const int magnitude = (1 << (width - 1)) + ((v & 0x0F) >> mantissa_bits);
    exponent = (v & 0x10) ? -magnitude : magnitude;
  } else if ((v & 0x70) == 0x10) {  // dot 001: D = 1, exponent +-1
    exponent = (v & 0x08) ? -1 : 1;
  } else if ((v & 0x78) == 0x08) {  // dot 0001: D = 0, exponent 0
    exponent = 0;
  } else {  // dot 0000: denormal 2^(M - 23), M = 1..7
    return sign * std::ldexp(1.0f, (v & 0x7) - 23);
  }
  const int mantissa = v & ((1 << mantissa_bits) - 1);
  return sign * std::ldexp(1.0f + static_cast<float>(mantissa) / static_cast<float>(1 << mantissa_bits), exponent);
}

}  // namespace opdump
