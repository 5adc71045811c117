// opdump::pt::H5Dumper (the torch_npu 1.5 dumper for libtorch programs): a dump into an .h5 file read
// back through the core's HDF5 reader, its load mode re-running the stored calls, and the guide's rules.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <stdexcept>

#include "../test_util.h"
#include "format/h5_file.h"
#include "opdump/torch.h"

using namespace opdump;

TEST(H5Dumper, DumpsALibtorchModelAndLoadsItBack) {
  test::TempDir dir;
  torch::manual_seed(0);
  torch::nn::Linear fc(8, 4);
  const torch::Tensor x = torch::randn({3, 8});
  torch::Tensor y;
  pt::H5DumperOptions dump;
  dump.use_dump = true;
  dump.dump_path = dir / "run.h5";
  {
    pt::H5Dumper d(dump);
    y = torch::relu(fc->forward(x));
    const WriterReport r = d.stop();
    EXPECT_TRUE(r.ok()) << r.first_error;
  }
  h5::Reader file(dir / "run.h5");
  std::string ops;
  for (const auto& m : file.members("/")) ops += m + " ";
  ASSERT_TRUE(file.is_group("/addmm/1")) << ops;  // libtorch's Linear calls addmm
  EXPECT_EQ(file.members("/addmm/1/input"), (std::vector<std::string>{"self", "mat1", "mat2", "beta", "alpha"}));
  const Tensor stored = file.tensor("/relu/2/output/result");
  ASSERT_EQ(stored.shape, (Shape{3, 4}));
  EXPECT_EQ(std::memcmp(stored.data, y.contiguous().data_ptr<float>(), 12 * sizeof(float)), 0);
  EXPECT_TRUE(std::filesystem::is_directory(dir / "run.opdump")) << "opdump's own records beside the file";

  pt::H5DumperOptions load;
  load.use_load = true;
  load.dump_path = dir / "out.h5";
  load.load_file_path = dir / "run.h5";
  const torch::Tensor other = torch::randn({3, 8});
  torch::Tensor y2;
  {
    pt::H5Dumper d(load);
    y2 = torch::relu(fc->forward(other));  // other values, same shapes: both stored calls match
    const WriterReport r = d.stop();
    EXPECT_EQ(r.files_written, 2u);
    EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  }
  EXPECT_TRUE(torch::equal(y2, torch::relu(fc->forward(other)))) << "the program's own results are its own";
  h5::Reader out(dir / "out.h5");
  const Tensor again = out.tensor("/relu/2/output/result");
  EXPECT_EQ(std::memcmp(again.data, stored.data, 12 * sizeof(float)), 0) << "re-run on the stored inputs";
}

TEST(H5Dumper, TheGuidesRules) {
  test::TempDir dir;
  pt::H5DumperOptions o;
  o.dump_path = dir / "x.h5";
  EXPECT_THROW(pt::plan_h5_dump(o), std::invalid_argument);  // no mode
  o.use_dump = o.check_overflow = true;
  EXPECT_THROW(pt::plan_h5_dump(o), std::invalid_argument);  // two modes
  o.check_overflow = false;
  const pt::H5DumpPlan in_file = pt::plan_h5_dump(o);
  EXPECT_EQ(in_file.h5_path, dir / "x.h5");
  EXPECT_EQ(in_file.records_path, dir / "x.opdump");
  o.dump_path = dir.path();  // a folder: a timestamped name in it
  const std::string named = pt::plan_h5_dump(o).h5_path;
  EXPECT_EQ(named.rfind(dir.path() + "/", 0), 0u);
  EXPECT_EQ(std::filesystem::path(named).filename().string().size(), std::string("20261124_223607.641953.h5").size());
  o.use_dump = false;
  o.use_load = true;
  o.dump_path = dir / "out.h5";
  try {
    pt::plan_h5_dump(o);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("load_file_path"), std::string::npos) << e.what();
  }
  o.load_file_path = dir / "out.h5";
  test::write_text(dir / "out.h5", "");
  EXPECT_THROW(pt::plan_h5_dump(o), std::invalid_argument);  // the same file
}
