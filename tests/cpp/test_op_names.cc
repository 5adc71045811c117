// Op names that survive unrelated change (src/core/identity/op_names.h).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "identity/op_names.h"

using namespace opdump::identity;

TEST(OpNames, CallIndexCountsPerScopeAndType) {
  CallIndex calls;
  EXPECT_EQ(calls.next("Default/net-Net/conv1-Conv2d", "conv2d"), 0u);
  EXPECT_EQ(calls.next("Default/net-Net/conv1-Conv2d", "conv2d"), 1u);
  // another type in the same scope, or the same type elsewhere, starts its own count
  EXPECT_EQ(calls.next("Default/net-Net/conv1-Conv2d", "add"), 0u);
  EXPECT_EQ(calls.next("Default/net-Net/conv2-Conv2d", "conv2d"), 0u);
  // scope and type are told apart even where their concatenations agree
  EXPECT_EQ(calls.next("Default/a", "bc"), 0u);
  EXPECT_EQ(calls.next("Default/ab", "c"), 0u);
  // backward counts in-place and out-of-place variants together
  EXPECT_EQ(calls.next("Gradients/Default", counted_type("add_")), 0u);
  EXPECT_EQ(calls.next("Gradients/Default", counted_type("add")), 1u);
  EXPECT_EQ(calls.next("Gradients/Default", counted_type("add_")), 2u);
  EXPECT_EQ(counted_type("__and__"), "__and__");
  calls.clear();
  EXPECT_EQ(calls.next("Default/net-Net/conv1-Conv2d", "conv2d"), 0u);
}

TEST(OpNames, CallIndexCountsTheSameBeyondItsInlineKeysAndAcrossClears) {
  // Keys kept inline (short ones, the first few) and in the map (long ones, and any beyond the
  // inline few) count alike, and a clear restarts every count, whichever way it is kept.
  CallIndex calls;
  const std::string long_scope(80, 's');
  const std::vector<std::pair<std::string, std::string>> keys = {
      {"", "convolution"}, {"", "add"}, {long_scope, "mul"}, {"", "relu"}, {"", "mm"}, {"", "sum"},
      {"", "view"}, {"Default/x", "convolution"}, {"Default", "x/convolution"}};
  for (int iteration = 0; iteration < 3; ++iteration) {
    for (uint64_t n = 0; n < 3; ++n)
      for (const auto& [scope, type] : keys) EXPECT_EQ(calls.next(scope, type), n) << scope << "/" << type;
    // a key first seen this iteration, after the inline keys are taken
    EXPECT_EQ(calls.next("", "new" + std::to_string(iteration)), 0u);
    EXPECT_EQ(calls.next("", "new" + std::to_string(iteration)), 1u);
    calls.clear();
  }
  // Keys of earlier iterations that are not used again are dropped in time and start afresh.
  for (int iteration = 0; iteration < 200; ++iteration) {
    EXPECT_EQ(calls.next(long_scope + std::to_string(iteration), "add"), 0u);
    calls.clear();
  }
  EXPECT_EQ(calls.next(long_scope, "mul"), 0u);
  EXPECT_EQ(calls.next(long_scope, "mul"), 1u);
}

TEST(OpNames, AnInsertedOpRenamesNothingElse) {
  // The same model with an extra `mul` in one scope: every other op keeps its name.
  auto names = [](bool extra) {
    CallIndex calls;
    std::vector<std::string> out;
    auto op = [&](const std::string& scope, const std::string& type) {
      out.push_back(op_name(scope, type, calls.next(scope, type)));
    };
    op("Default/net-Net/block-Block", "conv2d");
    if (extra) op("Default/net-Net/block-Block", "mul");
    op("Default/net-Net/block-Block", "relu");
    op("Default/net-Net/head-Linear", "linear");
    op("Default", "mul");  // the loss scaling, outside the model
    return out;
  };
  const auto a = names(false), b = names(true);
  EXPECT_EQ(b[0], a[0]);
  EXPECT_EQ(b[1], "Default/net-Net/block-Block/mul-op0");
  EXPECT_EQ(b[2], a[1]);
  EXPECT_EQ(b[3], a[2]);
  EXPECT_EQ(b[4], "Default/mul-op0");
  EXPECT_EQ(b[4], a[3]);
}

TEST(OpNames, BackwardScopes) {
  EXPECT_EQ(op_name("Default/net-Net/conv1-Conv2d", "conv2d", 0), "Default/net-Net/conv1-Conv2d/conv2d-op0");
  EXPECT_EQ(backward_scope("Default/net/conv1-Conv2d/conv2d-op0", "ConvolutionBackward0"),
            "Gradients/Default/net/conv1-Conv2d/conv2d-op0/ConvolutionBackward0");
  EXPECT_EQ(backward_scope("Default/net/cosine_similarity-op0", "DivBackward0", 0),
            "Gradients/Default/net/cosine_similarity-op0/DivBackward0");
  EXPECT_EQ(backward_scope("Default/net/cosine_similarity-op0", "DivBackward0", 1),
            "Gradients/Default/net/cosine_similarity-op0/DivBackward0-1");
  EXPECT_EQ(orphan_backward_scope("AccumulateGrad", 3), "Gradients/AccumulateGrad-3");
}

TEST(OpNames, TorchScriptHierarchyEntries) {
  EXPECT_EQ(script_scope_element("conv1(Conv2d)"), (std::pair<std::string, std::string>{"conv1-Conv2d", "conv1"}));
  EXPECT_EQ(script_scope_element("plain"), (std::pair<std::string, std::string>{"plain", "plain"}));
}

TEST(OpNames, ModulePathOfScopedNames) {
  EXPECT_EQ(module_path_of("Default/net-Net/layer1-Sequential/0-BasicBlock/conv1-Conv2d/conv2d-op0"), "layer1.0.conv1");
  EXPECT_EQ(module_path_of("Default/net-Net/relu-op0"), "");  // called in the model's own forward
  EXPECT_EQ(module_path_of("Gradients/Default/net/fc-Linear/linear-op0/AddmmBackward0/mm-op0"), std::nullopt);
  EXPECT_EQ(module_path_of("Default/relu-op0"), std::nullopt);  // no model scope
  EXPECT_EQ(module_path_of("Functional.relu.0.forward"), std::nullopt);
}
