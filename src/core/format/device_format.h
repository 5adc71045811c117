// Ascend device data formats <-> NCHW / ND (the MindSpore Dump guide's `convert -f NCHW`). Block sizes are read
// from the stored shape, never assumed; the logical shape comes from the bin header's
// original_shape or from the user.
#pragma once
#include <cstdint>

#include "util/tensor.h"

namespace opdump {

// Formats handled (OutputFormat values): NCHW 0, NHWC 1, ND 2, NC1HWC0 3, FRACTAL_Z 4, HWCN 16,
// FRACTAL_NZ 29.
bool device_format_supported(int32_t format);

// Converts a tensor stored in `format` to NCHW (4-D formats) or ND (FRACTAL_NZ), given the
// logical shape (NCHW, or (..., M, N) for FRACTAL_NZ). Throws FormatError (naming `what`) when
// the stored shape does not fit the format and logical shape.
Tensor to_host_format(const Tensor& stored, int32_t format, const Shape& logical, const std::string& what);

// The inverse, for writing device-format data (tests, synthetic dumps). Padding is zero.
// c0 / n0 / m0: block sizes (16 for most types, 32 for 8-bit types).
Tensor to_device_format(const Tensor& host, int32_t format, int64_t c0 = 16, int64_t n0 = 16);

}  // namespace opdump
