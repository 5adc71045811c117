#include <gtest/gtest.h>

#include "opdump/error.h"
#include "select/kernel_filter.h"

using opdump::KernelFilter;

TEST(KernelFilter, OpTypeFromFullName) {
  EXPECT_EQ(opdump::op_type_from_full_name("Default/network-WithLossCell/_backbone-AlexNet/conv3-Conv2d/Conv2D-op12"),
            "Conv2D");
  EXPECT_EQ(opdump::op_type_from_full_name("Relu"), "Relu");
}

TEST(KernelFilter, TypeSubstringIsCaseInsensitive) {
  KernelFilter f({"conv"}, "kernels");
  EXPECT_TRUE(f.matches("Default/net/conv3-Conv2d/Conv2D-op1234", ""));
  EXPECT_TRUE(f.matches("Default/net/x/Conv3D-op1221", ""));
  EXPECT_FALSE(f.matches("Default/net/conv3-Conv2d/ReLU-op5", ""));  // scope is not the type
  EXPECT_TRUE(f.matches("model/layer1/relu.3", "aten::conv2d"));     // framework type is tried too
}

TEST(KernelFilter, ExactFullName) {
  KernelFilter f({"Default/Conv-op12"}, "kernels");
  EXPECT_TRUE(f.matches("Default/Conv-op12", ""));
  EXPECT_FALSE(f.matches("Default/Conv-op123", ""));
}

TEST(KernelFilter, RegexMustMatchWholeName) {
  KernelFilter f({"name-regex(Default/.+)"}, "kernels");
  EXPECT_TRUE(f.matches("Default/a/b-op1", ""));
  EXPECT_FALSE(f.matches("Gradients/Default/a", ""));
}

TEST(KernelFilter, ReportsEntriesThatNeverMatched) {
  KernelFilter f({"conv", "name-regex(.*BatchNorm.*)", "Default/x-op1"}, "kernels");
  f.matches("Default/net/Conv2D-op1", "");
  EXPECT_EQ(f.unmatched_entries(), (std::vector<std::string>{"name-regex(.*BatchNorm.*)", "Default/x-op1"}));
}

TEST(KernelFilter, BadRegexIsAConfigError) {
  try {
    KernelFilter({"ok", "name-regex((unclosed)"}, "common_dump_settings.kernels");
    FAIL();
  } catch (const opdump::ConfigError& e) {
    EXPECT_EQ(e.field(), "common_dump_settings.kernels[1]");
  }
  EXPECT_THROW(KernelFilter({"name-regex()"}, "k"), opdump::ConfigError);
  EXPECT_THROW(KernelFilter({""}, "k"), opdump::ConfigError);
}

TEST(KernelFilter, RegexIsLinearTime) {
  // A pattern that is exponential for backtracking engines finishes at once with RE2.
  KernelFilter f({"name-regex((a+)+b)"}, "kernels");
  EXPECT_FALSE(f.matches(std::string(5000, 'a'), ""));
}
