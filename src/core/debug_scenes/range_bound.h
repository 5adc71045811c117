// Range propagation for overflow mode: an elementwise op whose operands are all finite and bounded
// (|x| <= M for each) cannot produce more than its arithmetic allows (|a + alpha*b| <= Ma +
// |alpha|*Mb, ...). When that bound is within float16's range, the output is clean -- no NaN, no
// Inf, nothing beyond 65504 -- for certain, and need not be read. Optimizers are made of such ops
// (momentum SGD writes every parameter-sized tensor four times a step: zero_, add_, mul_, add_,
// add_), and the bounds of their operands are known from the check of the op that produced each.
// The bound is an upper bound, never an estimate: each rule's result is widened by more than the
// rounding the op's arithmetic can add in the output's dtype.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string_view>
#include <vector>

#include "opdump/api.h"
#include "util/dtype.h"

namespace opdump {

// "No bound": what every rule gives when it cannot bound an output.
constexpr double kNoBound = std::numeric_limits<double>::infinity();

// A table of rules by op type (this file's and product_sum_bound.h's), and the lookup in it.
template <typename Rule>
struct NamedRule {
  std::string_view op_type;
  Rule rule;
};
template <typename Rule, size_t N>
Rule rule_named(const NamedRule<Rule> (&table)[N], std::string_view op_type) {
  for (const NamedRule<Rule>& n : table)
    if (n.op_type == op_type) return n.rule;
  return Rule::None;
}

// The arithmetic an op's output follows, by op type.
enum class BoundRule : uint8_t {
  None,        // no rule: the output is read
  Sum,         // add, sub (self, other, alpha=1): |self| + |alpha| |other|
  Product,     // mul (self, other): |self| |other|
  Quotient,    // div (self, number[, rounding_mode]): |self| / |number| + 1 (a tensor divisor bounds nothing)
  ProductSum,  // addcmul (self, tensor1, tensor2, value=1): |self| + |value| |tensor1| |tensor2|
  Lerp,        // lerp (self, end, weight): |self| + |weight| (|self| + |end|)
  Fill,        // fill_ (self, value): |value|;  zero_ (self): 0
  Zero,
  Source,      // copy_ (self, src): |src|
  Same,        // clone, neg, abs, relu (self): |self|
  Masked,      // threshold_backward (grad_output, self, threshold): |grad_output| (relu's gradient: each element it or 0)
};

OPDUMP_ADAPTER_API BoundRule bound_rule(std::string_view op_type);

// One argument of an op, in its schema's order. A one-element tensor (Python's `buf.mul_(0.9)`
// passes 0.9 as one) may be given as the number it holds, except as the op's first argument.
struct BoundOperand {
  enum class Kind : uint8_t { Tensor, Number, Other };
  Kind kind = Kind::Other;
  // A number's |value|, or an upper bound of a tensor's |x| (infinite when not known).
  double magnitude = std::numeric_limits<double>::infinity();
  static BoundOperand tensor(double bound = std::numeric_limits<double>::infinity()) { return {Kind::Tensor, bound}; }
  static BoundOperand number(double value) { return {Kind::Number, value < 0 ? -value : value}; }
  static BoundOperand other() { return {}; }
};

// An op's operands, wherever they are kept (the adapter keeps them inside the op's context, without
// an allocation per op).
class BoundOperands {
 public:
  BoundOperands(const BoundOperand* data, size_t size) : data_(data), size_(size) {}
  BoundOperands(const std::vector<BoundOperand>& operands) : BoundOperands(operands.data(), operands.size()) {}
  // (a braced list lives to the end of the call it is written in)
  BoundOperands(std::initializer_list<BoundOperand> operands) : BoundOperands(operands.begin(), operands.size()) {}
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const BoundOperand& operator[](size_t i) const { return data_[i]; }
  const BoundOperand& back() const { return data_[size_ - 1]; }

 private:
  const BoundOperand* data_;
  size_t size_;
};

// An upper bound of |x| over the op's output of dtype `output` (a real floating dtype), or
// infinity when the rule cannot give one: an operand's bound unknown, arguments not as the rule
// expects (a trailing out= tensor is allowed), or no rule.
OPDUMP_ADAPTER_API double output_bound(BoundRule rule, BoundOperands args, DType output);

// Whether every element of a tensor with |x| <= bound is clean under each overflow check
// (finite; within float16's range, and short of its saturation at 65504).
inline bool bound_is_clean(double bound) { return bound < 65504.0; }

}  // namespace opdump
