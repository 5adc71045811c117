// compare_dumps on small dumps with known answers: pairing by rank and iteration, statistics
// against tensors, special values, and the first divergence from data flow.
#include <gtest/gtest.h>

#include <cmath>

#include "dump_builder.h"
#include "compare/compare.h"
#include "compare/reports.h"
#include "opdump/error.h"
#include "test_util.h"

using namespace opdump;
using test::OpSpec;

namespace {

// x (data, id 1) -> conv (weight id 9) -> id 2 -> relu -> id 3 -> linear -> id 4
std::vector<OpSpec> chain(float conv_out = 2, float weight = 0.5f) {
  return {
      {"conv2d", "Default/net-Net/conv1-Conv2d/conv2d-op0", {{1, 2, 3}, {weight}}, {{conv_out, 4, 6}}, {1, 9}, {2}},
      {"relu", "Default/net-Net/relu-ReLU/relu-op0", {{conv_out, 4, 6}}, {{conv_out, 4, 6}}, {2}, {3}},
      {"linear", "Default/net-Net/fc-Linear/linear-op0", {{conv_out, 4, 6}}, {{conv_out + 10}}, {3}, {4}},
  };
}


}  // namespace

TEST(CompareOrigin, AChangedComputationIsTheOriginNotWhatItFeeds) {
  test::TempDir dir;
  test::write_dump(dir / "r", 0, 0, chain());
  test::write_dump(dir / "t", 0, 0, chain(2.5f));  // conv's output differs, its inputs do not
  CompareResult r = test::compare_pair(dir);
  const auto& f = r.first_divergence;
  ASSERT_TRUE(f.found);
  EXPECT_EQ(f.kind, FirstDivergence::Kind::Output);
  EXPECT_EQ(f.op.op_name, "Default/net-Net/conv1-Conv2d/conv2d-op0");
  EXPECT_TRUE(f.data_flow);
  EXPECT_TRUE(f.inputs_agree);
  EXPECT_NE(f.cause.find("every input produced by a dumped op matches"), std::string::npos) << f.cause;
  ASSERT_EQ(f.reaches.size(), 2u);  // relu, then linear, through the data flow
  EXPECT_EQ(f.reaches[0].op_type, "relu");
  EXPECT_EQ(f.reaches[1].op_type, "linear");
}

TEST(CompareOrigin, AChangedParameterMakesItsOpTheOrigin) {
  test::TempDir dir;
  test::write_dump(dir / "r", 0, 0, chain());
  test::write_dump(dir / "t", 0, 0, chain(2.5f, 0.6f));  // the weight (no dumped op made it) differs
  const auto& f = test::compare_pair(dir).first_divergence;
  ASSERT_TRUE(f.found);
  EXPECT_EQ(f.op.op_type, "conv2d");
  EXPECT_FALSE(f.inputs_agree);
  EXPECT_NE(f.cause.find("input 1 differs: no dumped op produced it (a parameter, constant or data batch)"), std::string::npos) << f.cause;
}

TEST(CompareOrigin, OutputsOnlyStillFollowTheDataFlow) {
  test::TempDir dir;
  test::DumpSpec outputs_only;
  outputs_only.inputs = false;
  auto later = chain();
  later[1].outputs = {{9, 4, 6}};  // relu is the origin: conv's output (its input) matches
  later[2].outputs = {{19}};
  test::write_dump(dir / "r", 0, 0, chain(), outputs_only);
  test::write_dump(dir / "t", 0, 0, later, outputs_only);
  const auto& f = test::compare_pair(dir).first_divergence;
  ASSERT_TRUE(f.found);
  EXPECT_EQ(f.op.op_type, "relu");
  EXPECT_TRUE(f.data_flow);
  EXPECT_EQ(f.reaches.size(), 1u);
}

TEST(CompareOrigin, AnOpOnlyTheTargetRanIsNamedBetweenItsNeighbours) {
  test::TempDir dir;
  auto ref = chain();
  auto tgt = chain();
  // an inserted scale between relu (id 3) and linear: linear now reads id 5
  tgt.insert(tgt.begin() + 2, OpSpec{"mul", "Default/net-Net/mul-op0", {{2, 4, 6}}, {{2.2f, 4.4f, 6.6f}}, {3}, {5}});
  tgt[3].inputs = {{2.2f, 4.4f, 6.6f}};
  tgt[3].input_ids = {5};
  tgt[3].outputs = {{13}};
  test::write_dump(dir / "r", 0, 0, ref);
  test::write_dump(dir / "t", 0, 0, tgt);
  const auto& f = test::compare_pair(dir).first_divergence;
  ASSERT_TRUE(f.found);
  EXPECT_EQ(f.kind, FirstDivergence::Kind::ExtraOp);
  EXPECT_EQ(f.op.op_name, "Default/net-Net/mul-op0");
  EXPECT_EQ(f.neighbours, "between Default/net-Net/relu-ReLU/relu-op0 and Default/net-Net/fc-Linear/linear-op0");
  EXPECT_EQ(divergence_headline(f).rfind("extra op in the target: mul Default/net-Net/mul-op0", 0), 0u);
}

TEST(CompareOrigin, AnOpOnlyTheReferenceRanIsNamedAsMissing) {
  test::TempDir dir;
  auto ref = chain();
  ref.insert(ref.begin() + 2, OpSpec{"mul", "Default/net-Net/mul-op0", {{2, 4, 6}}, {{2.2f, 4.4f, 6.6f}}, {3}, {5}});
  ref[3].inputs = {{2.2f, 4.4f, 6.6f}};
  ref[3].input_ids = {5};
  ref[3].outputs = {{13}};
  test::write_dump(dir / "r", 0, 0, ref);
  test::write_dump(dir / "t", 0, 0, chain());
  const auto& f = test::compare_pair(dir).first_divergence;
  ASSERT_TRUE(f.found);
  EXPECT_EQ(f.kind, FirstDivergence::Kind::MissingOp);
  EXPECT_EQ(f.op.op_name, "Default/net-Net/mul-op0");
  ASSERT_FALSE(f.reaches.empty());
  EXPECT_EQ(f.reaches[0].op_type, "linear");
}

TEST(CompareOrigin, WithoutExecutionOrderTheDumpedInputsDecide) {
  test::TempDir dir;
  test::DumpSpec no_order;
  no_order.execution_order = false;
  test::write_dump(dir / "r", 0, 0, chain(), no_order);
  test::write_dump(dir / "t", 0, 0, chain(2.5f), no_order);
  const auto& f = test::compare_pair(dir).first_divergence;
  ASSERT_TRUE(f.found);
  EXPECT_EQ(f.op.op_type, "conv2d");
  EXPECT_FALSE(f.data_flow);
}

TEST(CompareOrigin, RanksArePairedWithTheirOwnRankOnly) {
  test::TempDir dir;
  for (uint32_t rank : {0u, 1u}) {
    test::write_dump(dir / "r", rank, 0, chain());
    test::write_dump(dir / "t", rank, 0, rank == 1 ? chain(2.5f) : chain());  // the bug is on rank 1 only
  }
  CompareResult r = test::compare_pair(dir);
  for (const CompareRow& row : r.rows) {
    ASSERT_TRUE(row.target && row.reference);
    EXPECT_EQ(row.target->rank(), row.reference->rank());
    // rank 0 passes everywhere; on rank 1 only conv's inputs still agree
    const bool agrees = row.target->rank() == 0 || (row.target->op_type == "conv2d" && row.target->io == IoKind::Input);
    EXPECT_EQ(row.verdict == Verdict::Pass, agrees);
  }
  ASSERT_TRUE(r.first_divergence.found);
  EXPECT_EQ(r.first_divergence.op.rank, 1u);
  EXPECT_EQ(r.first_divergence.op.op_type, "conv2d");
}

TEST(CompareOrigin, OneRankAgainstAnotherIsPairedWithANote) {
  test::TempDir dir;
  test::write_dump(dir / "r", 1, 0, chain());
  test::write_dump(dir / "t", 0, 0, chain());
  CompareResult r = test::compare_pair(dir);
  EXPECT_EQ(r.unmatched, 0u);
  EXPECT_FALSE(r.first_divergence.found);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("rank 0 of the target is compared with rank 1"), std::string::npos) << r.notes[0];
}

TEST(CompareOrigin, StatisticsAgainstTensorsOfTheSameRunPass) {
  test::TempDir dir;
  test::DumpSpec stats;
  stats.tensors = false;
  stats.statistics = true;
  test::write_dump(dir / "t", 0, 0, chain(), stats);
  test::write_dump(dir / "r", 0, 0, chain());
  CompareResult r = test::compare_pair(dir);
  EXPECT_EQ(r.passed, r.rows.size());
  EXPECT_FALSE(r.first_divergence.found);
  for (const CompareRow& row : r.rows) EXPECT_TRUE(row.statistics_only && row.stat_compared[kStatL2Norm]);
}

TEST(CompareOrigin, AStatisticOneSideLacksIsNotComparedNeverZero) {
  test::TempDir dir;
  for (const char* side : {"t", "r"})
    std::filesystem::create_directories(dir / (std::string(side) + "/rank_0/net/0/0"));
  const std::string head = "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,";
  test::write_text(dir / "t/rank_0/net/0/0/statistic.csv", head + "Max Value\nadd,Default/add-op0,0,0,1,output,0,4,float32,\"(1)\",7\n");
  test::write_text(dir / "r/rank_0/net/0/0/statistic.csv", head + "Min Value\nadd,Default/add-op0,0,0,1,output,0,4,float32,\"(1)\",1\n");
  CompareResult r = test::compare_pair(dir);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].verdict, Verdict::NotCompared);
  EXPECT_NE(r.rows[0].reason.find("no statistic recorded on both sides"), std::string::npos);
  // a shape that differs is an error even for statistics
  test::write_text(dir / "r/rank_0/net/0/0/statistic.csv", head + "Max Value\nadd,Default/add-op0,0,0,1,output,0,8,float32,\"(2)\",7\n");
  CompareResult s = test::compare_pair(dir);
  EXPECT_EQ(s.rows[0].verdict, Verdict::Error);
  EXPECT_NE(s.rows[0].reason.find("shape mismatch"), std::string::npos);
}

TEST(CompareMetrics, NanAgainstInfAndOppositeInfinitiesMismatch) {
  const float nan = NAN, inf = INFINITY;
  const float x[3] = {1, nan, 3}, y[3] = {1, inf, 3}, z[3] = {1, -inf, 3}, w[3] = {1, nan, 3};
  bool mismatch = false;
  compute_metrics(TensorView{x, DType::Float32, {3}}, TensorView{y, DType::Float32, {3}}, {}, &mismatch);
  EXPECT_TRUE(mismatch);
  compute_metrics(TensorView{y, DType::Float32, {3}}, TensorView{z, DType::Float32, {3}}, {}, &mismatch);
  EXPECT_TRUE(mismatch);
  TensorMetrics m = compute_metrics(TensorView{x, DType::Float32, {3}}, TensorView{w, DType::Float32, {3}}, {}, &mismatch);
  EXPECT_FALSE(mismatch);
  EXPECT_EQ(m.nan_inf_same_position, 1u);
}

TEST(CompareMetrics, ThousandthRatiosDoNotDependOnTheScaleOfTheData) {
  // Gradients around 1e-8 with a relative error of 2e-3: no element is within one thousandth,
  // whatever the magnitude (the dtype's eps only stands in where the reference is 0).
  std::vector<float> y(1000), x(1000);
  for (int scale : {-8, 0, 6}) {
    for (size_t i = 0; i < y.size(); ++i) {
      y[i] = static_cast<float>(std::pow(10.0, scale) * (1 + 0.001 * static_cast<double>(i)));
      x[i] = y[i] * 1.002f;
    }
    bool mismatch = false;
    TensorMetrics m = compute_metrics(TensorView{x.data(), DType::Float32, {1000}},
                                      TensorView{y.data(), DType::Float32, {1000}}, {}, &mismatch);
    EXPECT_EQ(m.one_thousandth_ratio, 0.0) << scale;
    EXPECT_EQ(m.five_thousandths_ratio, 1.0) << scale;
  }
  const float zeros[2] = {0, 0}, tiny[2] = {0, 1e-12f};
  bool mismatch = false;
  TensorMetrics m = compute_metrics(TensorView{tiny, DType::Float32, {2}}, TensorView{zeros, DType::Float32, {2}}, {},
                                    &mismatch);
  EXPECT_EQ(m.one_thousandth_ratio, 1.0);  // 1e-12 / eps(float32) < 0.001
}

TEST(CompareErrors, AFileAgainstAFolderOrDumpsWithNothingInCommon) {
  test::TempDir dir;
  test::write_dump(dir / "r", 0, 0, chain());
  test::write_dump(dir / "t", 0, 0, {{"other", "Default/other-op0", {}, {{1}}, {}, {7}}});
  const std::string file = (dir / "r") + "/rank_0/net/0/0/" +
                           mindspore_file_name(OpIdentity{"relu", "Default/net-Net/relu-ReLU/relu-op0", 1, 0, 1000001},
                                               IoKind::Output, 0);
  ASSERT_TRUE(std::filesystem::exists(file));
  try {
    compare_dumps(file, dir / "r", {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("compare two files or two dumps"), std::string::npos);
  }
  try {
    compare_dumps(dir / "t", dir / "r", {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has a partner"), std::string::npos) << e.what();
  }
  std::filesystem::create_directories(dir / "empty");
  EXPECT_THROW(compare_dumps(dir / "empty", dir / "r", {}), Error);
}

TEST(CompareOrigin, InputsOnlyDumpsNameTheOpWhoseReadersSawItFail) {
  // dump_mode input: conv's changed output shows only as relu's input (and linear's, through relu)
  test::TempDir dir;
  auto inputs_only = [](std::vector<OpSpec> ops) {
    for (auto& op : ops) op.outputs.clear();
    return ops;
  };
  test::write_dump(dir / "r", 0, 0, inputs_only(chain()));
  auto later = chain(2.5f);
  test::write_dump(dir / "t", 0, 0, inputs_only(later));
  // the execution order still lists every op's outputs (it is written whatever is dumped)
  for (const char* side : {"r", "t"}) {
    const std::string order = (dir / side) + "/rank_0/execution_order/ms_execution_order_graph_0.csv";
    test::write_text(order, "Iteration,Task ID,Op Type,Op Name,Model,Input Tensors,Output Tensors,Timestamp\n"
                            "0,0,conv2d,Default/net-Net/conv1-Conv2d/conv2d-op0,net,1 9,2,1000000\n"
                            "0,1,relu,Default/net-Net/relu-ReLU/relu-op0,net,2,3,1000001\n"
                            "0,2,linear,Default/net-Net/fc-Linear/linear-op0,net,3,4,1000002\n");
  }
  const auto& f = test::compare_pair(dir).first_divergence;
  ASSERT_TRUE(f.found);
  EXPECT_EQ(f.op.op_type, "conv2d");
  EXPECT_TRUE(f.inputs_agree);
  EXPECT_NE(f.cause.find("its output (not dumped) differs: Default/net-Net/relu-ReLU/relu-op0 read it as input 0"),
            std::string::npos)
      << f.cause;
  // a changed weight with inputs alone dumped: the op reading it
  test::TempDir weights;
  test::write_dump(weights / "r", 0, 0, inputs_only(chain()));
  test::write_dump(weights / "t", 0, 0, inputs_only(chain(2, 0.7f)));
  const auto& g = test::compare_pair(weights).first_divergence;
  ASSERT_TRUE(g.found);
  EXPECT_EQ(g.op.op_type, "conv2d");
  EXPECT_NE(g.cause.find("input 1 differs: no dumped op produced it"), std::string::npos) << g.cause;
}

// Ops left unmatched by name line up by execution order and type only when their tensors have the same
// shapes: PyTorch 2.x accumulating a residual's gradient where 1.13 accumulates a parameter's is add_
// against add_, not one op under two names.
TEST(CompareOrigin, OpsAlignedByOrderKeepTheirShapes) {
  for (const bool same : {true, false}) {
    test::TempDir dir;
    const OpSpec relu{"relu", "Default/net-Net/relu-ReLU/relu-op0", {{1, 2, 3}}, {{1, 2, 3}}, {7}, {8}};  // matched by name
    test::write_dump(dir / "t", 0, 0, {relu, {"add_", "Gradients/Default/add_-op0", {{1, 2, 3}, {1, 1, 1}}, {{2, 3, 4}}, {1, 2}, {1}}});
    const std::vector<float> x = same ? std::vector<float>{1, 2, 3} : std::vector<float>{1, 2, 3, 4};
    const std::vector<float> y = same ? std::vector<float>{2, 3, 4} : std::vector<float>{2, 3, 4, 5};
    const std::vector<float> ones(x.size(), 1.0f);
    test::write_dump(dir / "r", 0, 0, {relu, {"add_", "Gradients/AccumulateGrad-0/add_-op0", {x, ones}, {y}, {1, 2}, {1}}});
    const CompareResult r = test::compare_pair(dir);
    size_t aligned = 0, shape_errors = 0;
    for (const CompareRow& row : r.rows) {
      aligned += row.aligned;
      shape_errors += row.reason.find("shape mismatch") != std::string::npos;
    }
    EXPECT_EQ(aligned, same ? 3u : 0u);
    EXPECT_EQ(shape_errors, 0u);
    if (!same) EXPECT_EQ(r.rows.size(), 2u + 6u);  // relu's two, and each side's three tensors on their own
  }
}
