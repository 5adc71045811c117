// The C API in process: error codes and messages, the lifecycle over the process's runtime.
#include "opdump/c_api.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "dumper_fixtures.h"
#include "runtime/runtime.h"
#include "test_util.h"

using namespace opdump;

TEST(CApi, BadConfigIsAnErrorCodeNamingTheFileAndField) {
  test::TempDir dir;
  EXPECT_EQ(opdump_set_dump((dir / "missing.json").c_str()), OPDUMP_ERROR_CONFIG);
  EXPECT_NE(std::string(opdump_last_error()).find("missing.json"), std::string::npos) << opdump_last_error();
  test::write_text(dir / "bad.json", R"({"dump": {"dump_mode": "sideways", "dump_path": "/tmp"}})");
  EXPECT_EQ(opdump_set_dump((dir / "bad.json").c_str()), OPDUMP_ERROR_CONFIG);
  EXPECT_NE(std::string(opdump_last_error()).find("dump_mode"), std::string::npos) << opdump_last_error();
  EXPECT_EQ(opdump_set_dump(nullptr), OPDUMP_ERROR_CONFIG);
  EXPECT_EQ(Runtime::instance().dumper(), nullptr) << "nothing half-configured";
}

TEST(CApi, InitTwiceIsAStateError) {
  ASSERT_EQ(opdump_init(nullptr), OPDUMP_OK);
  EXPECT_STREQ(opdump_last_error(), "");
  EXPECT_EQ(opdump_init(nullptr), OPDUMP_ERROR_STATE);
  EXPECT_NE(std::string(opdump_last_error()).find("already initialized"), std::string::npos);
  EXPECT_EQ(opdump_finalize(), OPDUMP_OK);
  EXPECT_EQ(opdump_init(nullptr), OPDUMP_OK) << "finalize ends the session: init may follow";
  EXPECT_EQ(opdump_finalize(), OPDUMP_OK);
}

TEST(CApi, LifecycleDumpsThroughTheProcessRuntime) {
  test::TempDir dir;
  test::write_text(dir / "c.json", test::ms_config(dir / "out", R"(, "saved_data": "statistic")"));
  uint64_t id = 99;
  ASSERT_EQ(opdump_register_model("net", &id), OPDUMP_OK);
  EXPECT_EQ(id, 0u);
  EXPECT_EQ(opdump_register_model(nullptr, &id), OPDUMP_ERROR_CONFIG);
  ASSERT_EQ(opdump_init((dir / "c.json").c_str()), OPDUMP_OK) << opdump_last_error();
  auto dumper = Runtime::instance().dumper();
  ASSERT_NE(dumper, nullptr);
  EXPECT_TRUE(Runtime::instance().dumping());
  // What an adapter does for one op.
  {
    Dumper::OpLease lease = dumper->enter_op();
    dumper->dump_op(test::op("Mul", "Default/mul-op0", 0, 0), {test::tensor_of({2, 3})}, {test::tensor_of({6})});
  }
  ASSERT_EQ(opdump_step(), OPDUMP_OK);
  EXPECT_FALSE(Runtime::instance().dumping()) << "iteration 1 is not selected";
  ASSERT_EQ(opdump_finalize_dump(), OPDUMP_OK) << opdump_last_error();
  EXPECT_EQ(dumper->counters().stat_rows, 2u);
  EXPECT_TRUE(std::filesystem::exists(dir / "out/rank_0/Net/0/0/statistic.csv"));
  EXPECT_EQ(opdump_finalize(), OPDUMP_OK);
}

TEST(CApi, LostFilesAreReportedByFinalize) {
  test::TempDir dir;
  test::write_text(dir / "c.json", test::ms_config(dir / "out", R"(, "saved_data": "tensor")"));
  ASSERT_EQ(opdump_set_dump((dir / "c.json").c_str()), OPDUMP_OK) << opdump_last_error();
  auto dumper = Runtime::instance().dumper();
  // Folders where the tensor files must go: the writer cannot put them there, not even as root.
  for (const char* io : {"input", "output"}) {
    const std::string in_the_way = dir / ("out/rank_0/Net/0/0/Mul.Default_mul-op0.0.0.1000." + std::string(io) +
                                          ".0.DefaultFormat.npy");
    std::filesystem::create_directories(in_the_way);
    test::write_text(in_the_way + "/keep", "x");
  }
  dumper->dump_op(test::op("Mul", "Default/mul-op0", 0, 0), {test::tensor_of({2, 3})}, {test::tensor_of({6})});
  EXPECT_EQ(opdump_finalize_dump(), OPDUMP_ERROR_DATA_LOST);
  EXPECT_NE(std::string(opdump_last_error()).find("lost"), std::string::npos) << opdump_last_error();
}
