// msprobe's config.json (the msprobe PyTorch data-dump guide) read as opdump's fourth dialect.
#include <gtest/gtest.h>

#include "config/config.h"
#include "opdump/error.h"

using namespace opdump;

namespace {

ParseOptions in_cwd() {
  ParseOptions o;
  o.env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  o.cwd = "/work/run";
  return o;
}

DumpConfig parse(const std::string& text) { return parse_config(text, "config.json", in_cwd()); }

// The error's field and a part of its message.
std::pair<std::string, std::string> error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const ConfigError& e) {
    return {e.field(), e.what()};
  }
  return {"<accepted>", ""};
}

}  // namespace

// The guide's statistics example, as msprobe's own template has it.
TEST(ConfigMsprobe, StatisticsTaskAsTheGuideWritesIt) {
  DumpConfig c = parse(R"({
    "task": "statistics", "dump_path": "./dump_path", "rank": [], "step": [], "level": "L1",
    "enable_dataloader": false, "async_dump": false,
    "statistics": {"scope": [], "list": [], "data_mode": ["all"], "summary_mode": "statistics"}})");
  EXPECT_EQ(c.dialect, Dialect::Msprobe);
  EXPECT_EQ(c.dump_path, "/work/run/dump_path");
  EXPECT_EQ(c.saved_data, SavedData::Statistic);
  EXPECT_EQ(c.io, IoSelect::All);
  EXPECT_TRUE(c.iterations.is_all());
  EXPECT_TRUE(c.dump_all_ops);
  EXPECT_TRUE(c.op_switch);
  EXPECT_EQ(c.level, ObserveLevel::Api);
  EXPECT_EQ(c.layout, Layout::MindSporeSync);
  EXPECT_EQ(c.stat_categories,
            (std::vector<StatCategory>{StatCategory::Max, StatCategory::Min, StatCategory::Avg, StatCategory::L2Norm}));
  EXPECT_TRUE(c.warnings.empty()) << c.warnings.front();
  EXPECT_TRUE(c.rank_selected(7));
}

TEST(ConfigMsprobe, StepsRanksListAndModes) {
  DumpConfig c = parse(R"({"task": "statistics", "dump_path": "/d", "rank": [1, 3], "step": [0, 2, "5-7"],
    "statistics": {"list": ["relu", "conv2d"], "data_mode": ["input"], "summary_mode": "md5"}})");
  EXPECT_EQ(c.iterations.to_string(), "0|2|5-7");
  EXPECT_TRUE(c.rank_selected(3));
  EXPECT_FALSE(c.rank_selected(0));
  EXPECT_FALSE(c.dump_all_ops);
  EXPECT_EQ(c.kernels, (std::vector<std::string>{"relu", "conv2d"}));
  EXPECT_EQ(c.kernels_field, "statistics.list");
  EXPECT_EQ(c.io, IoSelect::Input);
  EXPECT_EQ(c.stat_categories.back(), StatCategory::Md5);
  EXPECT_EQ(parse(R"({"task": "statistics", "dump_path": "/d", "statistics": {"data_mode": ["output"]}})").io, IoSelect::Output);
}

TEST(ConfigMsprobe, TensorAndOverflowTasks) {
  DumpConfig t = parse(R"({"task": "tensor", "dump_path": "/d", "level": "mix", "tensor": {"file_format": "npy"}})");
  EXPECT_EQ(t.saved_data, SavedData::Full);  // tensors, and the statistics msprobe writes beside them
  EXPECT_EQ(t.file_format, FileFormat::Npy);
  DumpConfig o = parse(R"({"task": "overflow_check", "dump_path": "/d", "overflow_check": {"overflow_nums": -1}})");
  EXPECT_EQ(o.scene, Scene::Overflow);
  EXPECT_EQ(o.overflow_number, 0u);  // every overflow
  EXPECT_EQ(parse(R"({"task": "overflow_check", "dump_path": "/d"})").overflow_number, 1u);  // msprobe's default
  EXPECT_EQ(parse(R"({"task": "overflow_check", "dump_path": "/d", "overflow_check": {"overflow_nums": 3}})").overflow_number, 3u);
  EXPECT_EQ(parse(R"({"task": "statistics", "dump_path": "/d", "level": "L2"})").level, ObserveLevel::Kernel);
  // L0: module records only; mix: module records and APIs; L1: APIs only
  DumpConfig l0 = parse(R"({"task": "statistics", "dump_path": "/d", "level": "L0"})");
  EXPECT_EQ(l0.level, ObserveLevel::Modules);
  EXPECT_TRUE(l0.module_records);
  EXPECT_TRUE(t.module_records);
  EXPECT_EQ(t.level, ObserveLevel::Api);
  EXPECT_FALSE(parse(R"({"task": "statistics", "dump_path": "/d", "level": "L1"})").module_records);
  // the overflow check watches APIs whatever the level, and says so
  DumpConfig ol0 = parse(R"({"task": "overflow_check", "dump_path": "/d", "level": "L0"})");
  EXPECT_EQ(ol0.level, ObserveLevel::Api);
  EXPECT_FALSE(ol0.warnings.empty());
  // another task's object is ignored, and said so
  DumpConfig w = parse(R"({"task": "statistics", "dump_path": "/d", "tensor": {"scope": []}, "colour": 1})");
  ASSERT_EQ(w.warnings.size(), 2u);
  EXPECT_NE(w.warnings[0].find("\"tensor\" is not the task"), std::string::npos) << w.warnings[0];
  EXPECT_NE(w.warnings[1].find("colour"), std::string::npos) << w.warnings[1];
}

TEST(ConfigMsprobe, WhatOpdumpLacksIsAnErrorNamingIt) {
  struct Case {
    const char* json;
    const char* field;
    const char* contains;
  };
  const Case cases[] = {
      {R"({"task": "free_benchmark", "dump_path": "/d"})", "task", "replay"},
      {R"({"task": "grad_probe", "dump_path": "/d"})", "task", "not a dump task"},
      {R"({"task": "statistics", "dump_path": "/d", "level": "L3"})", "level", "L1"},
      {R"({"task": "statistics"})", "dump_path", "required"},
      {R"({"task": "statistics", "dump_path": "/d", "step": [1, "x"]})", "step[1]", "x"},
      {R"({"task": "statistics", "dump_path": "/d", "step": [-1]})", "step[0]", "not a step"},
      {R"({"task": "statistics", "dump_path": "/d", "rank": "0"})", "rank", "list of ranks"},
      {R"({"task": "statistics", "dump_path": "/d", "statistics": {"scope": ["Module.conv1.Conv2d.forward.0"]}})",
       "statistics.scope", "list"},
      {R"({"task": "statistics", "dump_path": "/d", "statistics": {"data_mode": ["forward"]}})", "statistics.data_mode[0]",
       "forward from backward"},
      {R"({"task": "statistics", "dump_path": "/d", "statistics": {"summary_mode": "crc"}})", "statistics.summary_mode", "md5"},
      {R"({"task": "tensor", "dump_path": "/d", "tensor": {"file_format": "bin"}})", "tensor.file_format", "npy"},
      {R"({"task": "overflow_check", "dump_path": "/d", "overflow_check": {"overflow_nums": 0}})",
       "overflow_check.overflow_nums", "-1"},
      {R"({"task": "statistics", "dump_path": "/d", "framework": "mindspore"})", "framework", "pytorch"},
      {R"({"task": "statistics", "dump_path": "/d", "enable_dump": true})", "", "mixes dialects"},
      {R"({"task": "overflow_check", "dump_path": "/d", "opdump": {"layout": "msprobe"}})", "opdump.layout", "overflow"},
      {R"({"task": "statistics", "dump_path": "/d", "opdump": {"layout": "msprobe2"}})", "opdump.layout", "msprobe"},
      {R"({"dump": {"dump_path": "/d", "dump_list": []}, "opdump": {"layout": "msprobe"}})", "opdump.layout", "task"},
  };
  for (const Case& c : cases) {
    auto [field, message] = error_of(c.json);
    EXPECT_EQ(field, c.field) << c.json << ": " << message;
    EXPECT_NE(message.find(c.contains), std::string::npos) << c.json << ": " << message;
    EXPECT_NE(message.find("config.json"), std::string::npos) << message;
  }
}

// "opdump": {"layout": "msprobe"}: PrecisionDebugger writes msprobe's own layout, recording forward and backward
// calls apart, so data_mode's "forward" and "backward" are accepted there.
TEST(ConfigMsprobe, MsprobesOwnLayout) {
  const DumpConfig c = parse(R"({"task": "statistics", "dump_path": "/d", "statistics": {"data_mode": ["backward"]},
                                 "opdump": {"layout": "msprobe"}})");
  EXPECT_TRUE(c.msprobe_layout);
  EXPECT_FALSE(parse(R"({"task": "statistics", "dump_path": "/d"})").msprobe_layout);
  EXPECT_FALSE(parse(R"({"task": "statistics", "dump_path": "/d", "opdump": {"layout": "mindspore"}})").msprobe_layout);
}

// A session-options config is still told apart by its keys (msprobe's has task or level besides dump_path).
TEST(ConfigMsprobe, SessionOptionsStayTheirOwnDialect) {
  EXPECT_EQ(parse(R"({"dump_path": "/d", "enable_dump": true})").dialect, Dialect::Session);
  EXPECT_EQ(parse(R"({"dump_path": "/d", "level": "L1"})").dialect, Dialect::Msprobe);
}

// The shipped examples (also fuzzing seeds) load from their files.
TEST(ConfigMsprobe, ShippedExamplesLoad) {
  const std::string dir = std::string(OPDUMP_TEST_DATA) + "/configs/msprobe/";
  DumpConfig s = load_config(dir + "statistics.json", in_cwd());
  EXPECT_EQ(s.iterations.to_string(), "0|2|4-6");
  EXPECT_EQ(s.stat_categories.back(), StatCategory::Md5);
  DumpConfig o = load_config(dir + "overflow_check.json", in_cwd());
  EXPECT_EQ(o.scene, Scene::Overflow);
  EXPECT_TRUE(o.rank_selected(1));
  EXPECT_FALSE(o.rank_selected(2));
}
