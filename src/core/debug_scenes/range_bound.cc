// The bound rules of range_bound.h.
#include "debug_scenes/range_bound.h"

#include <cmath>

namespace opdump {
namespace {

constexpr double kUnknown = kNoBound;

constexpr NamedRule<BoundRule> kRules[] = {
    {"add", BoundRule::Sum},          {"add_", BoundRule::Sum},          {"sub", BoundRule::Sum},
    {"sub_", BoundRule::Sum},         {"mul", BoundRule::Product},       {"mul_", BoundRule::Product},
    {"div", BoundRule::Quotient},     {"div_", BoundRule::Quotient},
    {"addcmul", BoundRule::ProductSum}, {"addcmul_", BoundRule::ProductSum}, {"lerp", BoundRule::Lerp},
    {"lerp_", BoundRule::Lerp},       {"fill_", BoundRule::Fill},        {"zero_", BoundRule::Zero},
    {"copy_", BoundRule::Source},     {"clone", BoundRule::Same},        {"neg", BoundRule::Same},
    {"neg_", BoundRule::Same},        {"abs", BoundRule::Same},          {"abs_", BoundRule::Same},
    {"relu", BoundRule::Same},        {"relu_", BoundRule::Same},        {"threshold_backward", BoundRule::Masked},
};

// Each rule is at most three roundings in the op's compute type (float32 for 16-bit tensors on
// the CPU) and one to the output's dtype; the widening is far more than that, and bounds stay
// tight enough over thousands of steps (a parameter's bound grows by 2^-18 per update).
double widening(DType output) {
  switch (output) {
    case DType::Float16:
    case DType::BFloat16: return 1.0 + 1.0 / 64;
    default: return 1.0 + 1.0 / (1 << 18);
  }
}

// The magnitude of argument `i` when it is of `kind`; `absent` when there is no such argument.
double arg(BoundOperands args, size_t i, BoundOperand::Kind kind, double absent = kUnknown) {
  if (i >= args.size()) return absent;
  return args[i].kind == kind ? args[i].magnitude : kUnknown;
}
double tensor_or_number(BoundOperands args, size_t i) {
  if (i >= args.size() || args[i].kind == BoundOperand::Kind::Other) return kUnknown;
  return args[i].magnitude;
}

// Arguments past the rule's: none, or one out= tensor.
bool nothing_else(BoundOperands args, size_t rule_args) {
  return args.size() <= rule_args || (args.size() == rule_args + 1 && args.back().kind == BoundOperand::Kind::Tensor);
}

}  // namespace

BoundRule bound_rule(std::string_view op_type) { return rule_named(kRules, op_type); }

double output_bound(BoundRule rule, BoundOperands args, DType output) {
  using Kind = BoundOperand::Kind;
  if (!dtype_is_float(output)) return kUnknown;
  double b = kUnknown;
  switch (rule) {
    case BoundRule::None: return kUnknown;
    case BoundRule::Sum:
      if (!nothing_else(args, 3)) return kUnknown;
      b = arg(args, 0, Kind::Tensor) + arg(args, 2, Kind::Number, 1.0) * tensor_or_number(args, 1);
      break;
    case BoundRule::Product:
      if (!nothing_else(args, 2)) return kUnknown;
      b = arg(args, 0, Kind::Tensor) * tensor_or_number(args, 1);
      break;
    case BoundRule::Quotient: {
      // the third argument is the rounding mode (floor or trunc move a quotient by less than 1) or an out= tensor
      if (args.size() < 2 || args.size() > 4 || (args.size() == 4 && args[3].kind != Kind::Tensor)) return kUnknown;
      const double divisor = arg(args, 1, Kind::Number);
      if (!(divisor > 0 && divisor < kUnknown)) return kUnknown;  // zero divides into anything; no tensor divisor
      b = arg(args, 0, Kind::Tensor) / divisor + 1;
      break;
    }
    case BoundRule::ProductSum:
      if (!nothing_else(args, 4)) return kUnknown;
      b = arg(args, 0, Kind::Tensor) +
          arg(args, 3, Kind::Number, 1.0) * tensor_or_number(args, 1) * tensor_or_number(args, 2);
      break;
    case BoundRule::Lerp: {
      if (!nothing_else(args, 3)) return kUnknown;
      const double self = arg(args, 0, Kind::Tensor);
      b = self + tensor_or_number(args, 2) * (self + tensor_or_number(args, 1));
      break;
    }
    case BoundRule::Fill:
      if (args.size() != 2 || args[0].kind != Kind::Tensor) return kUnknown;
      b = tensor_or_number(args, 1);
      break;
    case BoundRule::Zero:
      if (args.size() != 1 || args[0].kind != Kind::Tensor) return kUnknown;
      b = 0;
      break;
    case BoundRule::Source:  // copy_(self, src, non_blocking)
      if (args.size() < 2 || args.size() > 3 || args[0].kind != Kind::Tensor) return kUnknown;
      b = tensor_or_number(args, 1);
      break;
    case BoundRule::Same:  // a second argument is clone's memory_format or an out= tensor: neither changes values
      if (args.empty() || args.size() > 2) return kUnknown;
      b = arg(args, 0, Kind::Tensor);
      break;
    case BoundRule::Masked:  // a third argument is the threshold, a fourth an out= tensor
      if (args.size() < 3 || !nothing_else(args, 3)) return kUnknown;
      b = arg(args, 0, Kind::Tensor);
      break;
  }
  // Infinity, and NaN (an unknown bound times a zero), mean "unknown".
  if (!(b < kUnknown)) return kUnknown;
  return b * widening(output);
}

}  // namespace opdump
