// compare_dumps across stacks (docs/compare.md, "Across stacks"): rows within their dtypes'
// rounding, an op that adds error beyond what its inputs carry, a precision lowered at one op, and
// the cross-replay the adapter side provides.
#include <gtest/gtest.h>

#include <cmath>

#include "compare/compare.h"
#include "compare/precision.h"
#include "dump_builder.h"
#include "test_util.h"

using namespace opdump;
using test::OpSpec;

namespace {

// Reference (float32): x -> conv -> relu -> linear. The target computes in bfloat16: each output
// is the reference's rounded to bfloat16 (1.0078125 = 1 + 2^-7, ...), fractional and exact in bfloat16.
const std::vector<float> kRefConv = {1.01f, 2.02f, 3.03f}, kBf16Conv = {1.0078125f, 2.015625f, 3.03125f};

std::vector<OpSpec> chain(const std::vector<float>& conv, const std::vector<float>& relu, float linear) {
  return {
      {"conv2d", "Default/net-Net/conv1-Conv2d/conv2d-op0", {{1, 2, 3}, {0.5f}}, {conv}, {1, 9}, {2}},
      {"relu", "Default/net-Net/relu-ReLU/relu-op0", {conv}, {relu}, {2}, {3}},
      {"linear", "Default/net-Net/fc-Linear/linear-op0", {relu}, {{linear}}, {3}, {4}},
  };
}


}  // namespace

TEST(ComparePrecision, HeldPrecisionTellsBfloat16ValuesWidenedToFloat32) {
  const std::vector<float> bf16 = kBf16Conv, fp32 = kRefConv, integers = {1, 2, 3, 4};
  auto held = [](const std::vector<float>& v) {
    return detail::held_precision(TensorView{v.data(), DType::Float32, Shape{static_cast<int64_t>(v.size())}});
  };
  EXPECT_EQ(held(bf16), DType::BFloat16);
  EXPECT_EQ(held(fp32), DType::Float32);
  EXPECT_EQ(held(integers), DType::Float32);  // exact in every dtype: says nothing
  // Activations that grew beyond 256 in bfloat16 (a mobilenet_v2 step that diverged) are integers,
  // multiples of 2, 4, ...: bfloat16. A constant, or integers float32 holds (257), say otherwise.
  EXPECT_EQ(held({-3, 258, 1024, 0.0f, 4352}), DType::BFloat16);
  EXPECT_EQ(held({1024, 1024}), DType::Float32);
  EXPECT_EQ(held({258, 257, 1024}), DType::Float32);
  EXPECT_EQ(detail::coarser_dtype(DType::Float32, DType::BFloat16), DType::BFloat16);
  EXPECT_EQ(detail::coarser_dtype(DType::Float16, DType::BFloat16), DType::BFloat16);
  EXPECT_EQ(detail::coarser_dtype(DType::Int64, DType::Float64), DType::Float64);
  EXPECT_DOUBLE_EQ(detail::dtype_epsilon(DType::BFloat16), 1.0 / 128);
  EXPECT_DOUBLE_EQ(detail::dtype_epsilon(DType::Float16), 1.0 / 1024);
}

TEST(ComparePrecision, RowsWithinBfloat16RoundingNameNoDivergence) {
  test::TempDir dir;
  test::write_dump(dir / "r", 0, 0, chain(kRefConv, kRefConv, 12.3f));
  test::write_dump(dir / "t", 0, 0, chain(kBf16Conv, kBf16Conv, 12.3125f));
  const CompareResult r = test::compare_pair(dir);
  EXPECT_FALSE(r.first_divergence.found) << r.first_divergence.cause;
  EXPECT_GT(r.warnings, 0u);  // the verdicts stay: they differ
  EXPECT_EQ(r.within_precision, r.warnings + r.errors);
  EXPECT_EQ(r.precision.rfind("outputs agree to bfloat16 precision", 0), 0u) << r.precision;
  for (const auto& row : r.rows) {
    if (row.within_precision) {
      EXPECT_NE(row.reason.find("within bfloat16 precision"), std::string::npos) << row.reason;
    }
  }
}

TEST(ComparePrecision, AnOpThatAddsErrorBeyondItsInputsIsNamedUnderBfloat16Noise) {
  test::TempDir dir;
  const std::vector<float> wrong = {1.5f, 2.015625f, 3.03125f};  // relu's first value jumps
  test::write_dump(dir / "r", 0, 0, chain(kRefConv, kRefConv, 12.3f));
  test::write_dump(dir / "t", 0, 0, chain(kBf16Conv, wrong, 12.8125f));
  const auto& f = test::compare_pair(dir).first_divergence;
  ASSERT_TRUE(f.found);
  EXPECT_EQ(f.op.op_type, "relu");
  EXPECT_FALSE(f.inputs_agree);
  EXPECT_NE(f.cause.find("its inputs already differ, but its error grows from"), std::string::npos) << f.cause;
}

TEST(ComparePrecision, ErrorThatGrowsWithinTwelveTimesItsInputsIsCarriedOn) {
  test::TempDir dir;
  // relu's error: about 4x its input's (beyond bfloat16's rounding, within what its inputs explain)
  const std::vector<float> ref_relu = {1.01f, 2.02f, 3.03f}, grown = {1.03125f, 2.0625f, 3.0625f};
  test::write_dump(dir / "r", 0, 0, chain(kRefConv, ref_relu, 12.3f));
  test::write_dump(dir / "t", 0, 0, chain(kBf16Conv, grown, 12.3125f));
  const CompareResult r = test::compare_pair(dir);
  EXPECT_FALSE(r.first_divergence.found) << r.first_divergence.cause;
  EXPECT_EQ(r.precision.rfind("outputs agree to bfloat16 precision", 0), 0u) << r.precision;
}

TEST(ComparePrecision, APrecisionLoweredAtOneOpOfATypeIsNamed) {
  test::TempDir dir;
  // Two convs; the target computes only the second in bfloat16 (its output, and what follows).
  auto ops = [](const std::vector<float>& second) {
    return std::vector<OpSpec>{
        {"conv2d", "Default/net-Net/conv1-Conv2d/conv2d-op0", {{1, 2, 3}, {0.5f}}, {kRefConv}, {1, 9}, {2}},
        {"conv2d", "Default/net-Net/conv2-Conv2d/conv2d-op0", {kRefConv, {0.25f}}, {second}, {2, 8}, {3}},
        {"relu", "Default/net-Net/relu-ReLU/relu-op0", {second}, {second}, {3}, {4}},
    };
  };
  test::write_dump(dir / "r", 0, 0, ops(kRefConv));
  test::write_dump(dir / "t", 0, 0, ops(kBf16Conv));
  const auto& f = test::compare_pair(dir).first_divergence;
  ASSERT_TRUE(f.found);
  EXPECT_EQ(f.op.op_name, "Default/net-Net/conv2-Conv2d/conv2d-op0");
  EXPECT_NE(f.cause.find("it computes in bfloat16 here (the reference: float32) while other conv2d ops of this run "
                         "compute in float32"), std::string::npos) << f.cause;
}

TEST(ComparePrecision, TheCrossReplayDecidesForOpsWhoseInputsDiffer) {
  for (bool strays : {false, true}) {
    test::TempDir dir;
    // relu's error is 30x its input's: growth alone would name it; the re-run decides.
    const std::vector<float> wrong = {1.5f, 2.015625f, 3.03125f};
    test::write_dump(dir / "r", 0, 0, chain(kRefConv, kRefConv, 12.3f));
    test::write_dump(dir / "t", 0, 0, chain(kBf16Conv, wrong, 12.8125f));
    std::vector<std::string> asked;
    CompareOptions options;
    options.cross_replay = [&](const std::map<uint32_t, const DumpEntry*>& inputs,
                               const std::map<uint32_t, const DumpEntry*>& outputs,
                               const DumpEntry& reference) -> std::optional<CrossCheck> {
      asked.push_back(outputs.at(0)->op_type);
      EXPECT_EQ(inputs.size(), outputs.at(0)->op_type == "conv2d" ? 2u : 1u);
      EXPECT_EQ(reference.op_name, outputs.at(0)->op_name);
      if (outputs.at(0)->op_type != "relu") return CrossCheck{};
      return CrossCheck{strays, "output.0 strays (test)"};
    };
    const CompareResult r = test::compare_pair(dir, options);
    EXPECT_EQ(asked.front(), "relu");  // conv's inputs agree: it is not re-run
    EXPECT_EQ(r.first_divergence.found, strays);
    if (strays) {
      EXPECT_EQ(r.first_divergence.op.op_type, "relu");
      EXPECT_NE(r.first_divergence.cause.find("re-run in float64 on them with the reference's arguments, its output "
                                              "strays: output.0 strays (test)"), std::string::npos)
          << r.first_divergence.cause;
    } else {
      EXPECT_EQ(r.precision.rfind("outputs agree to bfloat16 precision", 0), 0u) << r.precision;
    }
  }
}

TEST(ComparePrecision, AnOpOneSideRanAmidRoundingIsBlamedOnlyWhenItsReaderAddsError) {
  for (bool adds : {false, true}) {
    test::TempDir dir;
    // The reference adds zeros to relu's output before linear reads it (1.13 accumulating a gradient
    // into a zeroed one); the target reads relu's output directly. Both sides carry bf16 rounding.
    auto ref = chain(kRefConv, kRefConv, 12.3f);
    ref.insert(ref.begin() + 2, OpSpec{"add", "Default/net-Net/add-op0", {kRefConv, {0, 0, 0}}, {kRefConv}, {3, 7}, {5}});
    ref[3].input_ids = {5};
    test::write_dump(dir / "r", 0, 0, ref);
    // linear: 2% off (beyond bf16 rounding, within what its inputs carry), or far off.
    test::write_dump(dir / "t", 0, 0, chain(kBf16Conv, kBf16Conv, adds ? 20.5f : 12.5625f));
    const auto& f = test::compare_pair(dir).first_divergence;
    EXPECT_EQ(f.found, adds) << f.cause;
    if (adds) {
      EXPECT_EQ(f.kind, FirstDivergence::Kind::MissingOp);
      EXPECT_EQ(f.op.op_name, "Default/net-Net/add-op0");
    }
  }
}

// Amid bfloat16 rounding, an op only one side ran that changes the values it passes on (a scale of
// 3% inserted into the model or removed from it) is named, though its reader's error is no more than
// its inputs' grows into; one that passes them on (a cast) is not. Each side's own tensors tell.
TEST(ComparePrecision, AnOpOneSideRanAmidRoundingIsNamedWhenItChangesTheValuesItPassesOn) {
  const std::vector<float> scaled_bf16 = {1.0390625f, 2.078125f, 3.125f};  // kBf16Conv x 1.03, in bfloat16
  const std::vector<float> scaled_ref = {1.01f * 1.03f, 2.02f * 1.03f, 3.03f * 1.03f};
  for (const bool statistics : {false, true})
  for (const bool in_target : {true, false})
    for (const bool changes : {false, true}) {
      test::TempDir dir;
      test::DumpSpec spec, target_spec;
      spec.tensors = !statistics;  // from statistics, the norms of the op's input and output tell
      spec.statistics = statistics;
      target_spec = spec;
      target_spec.statistics_dtype = DType::BFloat16;
      auto ref = chain(kRefConv, kRefConv, in_target || !changes ? 12.3f : 12.3f * 1.03f);
      // linear 2% off without a change (beyond bf16 rounding, within what its inputs carry)
      auto tgt = chain(kBf16Conv, kBf16Conv, !changes ? 12.5625f : in_target ? 12.6875f : 12.3125f);
      auto& side = in_target ? tgt : ref;
      const std::vector<float>& relu = in_target ? kBf16Conv : kRefConv;
      const std::vector<float> out = changes ? (in_target ? scaled_bf16 : scaled_ref) : relu;
      side.insert(side.begin() + 2, OpSpec{changes ? "mul" : "to", "Default/net-Net/one_side-op0", {relu, {1.03f}},
                                           {out}, {3, 8}, {5}, {1}});
      side[3].inputs = {out};
      side[3].input_ids = {5};
      test::write_dump(dir / "r", 0, 0, ref, spec);
      test::write_dump(dir / "t", 0, 0, tgt, target_spec);
      const auto& f = test::compare_pair(dir).first_divergence;
      EXPECT_EQ(f.found, changes) << "statistics " << statistics << ", in the target " << in_target << ": " << f.cause;
      if (!changes) continue;
      EXPECT_EQ(f.kind, in_target ? FirstDivergence::Kind::ExtraOp : FirstDivergence::Kind::MissingOp);
      EXPECT_EQ(f.op.op_name, "Default/net-Net/one_side-op0");
    }
}

// Amid bfloat16 rounding, the forward op reading a constant no op produced (a Python number the target
// changed by 1%: an attention scale) is the origin; the same constant read by a backward op may carry
// what autograd saved, and is not blamed alone.
TEST(ComparePrecision, AConstantThatDiffersAmidRoundingIsTheOrigin) {
  for (const bool backward : {false, true}) {
    test::TempDir dir;
    auto ops = [&](const std::vector<float>& conv, float scale, float scaled) {
      std::vector<OpSpec> v = chain(conv, conv, 12.3f);
      v.push_back({"mul", backward ? "Gradients/Default/net-Net/fc-Linear/linear-op0/AddmmBackward0/mul-op0"
                                   : "Default/net-Net/mul-op0",
                   {{12.3f}, {scale}}, {{scaled}}, {4, 30}, {5}, {1}});
      return v;
    };
    // (values bfloat16 cannot hold: 0.5 would count as a bfloat16 value, whose rounding covers 1%)
    test::write_dump(dir / "r", 0, 0, ops(kRefConv, 0.35355339f, 4.3487067f));
    test::write_dump(dir / "t", 0, 0, ops(kBf16Conv, 0.35708892f, 4.3921937f));
    const auto& f = test::compare_pair(dir).first_divergence;
    EXPECT_EQ(f.found, !backward) << f.cause;
    if (!backward) {
      EXPECT_EQ(f.op.op_type, "mul");
      EXPECT_NE(f.cause.find("input 1 differs: no dumped op produced it (a parameter, constant or data batch)"),
                std::string::npos) << f.cause;
    }
  }
}

// A tensor no op produced (a plain module attribute, a mask built from Python data) whose error is far
// beyond anything before it is blamed in forward; one whose error is about what the ops before it carry
// is not (it may be a nested op's result).
TEST(ComparePrecision, AnUnproducedTensorIsBlamedOnlyBeyondTheErrorBeforeIt) {
  for (const bool far : {false, true}) {
    test::TempDir dir;
    auto ops = [&](const std::vector<float>& conv, const std::vector<float>& mask, float out) {
      std::vector<OpSpec> v = chain(conv, conv, 12.3f);
      v.push_back({"mul", "Default/net-Net/mul-op0", {conv, mask}, {{out}}, {3, 31}, {6}});
      return v;
    };
    // conv's bfloat16 rounding: about 0.4% relative; the mask: 1% off (carried) or 30% off.
    const std::vector<float> ref_mask = {1, 2, 3}, near = {1.01f, 2.02f, 3.03f}, off = {1.3f, 2.6f, 3.9f};
    test::write_dump(dir / "r", 0, 0, ops(kRefConv, ref_mask, 14.14f));
    test::write_dump(dir / "t", 0, 0, ops(kBf16Conv, far ? off : near, far ? 18.4f : 14.28f));
    const auto& f = test::compare_pair(dir).first_divergence;
    EXPECT_EQ(f.found, far) << f.cause;
    if (far) {
      EXPECT_EQ(f.op.op_name, "Default/net-Net/mul-op0");
      EXPECT_NE(f.cause.find("input 1 differs: no dumped op produced it"), std::string::npos) << f.cause;
    }
  }
}

namespace {

// `n` values in [1, 2), each moved `ulps` float32 steps up: a relative difference of about ulps * 0.8e-7.
std::vector<float> ramp(size_t n, int ulps) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = 1.0f + static_cast<float>(i) / static_cast<float>(n);
    for (int k = 0; k < ulps; ++k) v[i] = std::nextafter(v[i], 2.0f);
  }
  return v;
}

// `n` values in [1, 2), scaled by 1 + rel.
std::vector<float> scaled_ramp(size_t n, double rel) {
  std::vector<float> v = ramp(n, 0);
  for (float& x : v) x = static_cast<float>(x * (1 + rel));
  return v;
}

test::DumpSpec statistics_dump() {
  test::DumpSpec spec;
  spec.tensors = false;
  spec.statistics = true;
  return spec;
}

}  // namespace

// Statistics across stacks: a norm's relative difference shows noise over n elements at about 1/sqrt(n)
// of the elementwise error, so a layer from 256 features to 2 outputs seems to grow its input's error 100x
// when it grows it about 9x. Counted as the output sees it, the input explains the output; a real
// fault (2e-3) is still named.
TEST(ComparePrecision, FromStatisticsAReducingOpIsJudgedAtItsOutputsSize) {
  for (const bool fault : {false, true}) {
    test::TempDir dir;
    auto ops = [](int ulps_first, int ulps_second, const std::vector<float>& out) {
      return std::vector<OpSpec>{
          {"conv2d", "Default/net-Net/conv1-Conv2d/conv2d-op0", {ramp(256, 0)}, {ramp(256, ulps_first)}, {1}, {2}},
          {"relu", "Default/net-Net/relu-ReLU/relu-op0", {ramp(256, ulps_first)}, {ramp(256, ulps_second)}, {2}, {3}},
          {"linear", "Default/net-Net/fc-Linear/linear-op0", {ramp(256, ulps_second)}, {out}, {3}, {4}},
      };
    };
    test::write_dump(dir / "r", 0, 0, ops(0, 0, {10.0f, 20.0f}), statistics_dump());
    // the input 2e-6 apart (its norm), the output 2e-4 (beyond the 1e-4 warning), or 2e-3
    const std::vector<float> out = fault ? std::vector<float>{10.02f, 20.04f} : std::vector<float>{10.002f, 20.004f};
    test::write_dump(dir / "t", 0, 0, ops(1, 25, out), statistics_dump());
    const auto& f = test::compare_pair(dir).first_divergence;
    EXPECT_EQ(f.found, fault) << f.cause;
    if (fault) {
      EXPECT_EQ(f.op.op_type, "linear");
      EXPECT_NE(f.cause.find("its inputs already differ, but its error grows from"), std::string::npos) << f.cause;
    }
  }
}

// Statistics across stacks, second iteration: the optimizer's update of iteration 0 left a parameter
// differing by rounding; every activation after the op reading it carries that, and statistics cannot
// tell its growth from an op's own error: no op after it is blamed for growth alone.
TEST(ComparePrecision, FromStatisticsNoGrowthIsJudgedOnceAParameterDiffers) {
  test::TempDir dir;
  for (const char* side : {"r", "t"}) {
    const bool target = side[0] == 't';
    const double moved = target ? 2e-4 : 0, grown = target ? 5e-3 : 0;  // beyond the 1e-4 warning; 25x
    const std::vector<float> x = ramp(64, 0), w = ramp(64, 0), updated = scaled_ramp(64, moved);
    // iteration 0: linear reads the weight (id 2; its output a float32 step apart), the optimizer's add_
    // updates the weight in place
    test::write_dump(dir / side, 0, 0,
                     {{"linear", "Default/net-Net/fc-Linear/linear-op0", {x, w}, {ramp(64, target)}, {1, 2}, {3}},
                      {"add_", "add_-op0", {w, ramp(64, target)}, {updated}, {2, 3}, {2}}},
                     statistics_dump());
    // iteration 1: linear reads the updated weight, gelu grows its error 25x
    test::write_dump(dir / side, 0, 1,
                     {{"linear", "Default/net-Net/fc-Linear/linear-op0", {x, updated}, {scaled_ramp(64, moved)},
                       {1, 2}, {5}},
                      {"gelu", "Default/net-Net/gelu-GELU/gelu-op0", {scaled_ramp(64, moved)},
                       {scaled_ramp(64, grown)}, {5}, {6}}},
                     statistics_dump());
    test::write_text(dir / (std::string(side) + "/rank_0/execution_order/tensor_names.csv"),
                     "Tensor,Name\n2,parameter net.fc.weight\n");
  }
  const CompareResult r = test::compare_pair(dir);
  EXPECT_FALSE(r.first_divergence.found) << r.first_divergence.op.op_name << ": " << r.first_divergence.cause;
  EXPECT_GT(r.warnings + r.errors, 0u);  // the rows differ all the same
}

// Statistics across stacks, first iteration, a model held in float16 (`model.half()`): its parameters are
// the reference's rounded, within float16's precision. That is the stack's own rounding, which the input's
// precision floor counts: an op whose error grows far beyond it (a layer norm's eps changed) is still named,
// and one that stays within it is not.
TEST(ComparePrecision, FromStatisticsAParameterHeldInALowerPrecisionStillLetsGrowthBeJudged) {
  for (const bool fault : {false, true}) {
    test::TempDir dir;
    for (const char* side : {"r", "t"}) {
      const bool target = side[0] == 't';
      test::DumpSpec spec = statistics_dump();
      if (target) spec.statistics_dtype = DType::Float16;
      const double rounded = target ? 2e-4 : 0;  // below float16's half epsilon, 4.9e-4
      const double normalized = !target ? 0 : fault ? 5e-2 : 3e-4;
      const std::vector<float> x = ramp(64, 0);
      test::write_dump(dir / side, 0, 0,
                       {{"linear", "Default/net-Net/fc-Linear/linear-op0", {x, scaled_ramp(64, rounded)},
                         {scaled_ramp(64, rounded)}, {1, 2}, {3}},
                        {"layer_norm", "Default/net-Net/norm-LayerNorm/layer_norm-op0", {scaled_ramp(64, rounded)},
                         {scaled_ramp(64, normalized)}, {3}, {4}}},
                       spec);
      test::write_text(dir / (std::string(side) + "/rank_0/execution_order/tensor_names.csv"),
                       "Tensor,Name\n2,parameter net.fc.weight\n");
    }
    const CompareResult r = test::compare_pair(dir);
    EXPECT_EQ(r.first_divergence.found, fault) << r.first_divergence.op.op_name << ": " << r.first_divergence.cause;
    if (fault) EXPECT_EQ(r.first_divergence.op.op_type, "layer_norm");
  }
}

// Amid bfloat16 rounding, a buffer batch_norm updates in place (its schema does not say so) agrees where
// the forward op reads it and differs where its backward does: it changed since, by an op that does not
// show it, and carries the differences before it. With nothing differing before, it is still the origin.
TEST(ComparePrecision, ABufferThatChangedSinceAnOpReadItCarriesTheDifferencesBeforeIt) {
  for (const bool amid : {true, false}) {
    test::TempDir dir;
    for (const char* side : {"r", "t"}) {
      const bool target = side[0] == 't';
      const std::vector<float> conv = target && amid ? kBf16Conv : kRefConv;
      const std::vector<float> updated = target ? std::vector<float>{0.101f, 0.202f, 0.303f}
                                                : std::vector<float>{0.1f, 0.2f, 0.3f};
      test::write_dump(dir / side, 0, 0,
                       {{"conv2d", "Default/net-Net/conv1-Conv2d/conv2d-op0", {{1, 2, 3}, {0.5f}}, {conv}, {1, 2}, {3}},
                        {"batch_norm", "Default/net-Net/bn-BatchNorm2d/batch_norm-op0", {{4, 5, 6}, {0, 0, 0}},
                         {{-1, 0, 1}}, {4, 9}, {5}},
                        {"native_batch_norm_backward",
                         "Gradients/Default/net-Net/bn-BatchNorm2d/batch_norm-op0/NativeBatchNormBackward0/"
                         "native_batch_norm_backward-op0",
                         {{1, 1, 1}, updated}, {{0.5f, target ? 0.505f : 0.5f, 0.5f}}, {6, 9}, {7}}});
      test::write_text(dir / (std::string(side) + "/rank_0/execution_order/tensor_names.csv"),
                       "Tensor,Name\n9,buffer net.bn.running_mean\n");
    }
    const auto& f = test::compare_pair(dir).first_divergence;
    EXPECT_EQ(f.found, !amid) << f.cause;
    if (!amid) {
      EXPECT_EQ(f.op.op_type, "native_batch_norm_backward");
      EXPECT_NE(f.cause.find("(buffer net.bn.running_mean) differs: no dumped op produced it"), std::string::npos)
          << f.cause;
    }
  }
}

// An op with several floating outputs lowers its precision only when all of them are coarser: one
// float32 output whose values happen to fit in bfloat16 (a bias gradient summing a few dyadic numbers)
// beside one that does not is not a bfloat16 computation.
TEST(ComparePrecision, OneOutputThatFitsInBfloat16IsNoPrecisionChange) {
  test::TempDir dir;
  auto ops = [](const std::vector<float>& second_out1) {
    return std::vector<OpSpec>{
        {"conv2d", "Default/net-Net/conv1-Conv2d/conv2d-op0", {{1, 2, 3}, {0.5f}}, {kRefConv}, {1, 9}, {2}},
        {"conv2d", "Default/net-Net/conv2-Conv2d/conv2d-op0", {kRefConv, {0.25f}}, {kRefConv, second_out1}, {2, 8},
         {3, 4}},
    };
  };
  test::write_dump(dir / "r", 0, 0, ops(kRefConv));
  test::write_dump(dir / "t", 0, 0, ops(kBf16Conv));
  // (the output differs within the rounding of the precision its values hold: nothing to name)
  const auto& f = test::compare_pair(dir).first_divergence;
  EXPECT_FALSE(f.found) << f.cause;
}

// Amid differences already there, an op that draws random numbers (dropout) differs by its draws where
// the two sides drew differently (PyTorch 2.x against 1.13 from one seed): it is not blamed for the growth
// of its error, where an arithmetic op with the same numbers is.
TEST(ComparePrecision, ADropoutThatDrewOtherwiseIsNotBlamedForGrowth) {
  for (const char* type : {"dropout", "mul"}) {
    test::TempDir dir;
    auto ops = [&](const std::vector<float>& conv, const std::vector<float>& dropped) {
      std::vector<OpSpec> v = chain(conv, conv, 12.3f);
      v.push_back({type, std::string("Default/net-Net/drop-Dropout/") + type + "-op0", {conv}, {dropped}, {2}, {6}});
      return v;
    };
    test::write_dump(dir / "r", 0, 0, ops(kRefConv, {0, 2.2444444f, 3.3666667f}));
    test::write_dump(dir / "t", 0, 0, ops(kBf16Conv, {1.1197917f, 0, 3.3680556f}));
    const auto& f = test::compare_pair(dir).first_divergence;
    EXPECT_EQ(f.found, std::string(type) == "mul") << type << ": " << f.cause;
  }
}

// Statistics across PyTorch versions: dropout drew other masks from the same seed. Its output's norm
// moves by about a percent, and a layer norm after it keeps its norm whatever the draws did, so the
// linear after that seems to grow an error a million times. Once a random op's statistics moved beyond
// its inputs' error, no growth after it is blamed from statistics; where it drew the same, the linear's
// growth still names it.
TEST(ComparePrecision, FromStatisticsNoGrowthIsJudgedAfterARandomOpDrewOtherwise) {
  for (const bool drew_otherwise : {true, false}) {
    test::TempDir dir;
    for (const char* side : {"r", "t"}) {
      const bool target = side[0] == 't';
      const std::vector<float> conv = ramp(256, target);
      std::vector<float> dropped(conv.size());
      const size_t skip = target && drew_otherwise ? 1 : 0;  // the element of each five the mask drops
      for (size_t i = 0; i < conv.size(); ++i) dropped[i] = i % 5 == skip ? 0.0f : conv[i] * 1.25f;
      const std::vector<float> out = target ? std::vector<float>{10.02f, 20.04f} : std::vector<float>{10.0f, 20.0f};
      test::write_dump(dir / side, 0, 0,
                       {{"conv2d", "Default/net-Net/conv1-Conv2d/conv2d-op0", {ramp(256, 0)}, {conv}, {1}, {2}},
                        {"dropout", "Default/net-Net/drop-Dropout/dropout-op0", {conv}, {dropped}, {2}, {3}},
                        {"layer_norm", "Default/net-Net/norm-LayerNorm/layer_norm-op0", {dropped},
                         {ramp(256, target)}, {3}, {4}},
                        {"linear", "Default/net-Net/fc-Linear/linear-op0", {ramp(256, target)}, {out}, {4}, {5}}},
                       statistics_dump());
    }
    const auto& f = test::compare_pair(dir).first_divergence;
    EXPECT_EQ(f.found, !drew_otherwise) << f.op.op_name << ": " << f.cause;
    if (!drew_otherwise) EXPECT_EQ(f.op.op_type, "linear") << f.cause;
  }
}

// Statistics of a bfloat16 run (the target) against float32, three ops: an op whose inputs differ by a few
// float32 steps, then an op of `type` whose output's norm moves by `moved` (relative), then a linear layer.
// What the compare names first.
FirstDivergence first_divergence_of_a_bf16_statistics_chain(const char* type, double moved) {
  test::TempDir dir;
  for (const char* side : {"r", "t"}) {
    const bool target = side[0] == 't';
    test::DumpSpec spec = statistics_dump();
    if (target) spec.statistics_dtype = DType::BFloat16;
    const std::vector<float> out = target ? scaled_ramp(256, moved) : ramp(256, 0);
    test::write_dump(dir / side, 0, 0,
                     {{"linear", "Default/net-Net/fc1-Linear/linear-op0", {ramp(256, 0)}, {ramp(256, 3 * target)}, {1}, {2}},
                      {type, std::string("Default/net-Net/m-Module/") + type + "-op0", {ramp(256, 3 * target)}, {out}, {2}, {3}},
                      {"linear", "Default/net-Net/fc2-Linear/linear-op0", {out}, {out}, {3}, {4}}},
                     spec);
  }
  return test::compare_pair(dir).first_divergence;
}

// An input's norm may hide up to its floor of error, so growth is judged against that floor; but a layer
// norm's output keeps its size whatever its input hides, so its own change (an eps of 0.1 instead of 1e-5:
// the norm 4% smaller) is named.
TEST(ComparePrecision, FromStatisticsANormalizingOpIsJudgedByItsInputsMeasuredError) {
  for (const char* type : {"layer_norm", "gelu"}) {
    const FirstDivergence f = first_divergence_of_a_bf16_statistics_chain(type, -0.042);
    const bool normalizes = std::string(type) == "layer_norm";
    EXPECT_EQ(f.found, normalizes) << type << ": " << f.op.op_name << ": " << f.cause;  // gelu: within 12x the floor
    if (normalizes) EXPECT_EQ(f.op.op_type, "layer_norm") << f.cause;
  }
}

// An op that selects or averages its input's elements (a pooling) passes the rounding its input's
// statistics may hide on at most twice, not 12 times, so an average pooling that counts its padding (its
// output's norm 7% smaller, from inputs whose statistics agree within bfloat16's rounding) is named, where a
// convolution with the same numbers may have grown that rounding (within 12x the floor: not named).
TEST(ComparePrecision, FromStatisticsAnOpThatSelectsOrAveragesPassesOnOnlyTwiceTheRoundingItsInputsHide) {
  for (const char* type : {"avg_pool2d", "conv2d"}) {
    const FirstDivergence f = first_divergence_of_a_bf16_statistics_chain(type, -0.07);
    const bool selects = std::string(type) == "avg_pool2d";
    EXPECT_EQ(f.found, selects) << type << ": " << f.op.op_name << ": " << f.cause;
    if (selects) {
      EXPECT_EQ(f.op.op_type, "avg_pool2d") << f.cause;
      EXPECT_NE(f.cause.find("an op that selects or averages elements passes on at most 2x"), std::string::npos)
          << f.cause;
    }
  }
}

// Statistics of a bfloat16 run against float32: a leaky ReLU keeps its input's extremes, mapped by its
// slope, on each side. A slope of 0.1 instead of 0.05 moves its output's min by 0.05 and its norm by 0.4%
// (far within the growth its input's hidden rounding allows): the min names it. A gelu's min is not its
// input's, so the same numbers there are growth within 12x the floor (not named).
TEST(ComparePrecision, FromStatisticsAnExtremeAnOpKeepsFromItsInputMovesOnlyAsFarAsTheInputs) {
  auto signed_ramp = [](bool target) {
    std::vector<float> v(256);
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = -1.0f + 2.0f * static_cast<float>(i) / 256.0f;
      if (target) v[i] = std::nextafter(std::nextafter(v[i], 2.0f), 2.0f);
    }
    return v;
  };
  for (const char* type : {"leaky_relu", "gelu"}) {
    test::TempDir dir;
    for (const char* side : {"r", "t"}) {
      const bool target = side[0] == 't';
      test::DumpSpec spec = statistics_dump();
      if (target) spec.statistics_dtype = DType::BFloat16;
      const std::vector<float> in = signed_ramp(target);
      std::vector<float> out = in;
      for (float& x : out) x = x < 0 ? x * (target ? 0.1f : 0.05f) : x;
      test::write_dump(dir / side, 0, 0,
                       {{"conv2d", "Default/net-Net/c1-Conv2d/conv2d-op0", {ramp(256, 0)}, {in}, {1}, {2}},
                        {type, std::string("Default/net-Net/") + type + "-op0", {in}, {out}, {2}, {3}},
                        {"linear", "Default/net-Net/fc-Linear/linear-op0", {out}, {out}, {3}, {4}}},
                       spec);
    }
    const auto& f = test::compare_pair(dir).first_divergence;
    const bool keeps = std::string(type) == "leaky_relu";
    EXPECT_EQ(f.found, keeps) << type << ": " << f.op.op_name << ": " << f.cause;
    if (keeps) {
      EXPECT_EQ(f.op.op_type, "leaky_relu") << f.cause;
      EXPECT_NE(f.cause.find("its output's min moved by 0.05"), std::string::npos) << f.cause;
    }
  }
}

TEST(ComparePrecision, ThePrecisionSaidIsTheOneTheDifferingRowsHold) {
  // A float64 pair's float32 side: every op's error grows from float32's rounding, 1.5x at each op,
  // and one op's outputs cancelled to a few ulps on both sides (exact in bfloat16, as a batch norm's
  // bias gradient is): the pair agrees to float32 precision, not bfloat16.
  auto ops = [](bool target) {
    std::vector<OpSpec> out;
    std::vector<float> x = {1.01f, 2.02f, 3.03f};
    double error = 1e-6;
    for (uint64_t i = 0; i < 24; ++i, error *= 1.5) {
      std::vector<float> y;
      for (size_t k = 0; k < x.size(); ++k)
        y.push_back(static_cast<float>((1.01 + k * 1.01) * std::pow(1.25, i + 1) * (target ? 1 + error * (k + 1) : 1)));
      out.push_back({"mul", "Default/net-Net/m" + std::to_string(i) + "-Scale/mul-op0", {x}, {y}, {i + 1}, {i + 2}});
      x = y;
    }
    const std::vector<float> residue = {target ? 0x1.02p-20f : 0x1p-20f, -0x1.8p-21f};  // within bfloat16's rounding
    out.push_back({"sum", "Default/net-Net/s-Sum/sum-op0", {x}, {residue}, {25}, {26}});
    return out;
  };
  test::TempDir dir;
  test::write_dump(dir / "r", 0, 0, ops(false));
  test::write_dump(dir / "t", 0, 0, ops(true));
  const CompareResult r = test::compare_pair(dir);
  EXPECT_FALSE(r.first_divergence.found) << r.first_divergence.cause;
  EXPECT_EQ(r.precision.rfind("outputs agree to float32 precision", 0), 0u) << r.precision;
}

// A gru under bfloat16 autocast returns float32 but runs its linear layers in bfloat16: on the very
// inputs the reference had, its output differs by about 0.4%, within bfloat16's rounding, while a conv
// after it holds bfloat16 values (the stack lowers ops to bfloat16). That is the stack, not an origin;
// where the target's args file says the gru ran with autocast off, it is (its own dtype computed it).
TEST(ComparePrecision, AnOpTheStackLowersInsideIsNoOriginWhereItRanUnderThatAutocast) {
  const std::vector<float> gru_ref = {0.5123f, -0.2571f, 0.7519f}, gru_bf16_inside = {0.5139f, -0.2563f, 0.7541f};
  auto ops = [](const std::vector<float>& gru, const std::vector<float>& conv) {
    return std::vector<OpSpec>{
        {"gru", "Default/net-Net/gru-GRU/gru-op0", {{1, 2, 3}, {0.5f}}, {gru}, {1, 9}, {2}},
        {"conv2d", "Default/net-Net/conv1-Conv2d/conv2d-op0", {gru, {0.25f}}, {conv}, {2, 8}, {3}},
    };
  };
  for (const char* autocast : {"", "\"BFloat16\"", "null"}) {
    test::TempDir dir;
    test::write_dump(dir / "r", 0, 0, ops(gru_ref, kRefConv));
    test::write_dump(dir / "t", 0, 0, ops(gru_bf16_inside, kBf16Conv));
    if (*autocast)
      test::write_text(dir / "t/rank_0/net/0/0/gru.Default_net-Net_gru-GRU_gru-op0.json",
                       std::string(R"({"op_name":"Default/net-Net/gru-GRU/gru-op0","operator":"aten::gru","overload":"input",)"
                                   R"("arguments":[],"autocast_cpu":)") + autocast + "}");
    const auto& f = test::compare_pair(dir).first_divergence;
    if (std::string(autocast) == "null") {
      ASSERT_TRUE(f.found) << autocast;
      EXPECT_EQ(f.op.op_name, "Default/net-Net/gru-GRU/gru-op0");
    } else {
      EXPECT_FALSE(f.found) << autocast << ": " << f.cause;
    }
  }
}

// The backward engine's gradient sums are named by their order in one scope (Gradients/Default/add-opN);
// another stack's autograd graph runs them in another order, so add-op0 of one side is add-op1 of the
// other. Their shapes tell them apart, and they are paired by what they are.
TEST(ComparePrecision, GradientSumsRenumberedByAnotherStackArePairedByTypeAndShape) {
  auto ops = [](bool swapped) {
    std::vector<OpSpec> v = {
        {"add", "Gradients/Default/add-op0", {{1, 2}, {3, 4}}, {{4, 6}}},
        {"add", "Gradients/Default/add-op1", {{1, 2, 3}, {1, 1, 1}}, {{2, 3, 4}}},
    };
    if (swapped) {
      std::swap(v[0].inputs, v[1].inputs);
      std::swap(v[0].outputs, v[1].outputs);
    }
    return v;
  };
  test::TempDir dir;
  test::write_dump(dir / "r", 0, 0, ops(false));
  test::write_dump(dir / "t", 0, 0, ops(true));
  const CompareResult r = test::compare_pair(dir);
  EXPECT_EQ(r.errors, 0u);
  EXPECT_EQ(r.warnings, 0u);
  EXPECT_EQ(r.unmatched, 0u);
  EXPECT_EQ(r.aligned, 6u);
  EXPECT_FALSE(r.first_divergence.found) << r.first_divergence.cause;
  for (const CompareRow& row : r.rows) {
    ASSERT_TRUE(row.target && row.reference);
    EXPECT_EQ(row.target->shape, row.reference->shape) << row.target->op_name;
  }
}

// An op whose inputs the target already holds at bfloat16, made by an op both sides ran (the backward
// engine's sums of a bfloat16 weight copy's gradients, read by the next sum as bfloat16), got its
// precision with them: no precision change at it, although other ops of its type compute in float32.
TEST(ComparePrecision, AnInputAlreadyCoarseFromAMatchedOpBringsItsPrecision) {
  auto ops = [](const std::vector<float>& made, const std::vector<float>& in, const std::vector<float>& out) {
    return std::vector<OpSpec>{
        {"add", "Gradients/Default/add-op0", {{1.1f, 2.3f, 3.1f}, {3.7f, 4.9f, 2.3f}}, {made}, {1, 2}, {7}},
        {"add", "Gradients/Default/add-op1", {in, in}, {out}, {7, 7}, {9}},
    };
  };
  test::TempDir dir;
  test::write_dump(dir / "r", 0, 0, ops({4.8f, 7.2f, 5.4f}, kRefConv, {2.02f, 4.04f, 6.06f}));
  test::write_dump(dir / "t", 0, 0, ops({4.8001f, 7.2001f, 5.4001f}, kBf16Conv, {2.015625f, 4.03125f, 6.0625f}));
  const auto& f = test::compare_pair(dir).first_divergence;
  EXPECT_TRUE(!f.found || f.cause.find("a precision change at this op") == std::string::npos) << f.cause;
  EXPECT_FALSE(f.found) << f.cause;
}
