// Device data formats (see docs/formats.md and the reference's ascend-bin-format.md).
#include "format/device_format.h"

#include <cstring>

#include "opdump/error.h"

namespace opdump {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

Tensor make(DType dtype, Shape shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  auto buf = std::make_shared<HeapBuffer>(t.nbytes());
  if (t.nbytes()) std::memset(buf->mutable_data(), 0, t.nbytes());
  t.data = buf->data();
  t.buffer = buf;
  return t;
}

char* bytes(Tensor& t) { return static_cast<char*>(const_cast<void*>(t.data)); }
const char* bytes(const Tensor& t) { return static_cast<const char*>(t.data); }

[[noreturn]] void bad(const std::string& what, const std::string& why) { throw FormatError(what, why); }

// Copies between an NCHW tensor and a stored layout, element by element: `offset` gives the
// stored position of logical index (n, c, h, w). to_nchw: stored -> NCHW, else NCHW -> stored.
template <typename Offset>
void copy_nchw(const Tensor& in, Tensor& out, int64_t N, int64_t C, int64_t H, int64_t W, Offset offset, bool to_nchw) {
  const size_t e = dtype_size(in.dtype);
  char* dst = bytes(out);
  const char* src = bytes(in);
  int64_t i = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w, ++i) {
          const int64_t stored = offset(n, c, h, w);
          if (to_nchw) std::memcpy(dst + i * e, src + stored * e, e);
          else std::memcpy(dst + stored * e, src + i * e, e);
        }
}

template <typename Offset>
void gather_nchw(const Tensor& in, Tensor& out, int64_t N, int64_t C, int64_t H, int64_t W, Offset offset) {
  copy_nchw(in, out, N, C, H, W, offset, true);
}

template <typename Offset>
void scatter_nchw(const Tensor& in, Tensor& out, int64_t N, int64_t C, int64_t H, int64_t W, Offset offset) {
  copy_nchw(in, out, N, C, H, W, offset, false);
}

}  // namespace

bool device_format_supported(int32_t f) { return f == 0 || f == 1 || f == 2 || f == 3 || f == 4 || f == 16 || f == 29; }

Tensor to_host_format(const Tensor& in, int32_t format, const Shape& logical, const std::string& what) {
  const Shape& s = in.shape;
  auto need_4d = [&] {
    if (logical.size() != 4) bad(what, "the logical shape must be NCHW (4 dimensions), got " + shape_to_string(logical));
  };
  switch (format) {
    case 0:
    case 2:
      return in;  // NCHW / ND: nothing to do
    case 1: {     // NHWC
      need_4d();
      const int64_t N = logical[0], C = logical[1], H = logical[2], W = logical[3];
      if (s != Shape{N, H, W, C}) bad(what, "NHWC data of shape " + shape_to_string(s) + " does not hold " + shape_to_string(logical));
      Tensor out = make(in.dtype, logical);
      gather_nchw(in, out, N, C, H, W, [&](int64_t n, int64_t c, int64_t h, int64_t w) { return ((n * H + h) * W + w) * C + c; });
      return out;
    }
    case 16: {  // HWCN
      need_4d();
      const int64_t N = logical[0], C = logical[1], H = logical[2], W = logical[3];
      if (s != Shape{H, W, C, N}) bad(what, "HWCN data of shape " + shape_to_string(s) + " does not hold " + shape_to_string(logical));
      Tensor out = make(in.dtype, logical);
      gather_nchw(in, out, N, C, H, W, [&](int64_t n, int64_t c, int64_t h, int64_t w) { return ((h * W + w) * C + c) * N + n; });
      return out;
    }
    case 3: {  // NC1HWC0: (N, C1, H, W, C0)
      need_4d();
      const int64_t N = logical[0], C = logical[1], H = logical[2], W = logical[3];
      if (s.size() != 5 || s[0] != N || s[2] != H || s[3] != W || s[4] <= 0 || s[1] != ceil_div(C, s[4]))
        bad(what, "NC1HWC0 data of shape " + shape_to_string(s) + " does not hold NCHW " + shape_to_string(logical));
      const int64_t C1 = s[1], C0 = s[4];
      Tensor out = make(in.dtype, logical);
      gather_nchw(in, out, N, C, H, W, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
        return (((n * C1 + c / C0) * H + h) * W + w) * C0 + c % C0;
      });
      return out;
    }
    case 4: {  // FRACTAL_Z: (C1*H*W, N1, N0, C0)
      need_4d();
      const int64_t N = logical[0], C = logical[1], H = logical[2], W = logical[3];
      if (s.size() != 4 || s[2] <= 0 || s[3] <= 0 || s[1] != ceil_div(N, s[2]) || s[0] != ceil_div(C, s[3]) * H * W)
        bad(what, "FRACTAL_Z data of shape " + shape_to_string(s) + " does not hold NCHW " + shape_to_string(logical));
      const int64_t N1 = s[1], N0 = s[2], C0 = s[3];
      Tensor out = make(in.dtype, logical);
      gather_nchw(in, out, N, C, H, W, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
        return ((((c / C0) * H + h) * W + w) * N1 + n / N0) * N0 * C0 + (n % N0) * C0 + c % C0;
      });
      return out;
    }
    case 29: {  // FRACTAL_NZ: (..., N1, M1, M0, N0) for a logical (..., M, N)
      if (logical.size() < 2 || s.size() != logical.size() + 2)
        bad(what, "FRACTAL_NZ data of shape " + shape_to_string(s) + " does not hold " + shape_to_string(logical));
      const size_t b = logical.size() - 2;
      const int64_t M = logical[b], N = logical[b + 1];
      const int64_t N1 = s[b], M1 = s[b + 1], M0 = s[b + 2], N0 = s[b + 3];
      int64_t batch = 1;
      for (size_t i = 0; i < b; ++i) {
        if (s[i] != logical[i]) bad(what, "FRACTAL_NZ batch dimensions differ from " + shape_to_string(logical));
        batch *= logical[i];
      }
      if (M0 <= 0 || N0 <= 0 || N1 != ceil_div(N, N0) || M1 != ceil_div(M, M0))
        bad(what, "FRACTAL_NZ data of shape " + shape_to_string(s) + " does not hold " + shape_to_string(logical));
      Tensor out = make(in.dtype, logical);
      const size_t e = dtype_size(in.dtype);
      const int64_t block = N1 * M1 * M0 * N0;
      for (int64_t bi = 0; bi < batch; ++bi)
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            const int64_t src = bi * block + ((n / N0 * M1 + m / M0) * M0 + m % M0) * N0 + n % N0;
            std::memcpy(bytes(out) + ((bi * M + m) * N + n) * e, bytes(in) + src * e, e);
          }
      return out;
    }
  }
  bad(what, "format " + std::to_string(format) + " cannot be converted (NCHW, NHWC, ND, NC1HWC0, FRACTAL_Z, HWCN, FRACTAL_NZ can)");
}

Tensor to_device_format(const Tensor& in, int32_t format, int64_t c0, int64_t n0) {
  const Shape& l = in.shape;
  switch (format) {
    case 0:
    case 2:
      return in;
    case 1: {
      Tensor out = make(in.dtype, {l[0], l[2], l[3], l[1]});
      const int64_t C = l[1], H = l[2], W = l[3];
      scatter_nchw(in, out, l[0], C, H, W, [&](int64_t n, int64_t c, int64_t h, int64_t w) { return ((n * H + h) * W + w) * C + c; });
      return out;
    }
    case 16: {
      Tensor out = make(in.dtype, {l[2], l[3], l[1], l[0]});
      const int64_t N = l[0], C = l[1], W = l[3];
      scatter_nchw(in, out, N, C, l[2], W, [&](int64_t n, int64_t c, int64_t h, int64_t w) { return ((h * W + w) * C + c) * N + n; });
      return out;
    }
    case 3: {
      const int64_t C1 = ceil_div(l[1], c0), H = l[2], W = l[3];
      Tensor out = make(in.dtype, {l[0], C1, H, W, c0});
      scatter_nchw(in, out, l[0], l[1], H, W, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
        return (((n * C1 + c / c0) * H + h) * W + w) * c0 + c % c0;
      });
      return out;
    }
    case 4: {
      const int64_t N1 = ceil_div(l[0], n0), C1 = ceil_div(l[1], c0), H = l[2], W = l[3];
      Tensor out = make(in.dtype, {C1 * H * W, N1, n0, c0});
      scatter_nchw(in, out, l[0], l[1], H, W, [&](int64_t n, int64_t c, int64_t h, int64_t w) {
        return ((((c / c0) * H + h) * W + w) * N1 + n / n0) * n0 * c0 + (n % n0) * c0 + c % c0;
      });
      return out;
    }
    case 29: {
      const size_t b = l.size() - 2;
      const int64_t M = l[b], N = l[b + 1], M0 = c0, N0 = n0, M1 = ceil_div(M, M0), N1 = ceil_div(N, N0);
      Shape shape(l.begin(), l.begin() + static_cast<long>(b));
      int64_t batch = 1;
      for (size_t i = 0; i < b; ++i) batch *= l[i];
      shape.insert(shape.end(), {N1, M1, M0, N0});
      Tensor out = make(in.dtype, shape);
      const size_t e = dtype_size(in.dtype);
      const int64_t block = N1 * M1 * M0 * N0;
      for (int64_t bi = 0; bi < batch; ++bi)
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n)
            std::memcpy(bytes(out) + (bi * block + ((n / N0 * M1 + m / M0) * M0 + m % M0) * N0 + n % N0) * e,
                        bytes(in) + ((bi * M + m) * N + n) * e, e);
      return out;
    }
  }
  throw Error("format " + std::to_string(format) + " is not supported");
}

}  // namespace opdump
