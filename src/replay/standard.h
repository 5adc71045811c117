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
  Judgement judge(const at::Tensor& dumped, const at::Tensor& reference, at::ScalarType dtype,
                  const at::Tensor& perturbed = at::Tensor()) const;
  static constexpr double kConditioningFactor = 64;
  const Bounds& bounds(at::ScalarType dtype) const;
  double error_factor() const { return error_factor_; }

 private:
  std::map<at::ScalarType, Bounds> bounds_;
  double error_factor_ = 8;
};

// The dtype a float32 tensor from a dump really had: bfloat16 when its values are bfloat16 values
// (compare's held_precision: the precision.h rule).
at::ScalarType effective_dtype(const at::Tensor& dumped);

}  // namespace opdump::replay
