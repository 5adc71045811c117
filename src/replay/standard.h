// The precision standard replay judges an op's output by: bounds per output dtype, read from
// data/replay_standards.json (compiled in), written in every row they were applied to.
#pragma once
#include <ATen/ATen.h>

#include <map>
#include <string>

namespace opdump::replay {

enum class Result { Pass, Warning, Error, Skipped };
const char* to_string(Result r);

struct Bounds {
  double rel_l2 = 0;    // ||x - r|| / ||r||
  double max_norm = 0;  // max|x - r| / max|r|
};

struct Judgement {
  Result result = Result::Pass;
  std::string standard;  // what was applied ("bfloat16: rel_l2 <= 0.0156, max_norm <= 0.0625; error at 8x")
  std::string reason;    // why it is not a pass
  double rel_l2 = 0, max_norm = 0;
  bool systematic = false;  // an error by the lean of its errors alone (within the norm bounds)
};

class Standard {
 public:
  // The compiled-in data/replay_standards.json.
  static const Standard& builtin();
  // From the JSON text of such a file; throws opdump::Error naming the field.
  Standard(const std::string& json_text, const std::string& name);

  // `dumped`: the op's output as the dump holds it; `reference`: the op replayed in float64 (or,
  // for integer and bool outputs, at the dumped dtypes); `dtype`: the dtype the output had (the
  // dump stores bfloat16 as float32).
  // `perturbed`: the op in float64 on inputs perturbed by their dtypes' rounding (undefined: none).
  // Where that alone moves the output by more than 1/kConditioningFactor of the bounds (an
  // ill-conditioned output: a sum that cancels to nearly nothing, as the bias gradient of a
  // convolution followed by batch norm), the bounds widen to kConditioningFactor times that
  // movement, and the row says so. Where it moves the output beyond the bounds themselves, the
  // output is rounding noise at its dtype and is skipped as ill-conditioned: the kernels' own
  // rounding while they accumulate moved such sums 25 to 100 times further than rounding their
  // inputs did, here (rel_l2 2 to 8 against 0.08).)
  // `seen`: the op in float64 on its inputs as the kernel saw them, where that is not `reference`
  // (an autocast cast wider inputs down); `ran`: the op as it ran, by this process's PyTorch. A
  // float16 or bfloat16 output is also an error when its errors lean one way (systematic_error)
  // both beyond `seen` rounded to its dtype and against `ran`, the same way: PyTorch's own kernel,
  // which may round twice (1.13's float16 add_ rounds alpha * other first, and leans), does not
  // make its own output an error, nor does a kernel that rounds once.
  // `computed_in`: a coarser dtype the op computed in although its output is `dtype` (a gru under
  // bfloat16 autocast runs its linear layers in bfloat16 and returns float32): that dtype's bounds.
  // `computed_why` says how it came to compute there, in the row's standard.
  Judgement judge(const at::Tensor& dumped, const at::Tensor& reference, at::ScalarType dtype,
                  const at::Tensor& perturbed = at::Tensor(), const at::Tensor& seen = at::Tensor(),
                  const at::Tensor& ran = at::Tensor(), at::ScalarType computed_in = at::ScalarType::Undefined,
                  const std::string& computed_why = "under autocast") const;
  static constexpr double kConditioningFactor = 64;
  // A float16 or bfloat16 output whose errors beyond the float64 run's own rounding lean one way is
  // an error even within the bounds (see systematic_error): at least kSystematicZ standard errors
  // and 1/kSystematicFloorDivisor of its unit roundoff (rounding_step) in size.
  static constexpr double kSystematicZ = 10;
  static constexpr double kSystematicFloorDivisor = 64;
  const Bounds& bounds(at::ScalarType dtype) const;
  double error_factor() const { return error_factor_; }

 private:
  std::map<at::ScalarType, Bounds> bounds_;
  double error_factor_ = 8;
};

// One rounding of a float dtype, its unit roundoff: the most rounding to nearest moves a value, relative to it
// (bfloat16 2^-8, float16 2^-11, float32 2^-24, float64 2^-53).
double rounding_step(at::ScalarType t);

// How far `x` leans from the float64 run `r` beyond `rounded` (r rounded to x's dtype), along r:
// bias = <x - rounded, r> / <r, r>, a relative scale error, and z = <x - rounded, r> / ||(x - rounded) * r||,
// its size in standard errors were the errors without direction. Rounding to nearest has none: a correct
// float16 or bfloat16 kernel that accumulates wider and rounds once lands on `rounded` or an ulp beside
// it either way, |z| of a few at most. A kernel a fraction too large on part of its output (one
// channel of a convolution 0.5% off) stays within the norm bounds, which must allow an ulp an
// element, but leans one way over thousands of elements. Zero when x equals `rounded`.
struct Systematic {
  double bias = 0, z = 0;
};
Systematic systematic_error(const at::Tensor& x, const at::Tensor& rounded, const at::Tensor& r);

// The dtype a float32 tensor from a dump really had: bfloat16 when its values are bfloat16 values
// (compare's held_precision: the precision.h rule).
at::ScalarType effective_dtype(const at::Tensor& dumped);

}  // namespace opdump::replay
