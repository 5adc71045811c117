// The product-sum bounds of product_sum_bound.h.
#include "debug_scenes/product_sum_bound.h"

#include <cmath>

#include "debug_scenes/range_bound.h"

namespace opdump {
namespace {

constexpr double kUnknown = kNoBound;

constexpr NamedRule<ProductSum> kOps[] = {
    {"conv1d", ProductSum::Convolution},
    {"conv2d", ProductSum::Convolution},
    {"conv3d", ProductSum::Convolution},
    {"conv_transpose1d", ProductSum::ConvolutionTransposed},
    {"conv_transpose2d", ProductSum::ConvolutionTransposed},
    {"conv_transpose3d", ProductSum::ConvolutionTransposed},
    {"convolution", ProductSum::ConvolutionEither},
    {"_convolution", ProductSum::ConvolutionEither},
    {"convolution_backward", ProductSum::ConvolutionBackward},
    {"mm", ProductSum::MatrixProduct},
    {"bmm", ProductSum::MatrixProduct},
    {"matmul", ProductSum::MatrixProduct},
    {"addmm", ProductSum::AddMatrixProduct},
    {"baddbmm", ProductSum::AddMatrixProduct},
    {"linear", ProductSum::Linear},
};

using Tensor = ProductSumOperands::Tensor;

// Elements per index of dimension `d`: the terms a reduction over every other dimension sums.
int64_t per_index(const Tensor& t, size_t d) {
  if (!t.present || d >= t.dim || t.sizes[d] <= 0) return 0;
  return t.numel() / t.sizes[d];
}

// A convolution's weight is (out channels, in channels / groups, kernel...), transposed (in
// channels, out channels / groups, kernel...). An output element sums one product per weight element
// of its output channel; an input gradient's element at most one per weight element of its input
// channel; a weight gradient's element one per batch element and position of the output (the
// input, transposed); a bias gradient's one per batch element and output position.
int64_t convolution_terms(const Tensor& weight, bool transposed) { return per_index(weight, transposed ? 1 : 0); }

int64_t convolution_backward_terms(const ProductSumOperands& a, size_t output) {
  const Tensor &grad_output = a.tensor[0], &input = a.tensor[1], &weight = a.tensor[2];
  if (!weight.present || weight.dim < 3) return 0;
  switch (output) {
    case 0: return per_index(weight, a.transposed ? 0 : 1);
    case 1: {  // the batch is summed too: only batched operands (as many dimensions as the weight)
      const Tensor& positions = a.transposed ? input : grad_output;
      return positions.dim == weight.dim ? per_index(positions, 1) : 0;
    }
    case 2: return grad_output.dim == weight.dim ? per_index(grad_output, 1) : 0;
    default: return 0;
  }
}

// The rounding of K products summed in any order, by any algorithm that computes the same sum
// (oneDNN's Winograd convolutions transform their operands first), stays far below this widening
// while K * u is small; beyond, no bound. Its constant part covers operands rounded to bfloat16 first
// (float32 matrix products allowed a lower precision: 2^-8 relative each).
double widening(int64_t terms, DType dtype) {
  const double u = dtype == DType::Float64 ? 0x1p-53 : 0x1p-24;
  const double growth = 64.0 * static_cast<double>(terms + 2) * u;
  return growth > 0.25 ? kUnknown : 1.0 + 0x1p-6 + growth;
}

}  // namespace

int64_t ProductSumOperands::Tensor::numel() const {
  int64_t n = 1;
  for (size_t d = 0; d < dim; ++d) n *= sizes[d];
  return n;
}

ProductSum product_sum_of(std::string_view op_type) { return rule_named(kOps, op_type); }

int product_sum_transposed_arg(ProductSum op) {
  switch (op) {
    case ProductSum::ConvolutionEither: return 6;
    case ProductSum::ConvolutionBackward: return 7;
    default: return -1;
  }
}

namespace {
// The number of products summed into one element of output `output` of the op (0 when the rule cannot
// tell: shapes it does not expect, an output the op has not).
int64_t product_sum_terms(ProductSum op, const ProductSumOperands& a, size_t output) {
  if (op != ProductSum::ConvolutionBackward && output != 0) return 0;
  switch (op) {
    case ProductSum::None: return 0;
    case ProductSum::Convolution: return convolution_terms(a.tensor[1], false);
    case ProductSum::ConvolutionTransposed: return convolution_terms(a.tensor[1], true);
    case ProductSum::ConvolutionEither: return convolution_terms(a.tensor[1], a.transposed);
    case ProductSum::ConvolutionBackward: return convolution_backward_terms(a, output);
    case ProductSum::MatrixProduct:  // the first operand's last dimension is summed over
      return a.tensor[0].present && a.tensor[0].dim >= 1 && a.tensor[1].present ? a.tensor[0].sizes[a.tensor[0].dim - 1] : 0;
    case ProductSum::AddMatrixProduct:
      return a.tensor[1].present && a.tensor[1].dim >= 2 && a.tensor[2].present ? a.tensor[1].sizes[a.tensor[1].dim - 1] : 0;
    case ProductSum::Linear:  // weight (out features, in features)
      return a.tensor[1].present && a.tensor[1].dim >= 1 ? a.tensor[1].sizes[a.tensor[1].dim - 1] : 0;
  }
  return 0;
}
}  // namespace

double product_sum_bound(ProductSum op, const ProductSumOperands& a, size_t output, DType dtype) {
  if (dtype != DType::Float32 && dtype != DType::Float64) return kUnknown;
  const int64_t terms = product_sum_terms(op, a, output);
  if (terms <= 0) return kUnknown;
  const double k = static_cast<double>(terms);
  auto bound = [](const Tensor& t) { return t.bound; };
  auto bias = [](const Tensor& t) { return t.present ? t.bound : 0.0; };
  double b = kUnknown;
  switch (op) {
    case ProductSum::None: return kUnknown;
    case ProductSum::Convolution:
    case ProductSum::ConvolutionTransposed:
    case ProductSum::ConvolutionEither:
    case ProductSum::Linear:
      b = k * bound(a.tensor[0]) * bound(a.tensor[1]) + bias(a.tensor[2]);
      break;
    case ProductSum::ConvolutionBackward: {
      const Tensor &grad_output = a.tensor[0], &input = a.tensor[1], &weight = a.tensor[2];
      b = output == 0 ? k * bound(grad_output) * bound(weight)
          : output == 1 ? k * bound(grad_output) * bound(input)
                        : k * bound(grad_output);
      break;
    }
    case ProductSum::MatrixProduct: b = k * bound(a.tensor[0]) * bound(a.tensor[1]); break;
    case ProductSum::AddMatrixProduct:
      // (with beta 0 the result ignores self, NaN or not)
      b = std::fabs(a.alpha) * k * bound(a.tensor[1]) * bound(a.tensor[2]) +
          (a.beta == 0 ? 0.0 : std::fabs(a.beta) * bound(a.tensor[0]));
      break;
  }
  // Infinity, and NaN (an unknown bound times a zero), mean "unknown".
  if (!(b < kUnknown)) return kUnknown;
  return b * widening(terms, dtype);
}

}  // namespace opdump
