// Overflow mode's product-sum bounds on real ATen kernels (known_checks.h, product_sum_bound.h): with
// operands of one magnitude each and of one sign each output element is exactly (number of products) * Ma * Mb,
// so a bound that counted the products of any shape, stride, padding, dilation, group or transposition
// too low would fall below the output's largest element here.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <vector>

#include "known_checks.h"

using namespace opdump::pt::detail;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double max_abs(const at::Tensor& t) { return t.abs().max().item<double>(); }

// The bound of output `index`, each tensor operand checked first (as the ops producing them would be).
double bound_of_output(const char* op_type, const std::vector<c10::IValue>& args, const at::Tensor& output,
                       size_t index = 0) {
  KnownChecks known;
  std::vector<at::Tensor> inputs;
  for (const c10::IValue& v : args)
    if (v.isTensor()) {
      inputs.push_back(v.toTensor());
      known.of(v.toTensor());
    }
  const ProductSumOp op = product_sum_op(opdump::product_sum_of(op_type), args);
  EXPECT_NE(op.kind, opdump::ProductSum::None) << op_type;
  return known.product_sum_bound(op, inputs, output, index);
}

struct Conv {
  int64_t batch, in, out, size, kernel, stride, padding, dilation, groups;
  bool transposed;
};

const Conv kConvs[] = {
    {2, 3, 8, 9, 3, 1, 1, 1, 1, false},  {4, 3, 16, 16, 7, 2, 3, 1, 1, false}, {2, 8, 8, 11, 3, 2, 0, 2, 4, false},
    {1, 4, 6, 7, 1, 1, 0, 1, 2, false},  {2, 6, 4, 5, 3, 1, 1, 1, 1, true},    {2, 4, 8, 6, 4, 2, 1, 1, 2, true},
    {3, 2, 2, 8, 3, 3, 2, 2, 1, true},   {2, 16, 16, 4, 3, 1, 1, 1, 16, false},
};

}  // namespace

TEST(ProductSumBounds, CoverEveryConvolutionOutputAndGradient) {
  for (const Conv& c : kConvs) {
    SCOPED_TRACE(::testing::Message() << "in " << c.in << " out " << c.out << " kernel " << c.kernel << " stride "
                                      << c.stride << " padding " << c.padding << " dilation " << c.dilation
                                      << " groups " << c.groups << (c.transposed ? " transposed" : ""));
    const at::Tensor x = at::full({c.batch, c.in, c.size, c.size}, 2.0f);
    const at::Tensor w = c.transposed ? at::full({c.in, c.out / c.groups, c.kernel, c.kernel}, 3.0f)
                                      : at::full({c.out, c.in / c.groups, c.kernel, c.kernel}, 3.0f);
    const at::Tensor b = at::full({c.out}, 0.5f);
    const std::vector<int64_t> stride(2, c.stride), padding(2, c.padding), dilation(2, c.dilation), none(2, 0);
    const at::Tensor y = at::convolution(x, w, b, stride, padding, dilation, c.transposed, none, c.groups);
    // The largest elements come from the same op in float64, not from the float32 run: Debian's torch 2.6
    // computes grad_input wrong, or as NaN from memory it never wrote, where the output channels are not a
    // multiple of oneDNN's channel block (docs/replay.md), and the bound depends only on the float32 operands'
    // bounds and shapes. Every element here is a small integer times a power of two, so float64 gives the
    // float32 sums exactly.
    const at::Tensor x64 = x.to(at::kDouble), w64 = w.to(at::kDouble), b64 = b.to(at::kDouble);
    const double y_max =
        max_abs(at::convolution(x64, w64, b64, stride, padding, dilation, c.transposed, none, c.groups));
    const std::vector<c10::IValue> args{x, w, b, stride, padding, dilation, c.transposed, none, c.groups};
    const double bound = bound_of_output("convolution", args, y);
    EXPECT_GE(bound, y_max);
    EXPECT_LT(bound, kInf);
    if (c.stride == 1 && !c.transposed) EXPECT_LE(bound, y_max * 1.02);  // an interior element sums them all

    const at::Tensor g = at::full_like(y, -0.25f);
    const auto grads = at::convolution_backward(g, x, w, std::vector<int64_t>{c.out}, stride, padding, dilation,
                                                c.transposed, none, c.groups, {true, true, true});
    const auto grads64 = at::convolution_backward(g.to(at::kDouble), x64, w64, std::vector<int64_t>{c.out}, stride,
                                                  padding, dilation, c.transposed, none, c.groups, {true, true, true});
    const std::vector<c10::IValue> bargs{g, x, w, std::vector<int64_t>{c.out}, stride, padding, dilation,
                                         c.transposed, none, c.groups, std::vector<bool>{true, true, true}};
    const at::Tensor outs[3] = {std::get<0>(grads), std::get<1>(grads), std::get<2>(grads)};
    const double out_max[3] = {max_abs(std::get<0>(grads64)), max_abs(std::get<1>(grads64)),
                               max_abs(std::get<2>(grads64))};
    for (size_t i = 0; i < 3; ++i) {
      SCOPED_TRACE(i == 0 ? "grad_input" : i == 1 ? "grad_weight" : "grad_bias");
      const double gb = bound_of_output("convolution_backward", bargs, outs[i], i);
      EXPECT_GE(gb, out_max[i]);
      EXPECT_LT(gb, kInf);
    }
  }
}

TEST(ProductSumBounds, CoverMatrixProducts) {
  const at::Tensor a = at::full({5, 7}, -1.5f), b = at::full({7, 3}, 2.0f), self = at::full({5, 3}, 4.0f);
  const double mm = bound_of_output("mm", {a, b}, at::mm(a, b));
  EXPECT_GE(mm, 7 * 1.5 * 2.0);
  EXPECT_LE(mm, 7 * 1.5 * 2.0 * 1.02);
  const double addmm = bound_of_output("addmm", {self, a, b, 0.5, -2.0}, at::addmm(self, a, b, 0.5, -2.0));
  EXPECT_GE(addmm, max_abs(at::addmm(self, a, b, 0.5, -2.0)));
  EXPECT_LE(addmm, (0.5 * 4 + 2 * 21) * 1.02);
  // beta 0: self is ignored, NaN and all
  const at::Tensor nan_self = at::full({5, 3}, std::nanf(""));
  EXPECT_LE(bound_of_output("addmm", {nan_self, a, b, 0, 1}, at::addmm(nan_self, a, b, 0, 1)), 21 * 1.02);
  const at::Tensor ba = at::full({2, 5, 7}, 1.0f), bb = at::full({2, 7, 3}, 1.0f);
  EXPECT_GE(bound_of_output("bmm", {ba, bb}, at::bmm(ba, bb)), 7.0);
  EXPECT_GE(bound_of_output("matmul", {ba, b}, at::matmul(ba, b)), max_abs(at::matmul(ba, b)));
  const at::Tensor x = at::full({4, 7}, 3.0f), weight = at::full({6, 7}, -1.0f), bias = at::full({6}, 2.0f);
  const double linear = bound_of_output("linear", {x, weight, bias}, at::linear(x, weight, bias));
  EXPECT_GE(linear, 7 * 3.0 + 2.0);
  EXPECT_LE(linear, (7 * 3.0 + 2.0) * 1.02);
  EXPECT_GE(bound_of_output("linear", {x, weight, c10::IValue()}, at::linear(x, weight)), 21.0);
}

// Random operands summed in float32 in whatever order the kernel picks stay within the bound.
TEST(ProductSumBounds, HoldForRandomOperandsInFloat32) {
  at::manual_seed(3);
  for (int i = 0; i < 20; ++i) {
    const at::Tensor a = at::rand({64, 3000}) * 10, b = at::rand({3000, 32});  // one sign: sums do not cancel
    EXPECT_GE(bound_of_output("mm", {a, b}, at::mm(a, b)), max_abs(at::mm(a, b)));
  }
}

TEST(ProductSumBounds, GiveNoBoundWhenTheyCannot) {
  const at::Tensor a = at::ones({4, 4}), b = at::ones({4, 4});
  KnownChecks known;
  known.of(a);  // b's bound is not known
  const ProductSumOp op = product_sum_op(opdump::product_sum_of("mm"), std::vector<c10::IValue>{a, b});
  EXPECT_EQ(known.product_sum_bound(op, {a, b}, at::mm(a, b), 0), kInf);
  known.of(b);
  EXPECT_LT(known.product_sum_bound(op, {a, b}, at::mm(a, b), 0), kInf);
  EXPECT_EQ(known.product_sum_bound(op, {a, b}, at::mm(a, b), 1), kInf);  // mm has one output
  // 16-bit products may be summed in 16 bits: no bound
  const at::Tensor h = a.to(at::kBFloat16), hb = b.to(at::kBFloat16);
  known.of(h);
  known.of(hb);
  EXPECT_EQ(known.product_sum_bound(op, {h, hb}, at::mm(h, hb), 0), kInf);
  // an op without the rule, and arguments the rule does not read
  EXPECT_EQ(product_sum_op(opdump::product_sum_of("add"), std::vector<c10::IValue>{a, b}).kind, opdump::ProductSum::None);
  EXPECT_EQ(product_sum_op(opdump::product_sum_of("mm"), std::vector<c10::IValue>{a, 2.0}).kind, opdump::ProductSum::None);
  EXPECT_EQ(product_sum_op(opdump::product_sum_of("convolution_backward"), std::vector<c10::IValue>{a, a, a}).kind, opdump::ProductSum::None);
  // beyond float16's range: a bound, but not a clean one
  const at::Tensor big = at::full({4, 4000}, 20.0f), ones = at::ones({4000, 4});
  known.of(big);
  known.of(ones);
  const ProductSumOp mm = product_sum_op(opdump::product_sum_of("mm"), std::vector<c10::IValue>{big, ones});
  EXPECT_FALSE(opdump::bound_is_clean(known.product_sum_bound(mm, {big, ones}, at::mm(big, ones), 0)));
  EXPECT_FALSE(known.product_sum_check(mm, {big, ones}, at::mm(big, ones), 0));
}
