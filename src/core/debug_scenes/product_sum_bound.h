// Overflow mode's bounds for product sums: convolutions, matrix products and their gradients. Each
// element of such an op's output is a sum of at most K products of one element of each of two
// operands, plus an offset (a bias, addmm's beta * self), so with |a| <= Ma and |b| <= Mb it is at
// most K * Ma * Mb + offset, K following from the operands' shapes. Within float16's range the output
// is clean for certain and is not read (range_bound.h has the elementwise rules and the clean limit).
// On resnet18 a convolution's weight gradient is two thirds of what overflow mode reads.
#pragma once
#include <cstdint>
#include <limits>
#include <string_view>

#include "opdump/api.h"
#include "util/dtype.h"

namespace opdump {

enum class ProductSum : uint8_t {
  None,
  Convolution,            // conv1d/2d/3d(input, weight, bias, ...) -> output
  ConvolutionTransposed,  // conv_transpose1d/2d/3d(input, weight, bias, ...) -> output
  ConvolutionEither,      // convolution, _convolution(input, weight, bias, ..., transposed, ...) -> output
  ConvolutionBackward,    // convolution_backward(grad_output, input, weight, ..., transposed, ...)
                          //   -> grad_input, grad_weight, grad_bias
  MatrixProduct,          // mm, bmm, matmul(a, b) -> output
  AddMatrixProduct,       // addmm, baddbmm(self, a, b, beta, alpha) -> output
  Linear,                 // linear(input, weight, bias) -> output
};

OPDUMP_ADAPTER_API ProductSum product_sum_of(std::string_view op_type);
// Whether the op reads a `transposed` flag, and at which argument of its schema (-1: none).
OPDUMP_ADAPTER_API int product_sum_transposed_arg(ProductSum op);

// What a product-sum rule reads of an op: its first three tensor arguments in the schema's order
// (an optional bias left out is absent), by shape and bound of |x|, and its flags and factors.
struct ProductSumOperands {
  static constexpr size_t kMaxDim = 8;
  struct Tensor {
    bool present = false;
    size_t dim = 0;
    int64_t sizes[kMaxDim] = {};
    double bound = std::numeric_limits<double>::infinity();  // infinite: not known
    int64_t numel() const;
  };
  Tensor tensor[3];
  bool transposed = false;
  double alpha = 1, beta = 1;  // addmm's
};

// An upper bound of |x| over output `output` of dtype `dtype`, or infinity: an operand's bound not
// known, shapes the rule does not expect, a dtype other than float32 or float64 (16-bit products may
// be summed in 16 bits), or too many terms for the rounding of their sum to be bounded tightly.
OPDUMP_ADAPTER_API double product_sum_bound(ProductSum op, const ProductSumOperands& args, size_t output, DType dtype);

}  // namespace opdump
