#include <gtest/gtest.h>

#include <map>

#include "config/config.h"
#include "opdump/error.h"
#include "test_util.h"

using namespace opdump;

namespace {

const std::string kSeeds = std::string(OPDUMP_TEST_DATA) + "/configs/seeds/";

ParseOptions env_of(std::map<std::string, std::string> vars, std::string cwd = "/work/run") {
  ParseOptions o;
  o.env = [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  o.cwd = std::move(cwd);
  return o;
}

DumpConfig seed(const std::string& name, std::map<std::string, std::string> vars = {{"HOME", "/home/u"}}) {
  return load_config(kSeeds + name, env_of(std::move(vars)));
}

}  // namespace

// ---- every config example of the seeds parses as documented --------------------------------

TEST(ConfigSeeds, AclModelDump) {
  DumpConfig c = seed("seed002_model_dump.json");
  EXPECT_EQ(c.dialect, Dialect::Acl);
  EXPECT_EQ(c.dump_path, "/home/u/output");  // $HOME expanded
  EXPECT_EQ(c.io, IoSelect::Output);
  EXPECT_EQ(c.saved_data, SavedData::Tensor);
  ASSERT_EQ(c.dump_list.size(), 2u);
  EXPECT_EQ(c.dump_list[0].model_name, "ResNet-101");
  EXPECT_TRUE(c.dump_list[0].layers.empty());
  EXPECT_EQ(c.dump_list[1].layers.size(), 4u);
  EXPECT_FALSE(c.op_switch);
  EXPECT_EQ(c.layout, Layout::Ascend);
  EXPECT_TRUE(c.warnings.empty());
}

TEST(ConfigSeeds, AclSingleOperatorModes) {
  DumpConfig model = seed("seed002_single_op_model.json");
  EXPECT_TRUE(model.op_switch);
  EXPECT_EQ(model.dump_path, "/work/run/output");  // relative to the current directory
  DumpConfig api = seed("seed002_single_op_api.json");
  EXPECT_TRUE(api.op_switch);
}

TEST(ConfigSeeds, ExceptionOverflowWatcher) {
  EXPECT_EQ(seed("seed004_exception.json").scene, Scene::ExceptionBrief);
  DumpConfig o = seed("seed004_overflow.json");
  EXPECT_EQ(o.scene, Scene::Overflow);
  EXPECT_EQ(o.io, IoSelect::All);
  DumpConfig w = seed("seed004_watcher.json");
  EXPECT_EQ(w.scene, Scene::Watcher);
  ASSERT_EQ(w.dump_list.size(), 1u);
  EXPECT_EQ(w.dump_list[0].layers, (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(w.dump_list[0].watcher_nodes, (std::vector<std::string>{"C", "D"}));
  EXPECT_EQ(w.dump_path, "/home");
}

TEST(ConfigSeeds, Seed003AsPrintedIsInvalidJsonWithLineAndColumn) {
  try {
    seed("seed003_ir_mapping_as_printed.json");
    FAIL();
  } catch (const ConfigError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("seed003_ir_mapping_as_printed.json"), std::string::npos) << m;
    EXPECT_NE(m.find("line 5"), std::string::npos) << m;
    EXPECT_NE(m.find("column"), std::string::npos) << m;
  }
  DumpConfig c = seed("seed003_ir_mapping.json");
  EXPECT_EQ(c.io, IoSelect::All);
  EXPECT_TRUE(c.op_switch);
  EXPECT_EQ(c.dump_path, "/work/run/output_IR2TBE");
}

TEST(ConfigSeeds, MindSporeSyncAndAsync) {
  DumpConfig s = seed("seed001_sync.json");
  EXPECT_EQ(s.dialect, Dialect::MindSpore);
  EXPECT_EQ(s.layout, Layout::MindSporeSync);
  EXPECT_EQ(s.file_format, FileFormat::Npy);
  EXPECT_EQ(s.dump_path, "/absolute_path");
  EXPECT_EQ(s.net_name, "ResNet50");
  EXPECT_EQ(s.iterations.to_string(), "0|5-8|100-120");
  EXPECT_EQ(s.io, IoSelect::All);
  EXPECT_TRUE(s.dump_all_ops);
  EXPECT_EQ(s.support_device.size(), 8u);
  EXPECT_EQ(s.stat_categories, (std::vector<StatCategory>{StatCategory::Max, StatCategory::Min, StatCategory::L2Norm}));
  DumpConfig a = seed("seed001_async.json");
  EXPECT_EQ(a.layout, Layout::Ascend);
  EXPECT_EQ(a.file_format, FileFormat::Npy);
}

TEST(ConfigSeeds, SessionOptions) {
  DumpConfig c = seed("seed000_session.json");
  EXPECT_EQ(c.dialect, Dialect::Session);
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.iterations.to_string(), "0|5|10");
  EXPECT_EQ(c.io, IoSelect::All);
  EXPECT_EQ(c.dump_path, "/home/HwHiAiUser/output");
}

// ---- output path priority (the CANN aclmdlSetDump reference) and MindSpore's path rules ------------------------------

TEST(ConfigPaths, AclPriority) {
  const std::string text = R"({"dump": {"dump_path": "cfg_out"}})";
  EXPECT_EQ(parse_config(text, "t", env_of({{"NPU_COLLECT_PATH", "/npu"}, {"ASCEND_WORK_PATH", "/ascend"}})).dump_path, "/npu");
  EXPECT_EQ(parse_config(text, "t", env_of({{"ASCEND_WORK_PATH", "/ascend"}})).dump_path, "/ascend");
  EXPECT_EQ(parse_config(text, "t", env_of({})).dump_path, "/work/run/cfg_out");
  // the field is required all the same (CANN's validator), the variables only take its place
  EXPECT_THROW(parse_config(R"({"dump": {"dump_list": []}})", "t", env_of({{"ASCEND_WORK_PATH", "/ascend"}})), ConfigError);
  // exception dumps name no folder: the current directory unless a variable says otherwise
  DumpConfig exception = parse_config(R"({"dump": {"dump_scene": "aic_err_brief_dump"}})", "t", env_of({}));
  EXPECT_EQ(exception.dump_path, "/work/run");
  EXPECT_EQ(exception.dump_path_origin, "current directory");
}

// GE's DumpConfigValidator (CANN's own check of acl.json): the cases where it and opdump disagreed.
TEST(ConfigRules, CannValidatorAcceptsWhatItAccepts) {
  DumpConfig empty = parse_config("{}", "t", env_of({}));
  EXPECT_FALSE(empty.enabled);  // {} is "no dump"
  ASSERT_EQ(empty.warnings.size(), 1u);
  DumpConfig kernel = parse_config(R"({"dump": {"dump_path": "/o", "dump_level": "kernel"}})", "t", env_of({}));
  EXPECT_EQ(kernel.level, ObserveLevel::Kernel);
  DumpConfig op = parse_config(R"({"dump": {"dump_path": "/o", "dump_level": "op"}, "opdump": {"level": "all"}})", "t", env_of({}));
  EXPECT_EQ(op.level, ObserveLevel::All);  // the opdump object wins
  DumpConfig stats = parse_config(R"({"dump": {"dump_path": "/o", "dump_data": "stats", "dump_stats": ["Max", "Nan", "L2norm"]}})",
                                  "t", env_of({}));
  ASSERT_EQ(stats.stat_categories.size(), 3u);
  EXPECT_EQ(stat_category_key(stats.stat_categories[1]), "nan count");
  std::string steps;
  for (int i = 0; i < 100; ++i) steps += (i ? "|" : "") + std::to_string(i * 2);
  EXPECT_NO_THROW(parse_config(R"({"dump": {"dump_path": "/o", "dump_step": ")" + steps + "\"}}", "t", env_of({})));
  EXPECT_NO_THROW(parse_config(R"({"dump": {"dump_path": "/a-b_c.d/[x]/{y}/1+1=2"}})", "t", env_of({})));
  try {
    parse_config(R"({"dump": {"dump_path": "/)" + std::string(600, 'a') + "\"}}", "t", env_of({}));
    FAIL() << "a 601-character dump_path was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "dump.dump_path");
    EXPECT_NE(std::string(e.what()).find("at most 512"), std::string::npos) << e.what();
  }
}

TEST(ConfigPaths, MindSporeEmptyPathUsesDiagnosticVariable) {
  const std::string text = R"({"common_dump_settings": {"dump_mode": 0, "path": "", "net_name": "N", "iteration": "all",
    "input_output": 0, "kernels": [], "support_device": [0], "op_debug_mode": 0}})";
  EXPECT_EQ(parse_config(text, "t", env_of({{"MS_DIAGNOSTIC_DATA_PATH", "/diag"}})).dump_path, "/diag/debug_dump");
  try {
    parse_config(text, "t", env_of({}));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "common_dump_settings.path");
    EXPECT_NE(std::string(e.what()).find("MS_DIAGNOSTIC_DATA_PATH"), std::string::npos);
  }
}

TEST(ConfigPaths, BracedVariablesAndUnknownKeysWarn) {
  DumpConfig c = parse_config(R"({"dump": {"dump_path": "${BASE}/x/", "dump_lisst": []}})", "t", env_of({{"BASE", "/b"}}));
  EXPECT_EQ(c.dump_path, "/b/x");
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("dump_lisst"), std::string::npos);
}

TEST(ConfigOptions, OpdumpObjectInEveryDialect) {
  DumpConfig c = parse_config(R"({"dump": {"dump_path": "/o"}, "opdump": {"level": "kernel", "writer_threads": 3,
     "max_inflight_mb": 64, "host_work": "inline", "direct_io": false, "device_path_on_cpu": true}})", "t", env_of({}));
  EXPECT_EQ(c.level, ObserveLevel::Kernel);
  EXPECT_EQ(c.host_work, HostWork::Inline);
  EXPECT_FALSE(c.direct_io);
  EXPECT_TRUE(c.device_path_on_cpu);
  EXPECT_NE(describe_config(c).find("device_path_on_cpu  true\n"), std::string::npos);
  const DumpConfig defaults = parse_config(R"({"dump": {"dump_path": "/o"}})", "t", env_of({}));
  EXPECT_EQ(defaults.host_work, HostWork::Auto);
  EXPECT_TRUE(defaults.direct_io);
  EXPECT_FALSE(defaults.device_path_on_cpu);
  EXPECT_EQ(c.writer_threads, 3u);
  EXPECT_EQ(c.max_inflight_bytes, uint64_t(64) << 20);
}

TEST(ConfigRules, MindSporeDebugModes) {
  auto ms = [](const std::string& extra) {
    return parse_config(R"({"common_dump_settings": {"dump_mode": 1, "path": "/p", "net_name": "N", "iteration": "all",
      "input_output": 2, "kernels": ["conv"], "support_device": [0])" + extra + "}}",
                        "t", env_of({}));
  };
  DumpConfig o = ms(R"(, "op_debug_mode": 1)");
  EXPECT_EQ(o.scene, Scene::Overflow);  // 1 and 2 mean 3
  EXPECT_TRUE(o.dump_all_ops);          // forces dump_mode 0
  EXPECT_EQ(o.io, IoSelect::All);       // forces input_output 0
  EXPECT_FALSE(o.warnings.empty());
  DumpConfig e = ms(R"(, "op_debug_mode": 4)");
  EXPECT_EQ(e.scene, Scene::ExceptionBrief);
  EXPECT_EQ(e.io, IoSelect::Input);
  DumpConfig k = ms(R"(, "op_debug_mode": 0)");
  EXPECT_FALSE(k.dump_all_ops);
  EXPECT_EQ(k.kernels, (std::vector<std::string>{"conv"}));
  EXPECT_EQ(k.file_format, FileFormat::Bin);  // MindSpore's async default
}

// ---- malformed configs: each with its expected error ----------------------------------------

struct BadConfig {
  const char* name;
  const char* json;
  const char* field;     // expected ConfigError::field() ("" for document-level errors)
  const char* contains;  // expected in the message
};

void PrintTo(const BadConfig& b, std::ostream* os) { *os << b.name; }

class MalformedConfig : public ::testing::TestWithParam<BadConfig> {};

TEST_P(MalformedConfig, IsRejectedWithAClearError) {
  const BadConfig& b = GetParam();
  try {
    parse_config(b.json, "bad.json", env_of({{"HOME", "/h"}}));
    FAIL() << "accepted: " << b.json;
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), b.field) << e.what();
    EXPECT_NE(std::string(e.what()).find(b.contains), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, MalformedConfig,
    ::testing::Values(
        BadConfig{"not_json", "{\"dump\": ", "", "invalid JSON"},
        BadConfig{"trailing_comma", "{\"dump\": {\"dump_path\": \"x\",}}", "", "line 1"},
        BadConfig{"not_object", "[1,2]", "", "must be a JSON object"},
        BadConfig{"no_dialect", "{\"foo\": 1}", "", "cannot tell the dialect"},
        BadConfig{"mixed_dialects", "{\"dump\": {}, \"common_dump_settings\": {}}", "", "mixes dialects"},
        BadConfig{"duplicate_key", "{\"dump\": {\"dump_path\": \"a\", \"dump_path\": \"b\"}}", "", "appears twice"},
        BadConfig{"deep_nesting", "{\"dump\": {\"x\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}", "", "nested deeper"},
        BadConfig{"number_overflow", "{\"dump\": {\"dump_path\": \"o\", \"x\": 8e888}}", "", "number overflow"},  // fuzzing finding
        BadConfig{"dump_not_object", "{\"dump\": 3}", "dump", "must be an object"},
        BadConfig{"dump_mode_value", "{\"dump\": {\"dump_mode\": \"both\"}}", "dump.dump_mode", "\"input\", \"output\", \"all\""},
        BadConfig{"dump_mode_type", "{\"dump\": {\"dump_mode\": 1}}", "dump.dump_mode", "not allowed"},
        BadConfig{"op_switch_value", "{\"dump\": {\"dump_op_switch\": \"yes\"}}", "dump.dump_op_switch", "\"on\", \"off\""},
        BadConfig{"dump_data_value", "{\"dump\": {\"dump_data\": \"all\"}}", "dump.dump_data", "\"tensor\", \"stats\""},
        BadConfig{"dump_scene_value", "{\"dump\": {\"dump_scene\": \"crash\"}}", "dump.dump_scene", "aic_err_brief_dump"},
        BadConfig{"dump_list_type", "{\"dump\": {\"dump_list\": {}}}", "dump.dump_list", "array"},
        BadConfig{"layer_type", "{\"dump\": {\"dump_list\": [{\"model_name\": \"m\", \"layer\": [1]}]}}", "dump.dump_list[0].layer[0]", "string"},
        BadConfig{"layer_bad_regex", "{\"dump\": {\"dump_list\": [{\"model_name\": \"m\", \"layer\": [\"name-regex(conv[)\"]}]}}", "dump.dump_list[0].layer[0]", "regular expression"},
        BadConfig{"empty_model_name", "{\"dump\": {\"dump_list\": [{\"model_name\": \"\"}]}}", "dump.dump_list[0].model_name", "empty"},
        BadConfig{"dump_step", "{\"dump\": {\"dump_step\": \"5-\"}}", "dump.dump_step", "empty number"},
        BadConfig{"unset_variable", "{\"dump\": {\"dump_path\": \"$NOPE/x\"}}", "dump.dump_path", "not set"},
        BadConfig{"exception_with_model", "{\"dump\": {\"dump_scene\": \"aic_err_norm_dump\", \"dump_list\": [{\"model_name\": \"m\"}]}}", "dump.dump_scene", "model dump (dump.dump_list"},
        BadConfig{"exception_with_single_op", "{\"dump\": {\"dump_scene\": \"lite_exception\", \"dump_op_switch\": \"on\"}}", "dump.dump_scene", "dump.dump_op_switch"},
        BadConfig{"overflow_with_model", "{\"dump\": {\"dump_path\": \"o\", \"dump_debug\": \"on\", \"dump_list\": [{\"model_name\": \"m\"}]}}", "dump.dump_debug", "model dump"},
        BadConfig{"overflow_with_single_op", "{\"dump\": {\"dump_path\": \"o\", \"dump_debug\": \"on\", \"dump_op_switch\": \"on\"}}", "dump.dump_debug", "dump.dump_op_switch"},
        BadConfig{"overflow_without_path", "{\"dump\": {\"dump_debug\": \"on\"}}", "dump.dump_path", "overflow"},
        BadConfig{"exception_with_overflow", "{\"dump\": {\"dump_scene\": \"aic_err_brief_dump\", \"dump_debug\": \"on\"}}", "dump.dump_scene", "dump.dump_debug"},
        BadConfig{"watcher_with_overflow", "{\"dump\": {\"dump_path\": \"/o\", \"dump_scene\": \"watcher\", \"dump_debug\": \"on\", \"dump_list\": [{\"watcher_nodes\": [\"C\"]}]}}", "dump.dump_scene", "dump.dump_debug"},
        BadConfig{"watcher_with_op_switch", "{\"dump\": {\"dump_path\": \"/o\", \"dump_scene\": \"watcher\", \"dump_op_switch\": \"on\", \"dump_list\": [{\"watcher_nodes\": [\"C\"]}]}}", "dump.dump_scene", "dump.dump_op_switch"},
        BadConfig{"h5_with_watcher", "{\"dump\": {\"dump_path\": \"/o\", \"dump_scene\": \"watcher\", \"dump_list\": [{\"watcher_nodes\": [\"C\"]}]}, \"opdump\": {\"h5_file\": \"/o/x.h5\"}}", "opdump.h5_file", "watcher"},
        BadConfig{"h5_with_statistics", "{\"dump\": {\"dump_path\": \"/o\", \"dump_data\": \"stats\"}, \"opdump\": {\"h5_file\": \"/o/x.h5\"}}", "opdump.h5_file", "saved data must be"},
        BadConfig{"h5_empty", "{\"dump\": {\"dump_path\": \"/o\"}, \"opdump\": {\"h5_file\": \"\"}}", "opdump.h5_file", "is empty"},
        BadConfig{"watcher_without_path", "{\"dump\": {\"dump_scene\": \"watcher\", \"dump_list\": [{\"watcher_nodes\": [\"C\"]}]}}", "dump.dump_path", "watcher"},
        BadConfig{"watcher_input_mode", "{\"dump\": {\"dump_path\": \"/o\", \"dump_scene\": \"watcher\", \"dump_mode\": \"all\", \"dump_list\": [{\"watcher_nodes\": [\"C\"]}]}}", "dump.dump_mode", "\"output\""},
        BadConfig{"watcher_model_name", "{\"dump\": {\"dump_path\": \"/o\", \"dump_scene\": \"watcher\", \"dump_list\": [{\"model_name\": \"m\", \"watcher_nodes\": [\"C\"]}]}}", "dump.dump_list[0].model_name", "watcher"},
        BadConfig{"watcher_no_nodes", "{\"dump\": {\"dump_path\": \"/o\", \"dump_scene\": \"watcher\", \"dump_list\": [{\"layer\": [\"A\"]}]}}", "dump.dump_list", "watcher_nodes"},
        BadConfig{"ms_missing_common", "{\"e2e_dump_settings\": {\"enable\": true}}", "common_dump_settings", "required"},
        BadConfig{"ms_missing_net_name", "{\"common_dump_settings\": {\"dump_mode\": 0, \"iteration\": \"all\", \"input_output\": 0, \"kernels\": [], \"support_device\": [0], \"op_debug_mode\": 0}}", "common_dump_settings.net_name", "required"},
        BadConfig{"ms_dump_mode_range", "{\"common_dump_settings\": {\"dump_mode\": 3, \"path\": \"/p\", \"net_name\": \"N\", \"iteration\": \"all\", \"input_output\": 0, \"kernels\": [], \"support_device\": [0], \"op_debug_mode\": 0}}", "common_dump_settings.dump_mode", "0 to 2"},
        BadConfig{"ms_iteration", "{\"common_dump_settings\": {\"dump_mode\": 0, \"path\": \"/p\", \"net_name\": \"N\", \"iteration\": \"3-1\", \"input_output\": 0, \"kernels\": [], \"support_device\": [0], \"op_debug_mode\": 0}}", "common_dump_settings.iteration", "ends before it starts"},
        BadConfig{"ms_relative_path", "{\"common_dump_settings\": {\"dump_mode\": 0, \"path\": \"rel\", \"net_name\": \"N\", \"iteration\": \"all\", \"input_output\": 0, \"kernels\": [], \"support_device\": [0], \"op_debug_mode\": 0}}", "common_dump_settings.path", "absolute"},
        BadConfig{"ms_path_chars", "{\"common_dump_settings\": {\"dump_mode\": 0, \"path\": \"/a b\", \"net_name\": \"N\", \"iteration\": \"all\", \"input_output\": 0, \"kernels\": [], \"support_device\": [0], \"op_debug_mode\": 0}}", "common_dump_settings.path", "letters, digits"},
        BadConfig{"ms_net_name_chars", "{\"common_dump_settings\": {\"dump_mode\": 0, \"path\": \"/p\", \"net_name\": \"a/b\", \"iteration\": \"all\", \"input_output\": 0, \"kernels\": [], \"support_device\": [0], \"op_debug_mode\": 0}}", "common_dump_settings.net_name", "letters, digits"},
        BadConfig{"ms_input_output", "{\"common_dump_settings\": {\"dump_mode\": 0, \"path\": \"/p\", \"net_name\": \"N\", \"iteration\": \"all\", \"input_output\": 3, \"kernels\": [], \"support_device\": [0], \"op_debug_mode\": 0}}", "common_dump_settings.input_output", "0 to 2"},
        BadConfig{"ms_op_debug_mode", "{\"common_dump_settings\": {\"dump_mode\": 0, \"path\": \"/p\", \"net_name\": \"N\", \"iteration\": \"all\", \"input_output\": 0, \"kernels\": [], \"support_device\": [0], \"op_debug_mode\": 5}}", "common_dump_settings.op_debug_mode", "0 to 4"},
        BadConfig{"ms_device", "{\"common_dump_settings\": {\"dump_mode\": 0, \"path\": \"/p\", \"net_name\": \"N\", \"iteration\": \"all\", \"input_output\": 0, \"kernels\": [], \"support_device\": [-1], \"op_debug_mode\": 0}}", "common_dump_settings.support_device[0]", "device id"},
        BadConfig{"ms_kernels_empty_mode1", "{\"common_dump_settings\": {\"dump_mode\": 1, \"path\": \"/p\", \"net_name\": \"N\", \"iteration\": \"all\", \"input_output\": 0, \"kernels\": [], \"support_device\": [0], \"op_debug_mode\": 0}}", "common_dump_settings.kernels", "dump_mode 1"},
        BadConfig{"ms_bad_regex", "{\"common_dump_settings\": {\"dump_mode\": 1, \"path\": \"/p\", \"net_name\": \"N\", \"iteration\": \"all\", \"input_output\": 0, \"kernels\": [\"name-regex([)\"], \"support_device\": [0], \"op_debug_mode\": 0}}", "common_dump_settings.kernels[0]", "regular expression"},
        BadConfig{"ms_category", "{\"common_dump_settings\": {\"dump_mode\": 0, \"path\": \"/p\", \"net_name\": \"N\", \"iteration\": \"all\", \"input_output\": 0, \"kernels\": [], \"support_device\": [0], \"op_debug_mode\": 0, \"saved_data\": \"statistic\", \"file_format\": \"npy\", \"statistic_category\": [\"median\"]}}", "common_dump_settings.statistic_category[0]", "not a statistic"},
        BadConfig{"ms_statistic_bin", "{\"common_dump_settings\": {\"dump_mode\": 0, \"path\": \"/p\", \"net_name\": \"N\", \"iteration\": \"all\", \"input_output\": 0, \"kernels\": [], \"support_device\": [0], \"op_debug_mode\": 0, \"saved_data\": \"statistic\", \"file_format\": \"bin\"}}", "common_dump_settings.saved_data", "file_format \"npy\""},
        BadConfig{"ms_device_stats", "{\"common_dump_settings\": {\"dump_mode\": 0, \"path\": \"/p\", \"net_name\": \"N\", \"iteration\": \"all\", \"input_output\": 0, \"kernels\": [], \"support_device\": [0], \"saved_data\": \"statistic\", \"statistic_category\": [\"md5\"]}, \"e2e_dump_settings\": {\"enable\": true, \"stat_calc_mode\": \"device\"}}", "common_dump_settings.statistic_category", "device"},
        BadConfig{"ms_e2e_enable_type", "{\"common_dump_settings\": {}, \"e2e_dump_settings\": {\"enable\": \"yes\"}}", "e2e_dump_settings.enable", "true or false"},
        BadConfig{"session_no_path", "{\"enable_dump\": true}", "dump_path", "required"},
        BadConfig{"session_step", "{\"enable_dump\": true, \"dump_path\": \"/o\", \"dump_step\": \"a\"}", "dump_step", "contains 'a'"},
        BadConfig{"opdump_level", "{\"dump\": {\"dump_path\": \"/o\"}, \"opdump\": {\"level\": \"op\"}}", "opdump.level", "\"api\", \"kernel\", \"all\""},
        BadConfig{"opdump_host_work", "{\"dump\": {\"dump_path\": \"/o\"}, \"opdump\": {\"host_work\": \"gpu\"}}", "opdump.host_work", "\"auto\", \"background\", \"inline\""},
        BadConfig{"opdump_threads", "{\"dump\": {\"dump_path\": \"/o\"}, \"opdump\": {\"writer_threads\": 65}}", "opdump.writer_threads", "0 to 64"},
        BadConfig{"opdump_direct_io", "{\"dump\": {\"dump_path\": \"/o\"}, \"opdump\": {\"direct_io\": \"yes\"}}", "opdump.direct_io", "true or false"},
        BadConfig{"opdump_device_path", "{\"dump\": {\"dump_path\": \"/o\"}, \"opdump\": {\"device_path_on_cpu\": 1}}", "opdump.device_path_on_cpu", "true or false"},
        // GE's DumpConfigValidator rules
        BadConfig{"cann_no_dump_path", "{\"dump\": {\"dump_list\": [{\"model_name\": \"m\"}]}}", "dump.dump_path", "is required"},
        BadConfig{"cann_empty_dump_path", "{\"dump\": {\"dump_path\": \"\"}}", "dump.dump_path", "is empty"},
        BadConfig{"cann_path_space", "{\"dump\": {\"dump_path\": \"/my dump\"}}", "dump.dump_path", "a space at position 3"},
        BadConfig{"cann_path_tilde", "{\"dump\": {\"dump_path\": \"~/dump\"}}", "dump.dump_path", "'~' at position 0"},
        BadConfig{"cann_path_angle", "{\"dump\": {\"dump_path\": \"/d<1>\"}}", "dump.dump_path", "'<' at position 2"},
        BadConfig{"cann_remote_path", "{\"dump\": {\"dump_path\": \"10.0.0.7:/dump\"}}", "dump.dump_path", "remote dump path"},
        BadConfig{"cann_101_steps", "{\"dump\": {\"dump_path\": \"/o\", \"dump_step\": \"0|1|2|3|4|5|6|7|8|9|10|11|12|13|14|15|16|17|18|19|20|21|22|23|24|25|26|27|28|29|30|31|32|33|34|35|36|37|38|39|40|41|42|43|44|45|46|47|48|49|50|51|52|53|54|55|56|57|58|59|60|61|62|63|64|65|66|67|68|69|70|71|72|73|74|75|76|77|78|79|80|81|82|83|84|85|86|87|88|89|90|91|92|93|94|95|96|97|98|99|100\"}}", "dump.dump_step", "at most 100"},
        BadConfig{"cann_empty_layer", "{\"dump\": {\"dump_path\": \"/o\", \"dump_list\": [{\"model_name\": \"m\", \"layer\": []}]}}", "dump.dump_list[0].layer", "is empty"},
        BadConfig{"cann_dump_level", "{\"dump\": {\"dump_path\": \"/o\", \"dump_level\": \"layer\"}}", "dump.dump_level", "\"op\", \"kernel\", \"all\""},
        BadConfig{"cann_dump_stats_tensor", "{\"dump\": {\"dump_path\": \"/o\", \"dump_stats\": [\"Max\"]}}", "dump.dump_stats", "dump_data \"stats\""},
        BadConfig{"cann_dump_stats_empty", "{\"dump\": {\"dump_path\": \"/o\", \"dump_data\": \"stats\", \"dump_stats\": []}}", "dump.dump_stats", "is empty"},
        BadConfig{"cann_dump_stats_name", "{\"dump\": {\"dump_path\": \"/o\", \"dump_data\": \"stats\", \"dump_stats\": [\"Median\"]}}", "dump.dump_stats[0]", "\"Max\""}),
    [](const ::testing::TestParamInfo<BadConfig>& info) { return std::string(info.param.name); });

TEST(ConfigLimits, HugeConfigIsRejectedBeforeParsing) {
  std::string text = "{\"dump\": {\"dump_path\": \"" + std::string(65 << 20, 'a') + "\"}}";
  EXPECT_THROW(parse_config(text, "big.json", env_of({})), ConfigError);
}

TEST(ConfigLimits, TooManyKernels) {
  std::string kernels;
  for (int i = 0; i < 100001; ++i) kernels += (i ? ",\"k" : "\"k") + std::to_string(i) + "\"";
  std::string text = "{\"common_dump_settings\": {\"dump_mode\": 1, \"path\": \"/p\", \"net_name\": \"N\", \"iteration\": \"all\", "
                     "\"input_output\": 0, \"kernels\": [" + kernels + "], \"support_device\": [0], \"op_debug_mode\": 0}}";
  try {
    parse_config(text, "t", env_of({}));
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "common_dump_settings.kernels");
  }
}

TEST(ConfigDescribe, JsonAndTextNameTheResolvedValues) {
  DumpConfig c = seed("seed001_sync.json");
  std::string j = config_to_json(c);
  EXPECT_NE(j.find("\"layout\": \"mindspore-sync\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"iterations\": \"0|5-8|100-120\""), std::string::npos) << j;
  EXPECT_NE(describe_config(c).find("dump_path"), std::string::npos);
}
