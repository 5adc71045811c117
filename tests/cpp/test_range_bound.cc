// The bound rules of overflow mode (range_bound.h): each gives an upper bound of the output's |x|
// that holds for the worst operands within their bounds, gives none when an operand's bound is
// unknown or the arguments are not what the rule reads, and says clean only below 65504.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "debug_scenes/product_sum_bound.h"
#include "debug_scenes/range_bound.h"

using namespace opdump;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
using Args = std::vector<BoundOperand>;
BoundOperand t(double bound) { return BoundOperand::tensor(bound); }
BoundOperand n(double value) { return BoundOperand::number(value); }

// Upper bound, and tight: within 1% of the exact worst case.
void expect_tight(double bound, double worst) {
  EXPECT_GE(bound, worst);
  EXPECT_LE(bound, worst * 1.01 + 1e-300);
}

}  // namespace

TEST(RangeBound, OpTypesHaveTheirRules) {
  EXPECT_EQ(bound_rule("add_"), BoundRule::Sum);
  EXPECT_EQ(bound_rule("sub"), BoundRule::Sum);
  EXPECT_EQ(bound_rule("mul_"), BoundRule::Product);
  EXPECT_EQ(bound_rule("addcmul_"), BoundRule::ProductSum);
  EXPECT_EQ(bound_rule("lerp_"), BoundRule::Lerp);
  EXPECT_EQ(bound_rule("zero_"), BoundRule::Zero);
  EXPECT_EQ(bound_rule("fill_"), BoundRule::Fill);
  EXPECT_EQ(bound_rule("copy_"), BoundRule::Source);
  EXPECT_EQ(bound_rule("relu_"), BoundRule::Same);
  EXPECT_EQ(bound_rule("add"), BoundRule::Sum);
  EXPECT_EQ(bound_rule("div_"), BoundRule::Quotient);
  EXPECT_EQ(bound_rule("threshold_backward"), BoundRule::Masked);
  for (const char* none : {"exp", "addcdiv_", "sqrt", "pow", "matmul", "convolution", "rsub"})
    EXPECT_EQ(bound_rule(none), BoundRule::None) << none;
}

TEST(RangeBound, TheOptimizersArithmetic) {
  // momentum SGD: buf.mul_(0.9).add_(grad, alpha=1), param.add_(buf, alpha=-0.01); grad += new_grad
  expect_tight(output_bound(BoundRule::Product, {t(2.0), n(0.9)}, DType::Float32), 1.8);
  expect_tight(output_bound(BoundRule::Sum, {t(1.8), t(0.5), n(1)}, DType::Float32), 2.3);
  expect_tight(output_bound(BoundRule::Sum, {t(3.0), t(2.3), n(-0.01)}, DType::Float32), 3.023);
  expect_tight(output_bound(BoundRule::Sum, {t(0.0), t(0.5), n(1)}, DType::Float32), 0.5);
  // Adam: exp_avg_sq.mul_(0.999).addcmul_(grad, grad, value=0.001); exp_avg.lerp_(grad, 0.1)
  expect_tight(output_bound(BoundRule::ProductSum, {t(4.0), t(3.0), t(3.0), n(0.001)}, DType::Float32), 4.009);
  expect_tight(output_bound(BoundRule::Lerp, {t(1.0), t(3.0), n(0.1)}, DType::Float32), 1.4);
  // Adam's denominator: (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps); a rounding mode adds at most 1
  expect_tight(output_bound(BoundRule::Quotient, {t(300.0), n(-0.5)}, DType::Float32), 601.0);
  expect_tight(output_bound(BoundRule::Quotient, {t(300.0), n(0.5), BoundOperand::other()}, DType::Float32), 601.0);
  EXPECT_EQ(output_bound(BoundRule::Quotient, {t(300.0), n(0.0)}, DType::Float32), kInf);
  EXPECT_EQ(output_bound(BoundRule::Quotient, {t(300.0), t(2.0)}, DType::Float32), kInf);  // a tensor divisor may hold 0
  // zero_grad and fills
  EXPECT_EQ(output_bound(BoundRule::Zero, {t(kInf)}, DType::Float32), 0.0);
  expect_tight(output_bound(BoundRule::Fill, {t(kInf), n(-7.0)}, DType::Float32), 7.0);
  expect_tight(output_bound(BoundRule::Source, {t(kInf), t(5.0), n(0)}, DType::Float32), 5.0);
  expect_tight(output_bound(BoundRule::Same, {t(5.0), BoundOperand::other()}, DType::Float32), 5.0);
  // relu's gradient: each element the incoming gradient's or 0, whatever the forward input held
  expect_tight(output_bound(BoundRule::Masked, {t(0.25), t(kInf), n(0)}, DType::Float32), 0.25);
  EXPECT_EQ(output_bound(BoundRule::Masked, {t(0.25), t(1.0)}, DType::Float32), kInf);  // no threshold
  // out= variants: one trailing tensor, whatever it held
  expect_tight(output_bound(BoundRule::Sum, {t(1.0), t(2.0), n(1), t(kInf)}, DType::Float32), 3.0);
  expect_tight(output_bound(BoundRule::Product, {t(1.0), n(3.0), t(kInf)}, DType::Float32), 3.0);
}

TEST(RangeBound, UnknownOperandsAndUnexpectedArgumentsGiveNoBound) {
  EXPECT_EQ(output_bound(BoundRule::Sum, {t(kInf), t(1.0), n(1)}, DType::Float32), kInf);
  EXPECT_EQ(output_bound(BoundRule::Sum, {t(1.0), t(kInf), n(1)}, DType::Float32), kInf);
  EXPECT_EQ(output_bound(BoundRule::Product, {t(0.0), t(kInf)}, DType::Float32), kInf);  // 0 * unknown: NaN
  EXPECT_EQ(output_bound(BoundRule::Sum, {t(1.0), t(1.0), t(1.0)}, DType::Float32), kInf);  // alpha not a number
  EXPECT_EQ(output_bound(BoundRule::Sum, {n(1.0), t(1.0), n(1)}, DType::Float32), kInf);   // self not a tensor
  EXPECT_EQ(output_bound(BoundRule::Sum, {t(1.0), BoundOperand::other(), n(1)}, DType::Float32), kInf);
  EXPECT_EQ(output_bound(BoundRule::Product, {t(1.0), n(2), n(3), t(1.0)}, DType::Float32), kInf);  // too many
  EXPECT_EQ(output_bound(BoundRule::Product, {t(1.0), n(std::nan(""))}, DType::Float32), kInf);
  EXPECT_EQ(output_bound(BoundRule::Product, {t(1.0), n(kInf)}, DType::Float32), kInf);
  EXPECT_EQ(output_bound(BoundRule::Zero, {t(1.0), n(0)}, DType::Float32), kInf);
  EXPECT_EQ(output_bound(BoundRule::None, {t(1.0)}, DType::Float32), kInf);
  // only real floating outputs
  EXPECT_EQ(output_bound(BoundRule::Same, {t(1.0)}, DType::Int64), kInf);
  EXPECT_EQ(output_bound(BoundRule::Same, {t(1.0)}, DType::Complex64), kInf);
}

// The bound covers the rounding of the output's dtype: exact sums at the edge of float16 stay
// below the bound, and the clean limit is strict (float16 saturates at 65504).
TEST(RangeBound, WideningCoversRoundingAndCleanIsBelowFloat16sLimit) {
  EXPECT_TRUE(bound_is_clean(65503.9));
  EXPECT_FALSE(bound_is_clean(65504.0));
  EXPECT_FALSE(bound_is_clean(kInf));
  // float32 arithmetic on random operands within their bounds never exceeds the bound
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int i = 0; i < 100000; ++i) {
    const float ma = 1000.0f * std::fabs(u(rng)), mb = 3.0f * std::fabs(u(rng)), alpha = u(rng);
    const float a = ma * (u(rng) > 0 ? 1 : -1), b = mb * (u(rng) > 0 ? 1 : -1);
    const float sum = a + alpha * b;
    ASSERT_LE(std::fabs(sum), output_bound(BoundRule::Sum, {t(ma), t(mb), n(alpha)}, DType::Float32));
    const float product = a * b;
    ASSERT_LE(std::fabs(product), output_bound(BoundRule::Product, {t(ma), t(mb)}, DType::Float32));
  }
  // bfloat16 rounds up by up to 2^-9 relative: the 16-bit widening covers it
  const double bf16_worst = 65000.0 * (1 + 1.0 / 256);
  EXPECT_GE(output_bound(BoundRule::Same, {t(65000.0)}, DType::BFloat16), bf16_worst);
  EXPECT_FALSE(bound_is_clean(output_bound(BoundRule::Same, {t(65000.0)}, DType::BFloat16)));
  EXPECT_TRUE(bound_is_clean(output_bound(BoundRule::Product, {t(60000.0), n(1.0917)}, DType::Float32)));
  EXPECT_FALSE(bound_is_clean(output_bound(BoundRule::Product, {t(60000.0), n(1.0918)}, DType::Float32)));
}

// Product sums (product_sum_bound.h): K products counted from the shapes, float32 and float64 only, and
// no bound where the rounding of K terms is not small. (On real kernels: tests/cpp/torch/test_product_sum_bounds.cc.)
TEST(ProductSumBound, CountsFromShapesAndRefusesWhatItCannotBound) {
  EXPECT_EQ(product_sum_of("convolution_backward"), ProductSum::ConvolutionBackward);
  EXPECT_EQ(product_sum_of("conv_transpose2d"), ProductSum::ConvolutionTransposed);
  EXPECT_EQ(product_sum_of("addmm"), ProductSum::AddMatrixProduct);
  EXPECT_EQ(product_sum_of("addbmm"), ProductSum::None);  // sums over the batch too: not counted so
  auto tensor = [](std::initializer_list<int64_t> sizes, double bound) {
    ProductSumOperands::Tensor t;
    t.present = true;
    for (int64_t s : sizes) t.sizes[t.dim++] = s;
    t.bound = bound;
    return t;
  };
  ProductSumOperands mm;
  mm.tensor[0] = tensor({8, 100}, 2.0);
  mm.tensor[1] = tensor({100, 4}, 0.5);
  // (covering operands rounded to bfloat16 first: 1/128 more)
  EXPECT_GE(product_sum_bound(ProductSum::MatrixProduct, mm, 0, DType::Float32), 100.0 * (1 + 1.0 / 128));
  EXPECT_LE(product_sum_bound(ProductSum::MatrixProduct, mm, 0, DType::Float32), 102.0);
  EXPECT_EQ(product_sum_bound(ProductSum::MatrixProduct, mm, 0, DType::Float16), kInf);
  EXPECT_EQ(product_sum_bound(ProductSum::MatrixProduct, mm, 0, DType::BFloat16), kInf);
  EXPECT_EQ(product_sum_bound(ProductSum::MatrixProduct, mm, 1, DType::Float32), kInf);
  mm.tensor[1].bound = kInf;
  EXPECT_EQ(product_sum_bound(ProductSum::MatrixProduct, mm, 0, DType::Float32), kInf);
  // 2^20 float32 terms: their sum's rounding is not bounded tightly enough; float64's is
  ProductSumOperands wide;
  wide.tensor[0] = tensor({1, 1 << 20}, 1e-6);
  wide.tensor[1] = tensor({1 << 20, 1}, 1e-6);
  EXPECT_EQ(product_sum_bound(ProductSum::MatrixProduct, wide, 0, DType::Float32), kInf);
  EXPECT_LT(product_sum_bound(ProductSum::MatrixProduct, wide, 0, DType::Float64), 1e-5);
  // a convolution's weight gradient sums over the batch: an unbatched gradient is not counted
  ProductSumOperands conv;
  conv.tensor[0] = tensor({16, 5, 5}, 1.0);
  conv.tensor[1] = tensor({3, 5, 5}, 1.0);
  conv.tensor[2] = tensor({16, 3, 3, 3}, 1.0);
  EXPECT_EQ(product_sum_bound(ProductSum::ConvolutionBackward, conv, 1, DType::Float32), kInf);
  EXPECT_LT(product_sum_bound(ProductSum::ConvolutionBackward, conv, 0, DType::Float32), kInf);
}
