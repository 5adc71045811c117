#include "standard.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (there since fmt 11)

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>
#include <nlohmann/json.hpp>

#include "compare/precision.h"
#include "opdump/error.h"
#include "replay_standards.inc"  // kReplayStandardsJson: data/replay_standards.json

namespace opdump::replay {

const char* to_string(Result r) {
  switch (r) {
    case Result::Pass: return "pass";
    case Result::Warning: return "warning";
    case Result::Error: return "error";
    case Result::Skipped: return "skipped";
  }
  return "?";
}

const Standard& Standard::builtin() {
  static const Standard standard(kReplayStandardsJson, "data/replay_standards.json");
  return standard;
}

Standard::Standard(const std::string& json_text, const std::string& name) {
  const auto j = nlohmann::json::parse(json_text, nullptr, false);
  if (!j.is_object()) throw Error(name + ": not a JSON object");
  auto number = [&](const nlohmann::json& o, const char* key, const std::string& where) {
    auto it = o.find(key);
    if (it == o.end() || !it->is_number() || it->get<double>() <= 0)
      throw Error(name + ": " + where + key + " must be a positive number");
    return it->get<double>();
  };
  error_factor_ = number(j, "error_factor", "");
  for (auto [key, dtype] : {std::pair{"float64", at::kDouble}, {"float32", at::kFloat}, {"float16", at::kHalf},
                            {"bfloat16", at::kBFloat16}}) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_object()) throw Error(name + ": " + key + " is missing");
    bounds_[dtype] = Bounds{number(*it, "rel_l2", std::string(key) + "."), number(*it, "max_norm", std::string(key) + ".")};
  }
}

const Bounds& Standard::bounds(at::ScalarType dtype) const {
  auto it = bounds_.find(dtype);
  return it != bounds_.end() ? it->second : bounds_.at(at::kFloat);
}

at::ScalarType effective_dtype(const at::Tensor& dumped) {
  if (dumped.scalar_type() != at::kFloat) return dumped.scalar_type();
  const at::Tensor values = dumped.contiguous();
  const TensorView view{values.data_ptr(), DType::Float32, Shape(values.sizes().begin(), values.sizes().end())};
  return detail::held_precision(view) == DType::BFloat16 ? at::kBFloat16 : at::kFloat;
}

namespace {

// ||x - r|| / ||r|| and max|x - r| / max|r| over finite elements (both finite where r is).
std::pair<double, double> errors(const at::Tensor& x, const at::Tensor& r) {
  const at::Tensor d = x - r;
  const double diff_l2 = d.norm().item<double>(), ref_l2 = r.norm().item<double>();
  const double diff_max = d.abs().max().item<double>(), ref_max = r.abs().max().item<double>();
  return {ref_l2 > 0 ? diff_l2 / ref_l2 : diff_l2 > 0 ? INFINITY : 0,
          ref_max > 0 ? diff_max / ref_max : diff_max > 0 ? INFINITY : 0};
}

}  // namespace

double rounding_step(at::ScalarType t) {
  return t == at::kBFloat16 ? 0x1p-8 : t == at::kHalf ? 0x1p-11 : t == at::kDouble ? 0x1p-53 : 0x1p-24;
}

Systematic systematic_error(const at::Tensor& x, const at::Tensor& rounded, const at::Tensor& r) {
  const at::Tensor er = (x - rounded) * r;
  const double along = er.sum().item<double>(), spread = er.square().sum().item<double>();
  const double size = r.square().sum().item<double>();
  if (along == 0 || size == 0) return {};
  return {along / size, along / std::sqrt(spread)};
}

Judgement Standard::judge(const at::Tensor& dumped, const at::Tensor& reference, at::ScalarType dtype,
                          const at::Tensor& perturbed, const at::Tensor& seen, const at::Tensor& ran,
                          at::ScalarType computed_in, const std::string& computed_why) const {
  Judgement j;
  if (dumped.sizes() != reference.sizes()) {
    j.result = Result::Error;
    j.standard = "shape";
    j.reason = "shape " + fmt::format("{}", fmt::join(dumped.sizes(), "x")) + " dumped, " +
               fmt::format("{}", fmt::join(reference.sizes(), "x")) + " replayed";
    return j;
  }
  if (!at::isFloatingType(dtype) && !at::isComplexType(dtype)) {
    j.standard = std::string(c10::toString(dtype)) + ": exact";
    const int64_t differ = dumped.to(at::kDouble).ne(reference.to(at::kDouble)).sum().item<int64_t>();
    if (differ) {
      j.result = Result::Error;
      j.reason = std::to_string(differ) + " of " + std::to_string(dumped.numel()) + " elements differ";
    }
    return j;
  }
  const bool coarser_inside = computed_in != at::ScalarType::Undefined && rounding_step(computed_in) > rounding_step(dtype);
  Bounds b = bounds(coarser_inside ? computed_in : dtype);
  const std::string precision = coarser_inside ? fmt::format("{} computed in {} {}", c10::toString(dtype),
                                                             c10::toString(computed_in), computed_why)
                                               : std::string(c10::toString(dtype));
  const at::Tensor x = dumped.to(at::kDouble), r = reference.to(at::kDouble);
  // NaN and Inf must agree in place (and sign) with the float64 run as the output's dtype holds it: a
  // float16 output beyond 65504 rounds to Inf, as it should. They are left out of the norms.
  const at::Tensor held = at::isFloatingType(dtype) && dtype != at::kDouble ? r.to(dtype).to(at::kDouble) : r;
  const at::Tensor x_special = x.isnan().logical_or(x.isinf()), r_special = held.isnan().logical_or(held.isinf());
  const bool same_specials = x_special.equal(r_special) && x.isnan().equal(held.isnan()) &&
                             x.masked_select(x.isinf()).equal(held.masked_select(held.isinf()));
  if (!same_specials) {
    j.result = Result::Error;
    j.reason = "NaN or Inf at other positions than in the replay";
    return j;
  }
  const at::Tensor finite = x_special.logical_not();
  const at::Tensor xf = x.masked_select(finite), rf = r.masked_select(finite);
  std::string widened;
  if (perturbed.defined() && perturbed.sizes() == reference.sizes() && xf.numel()) {
    const at::Tensor p = perturbed.to(at::kDouble).masked_select(finite);
    if (p.isfinite().all().item<bool>()) {
      const auto [cond_l2, cond_max] = errors(p, rf);
      if (cond_l2 > b.rel_l2 || cond_max > b.max_norm) {
        // Rounding the inputs alone moves it beyond the standard: at this dtype its value is mostly
        // rounding noise (a sum that cancels), and no bound can tell a fault from that noise.
        j.result = Result::Skipped;
        j.standard = precision + ": ill-conditioned";
        j.reason = fmt::format("ill-conditioned: rounding its inputs alone moves it by rel_l2 {:.3g}, max_norm {:.3g}, "
                               "beyond the {} standard; its value is rounding noise at this dtype, not judged",
                               cond_l2, cond_max, precision);
        return j;
      }
      if (kConditioningFactor * cond_l2 > b.rel_l2 || kConditioningFactor * cond_max > b.max_norm) {
        b.rel_l2 = std::max(b.rel_l2, kConditioningFactor * cond_l2);
        b.max_norm = std::max(b.max_norm, kConditioningFactor * cond_max);
        widened = fmt::format(" (widened: rounding the inputs alone moves this output by rel_l2 {:.3g}, max_norm {:.3g})",
                              cond_l2, cond_max);
      }
    }
  }
  j.standard = fmt::format("{}: rel_l2 <= {:g}, max_norm <= {:g}; error at {:g}x{}", precision, b.rel_l2,
                           b.max_norm, error_factor_, widened);
  if (xf.numel() == 0) return j;
  std::tie(j.rel_l2, j.max_norm) = errors(xf, rf);
  if (j.rel_l2 > error_factor_ * b.rel_l2 || j.max_norm > error_factor_ * b.max_norm) j.result = Result::Error;
  else if (j.rel_l2 > b.rel_l2 || j.max_norm > b.max_norm) j.result = Result::Warning;
  if (j.result != Result::Pass)
    j.reason = fmt::format("rel_l2 {:.3g}, max_norm {:.3g} against the op replayed in float64", j.rel_l2, j.max_norm);
  const bool ran_alike = ran.defined() && ran.sizes() == reference.sizes();
  if (j.result != Result::Error && ran_alike && (dtype == at::kHalf || dtype == at::kBFloat16)) {
    const bool from_seen = seen.defined() && seen.sizes() == reference.sizes();
    const at::Tensor base = from_seen ? seen.to(at::kDouble).masked_select(finite) : rf;
    const Systematic exact = systematic_error(xf, base.to(dtype).to(at::kDouble), base);
    const Systematic own = systematic_error(xf, ran.to(at::kDouble).masked_select(finite), base);
    const double floor = rounding_step(dtype) / kSystematicFloorDivisor;
    auto leans = [&](const Systematic& s) { return std::abs(s.z) >= kSystematicZ && std::abs(s.bias) >= floor; };
    if (leans(exact) && leans(own) && (exact.bias > 0) == (own.bias > 0)) {
      j.result = Result::Error;
      j.systematic = true;
      j.reason = fmt::format("systematic: {:+.3g} of its size beyond rounding, one way (z = {:.0f}) against the op "
                             "replayed in float64{} and rounded to {}, and {:+.3g} (z = {:.0f}) against PyTorch's own "
                             "kernel; rel_l2 {:.3g}, max_norm {:.3g}",
                             exact.bias, exact.z, from_seen ? " on its inputs as the kernel saw them" : "",
                             c10::toString(dtype), own.bias, own.z, j.rel_l2, j.max_norm);
    }
  }
  return j;
}

}  // namespace opdump::replay
