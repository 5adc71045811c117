// The op path every caller shares (runtime/op_report.h), without any framework: which ops are
// reported at all, how they are numbered, and the one order of the reload rule, the debug scene and
// the selection.
#include "runtime/op_report.h"

#include <gtest/gtest.h>

#include "config/config.h"
#include "dumper_fixtures.h"
#include "runtime/runtime.h"
#include "test_util.h"

using namespace opdump;

namespace {

DumpConfig mindspore(const std::string& path, const std::string& dump_mode, const std::string& kernels,
                     int op_debug_mode = 0) {
  return parse_config(R"({"common_dump_settings": {"dump_mode": )" + dump_mode + R"(, "path": ")" + path +
                          R"(", "net_name": "Net", "iteration": "0|2", "input_output": 1, "kernels": )" + kernels +
                          R"(, "support_device": [0], "op_debug_mode": )" + std::to_string(op_debug_mode) +
                          R"(, "saved_data": "statistic"}, "e2e_dump_settings": {"enable": true}})",
                      "t.json", test::no_env());
}

OpPlan plan_of(const Runtime& runtime, const std::string& type, const std::string& name, const std::string& model = "") {
  OpReport report = OpReport::begin(runtime);
  EXPECT_TRUE(report);
  report.identify(type, name, model, report.model_id(model));
  return report.decide();
}

}  // namespace

TEST(OpReport, SelectedIterationsOnlyAndTaskIdsPerIteration) {
  test::TempDir dir;
  Runtime runtime;
  EXPECT_FALSE(OpReport::begin(runtime));  // no dump configured
  runtime.set_dump_config(mindspore(dir.path(), "1", R"(["Default/conv1-op0"])"));
  OpReport first = OpReport::begin(runtime);
  ASSERT_TRUE(first);
  first.identify("conv2d", "Default/conv1-op0", "", 0);
  OpReport second = OpReport::begin(runtime);
  second.identify("relu", "Default/relu-op0", "", 0);
  EXPECT_EQ(first.record().id.task_id, 0u);
  EXPECT_EQ(second.record().id.task_id, 1u);
  EXPECT_EQ(first.record().iteration, 0u);

  const OpPlan selected = first.decide();
  EXPECT_TRUE(selected.dump && !selected.scene);
  EXPECT_TRUE(selected.inputs);  // input_output 1: inputs only
  EXPECT_FALSE(selected.outputs);
  EXPECT_FALSE(second.decide().dump);  // not among the kernels

  runtime.step();  // iteration 1 is not selected ("0|2"): not reported at all
  EXPECT_FALSE(OpReport::begin(runtime));
  runtime.step();  // iteration 2: numbering starts again
  OpReport again = OpReport::begin(runtime);
  ASSERT_TRUE(again);
  again.identify("conv2d", "Default/conv1-op0", "", 0);
  EXPECT_EQ(again.record().id.task_id, 0u);
  EXPECT_EQ(again.record().iteration, 2u);
  first = OpReport();
  second = OpReport();
  again = OpReport();
  runtime.finalize_dump();
  EXPECT_FALSE(OpReport::begin(runtime));
}

TEST(OpReport, ReloadRuleComesBeforeSceneAndSelection) {
  test::TempDir dir;
  Runtime runtime;
  const uint64_t early = runtime.register_model("early");  // loaded before the acl dump was set
  runtime.set_dump_config(parse_config(R"({"dump": {"dump_path": ")" + dir.path() +
                                           R"(", "dump_list": [{"model_name": "early"}, {"model_name": "late"}]}})",
                                       "acl.json", test::no_env()));
  const uint64_t late = runtime.register_model("late");
  {
    OpReport report = OpReport::begin(runtime);
    ASSERT_TRUE(report);
    EXPECT_EQ(report.model_id("early"), early);
    EXPECT_EQ(report.model_id("late"), late);
    EXPECT_EQ(report.model_id("never registered"), 0u);
  }
  const OpPlan before = plan_of(runtime, "conv2d", "conv1/conv2d-op0", "early");
  EXPECT_FALSE(before.dump || before.scene);  // CANN dumps models loaded after the dump was set
  EXPECT_TRUE(plan_of(runtime, "conv2d", "conv1/conv2d-op0", "late").dump);
  EXPECT_FALSE(plan_of(runtime, "conv2d", "conv1/conv2d-op0", "").dump);  // no model: dump_op_switch off
  runtime.finalize_dump();
}

TEST(OpReport, DebugScenesCheckEveryOpAndDumpNothingThemselves) {
  test::TempDir dir;
  Runtime runtime;
  runtime.set_dump_config(mindspore(dir.path(), "0", "[]", /*op_debug_mode=*/3));
  const OpPlan overflow = plan_of(runtime, "add", "Default/add-op0");
  EXPECT_TRUE(overflow.scene);
  EXPECT_FALSE(overflow.dump);  // only an op whose check fires is written, by the scene
  runtime.set_dump_config(mindspore(dir.path(), "0", "[]"));
  const OpPlan normal = plan_of(runtime, "add", "Default/add-op0");
  EXPECT_TRUE(normal.dump && !normal.scene);
  runtime.finalize_dump();
}

// msprobe's start()/stop(): a paused dump reports no op, and iterations still count.
TEST(OpReport, PausedDumpReportsNothing) {
  test::TempDir dir;
  Runtime runtime;
  runtime.set_dump_config(mindspore(dir.path(), "0", "[]"));
  EXPECT_TRUE(runtime.dumping());
  runtime.set_paused(true);
  EXPECT_FALSE(runtime.dumping());
  EXPECT_FALSE(OpReport::begin(runtime));
  runtime.step();
  runtime.step();
  runtime.set_paused(false);
  EXPECT_TRUE(runtime.dumping());  // iteration 2 is selected ("0|2")
  OpReport report = OpReport::begin(runtime);
  ASSERT_TRUE(report);
  report.identify("relu", "Default/relu-op0", "", 0);
  EXPECT_EQ(report.record().iteration, 2u);
}
