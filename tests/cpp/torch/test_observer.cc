// The PyTorch adapter in process (no Python): the observer is installed explicitly, ops of a
// libtorch model are dumped, and values read back equal what torch computes from the same tensors.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <cmath>
#include <map>
#include <thread>

#include "../dumper_fixtures.h"
#include "../test_util.h"
#include "format/npy.h"
#include "opdump/opdump.h"
#include "format/statistic_csv.h"
#include "opdump/torch.h"
#include "runtime/runtime.h"

using namespace opdump;

namespace {

struct Net : torch::nn::Module {
  Net() {
    fc1 = register_module("fc1", torch::nn::Linear(8, 16));
    fc2 = register_module("fc2", torch::nn::Linear(16, 4));
  }
  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor h;
    {
      ScopeGuard scope("fc1-Linear", "fc1");
      h = fc1->forward(x);
    }
    h = torch::relu(h);
    ScopeGuard scope("fc2-Linear", "fc2");
    return fc2->forward(h);
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

DumpConfig config(const std::string& path, const std::string& saved_data) {
  return parse_config(test::ms_config(path, R"(, "saved_data": ")" + saved_data + R"(")"), "t.json", test::no_env());
}

// statistic.csv rows by "op name|io|slot" -> Max Value.
std::map<std::string, double> maxima(const std::string& csv_path) {
  const CsvTable t = read_csv(csv_path);
  const int name = t.column("Op Name"), io = t.column("IO"), slot = t.column("Slot"), max = t.column("Max Value");
  std::map<std::string, double> out;
  for (const auto& r : t.rows) out[r[name] + "|" + r[io] + "|" + r[slot]] = std::stod(r[max]);
  return out;
}

}  // namespace

TEST(TorchObserver, StatisticsOfALibtorchModelEqualTorchsOwn) {
  pt::install();
  test::TempDir dir;
  torch::manual_seed(0);
  Net net;
  Runtime::instance().set_dump_config(config(dir.path(), "statistic"));
  torch::Tensor x = torch::randn({5, 8});
  torch::Tensor y;
  {
    ModelScope model("Net", "Net");
    y = net.forward(x);
  }
  y.sum().backward();
  const WriterReport r = finalize_dump();
  ASSERT_TRUE(r.ok()) << r.first_error;
  const auto m = maxima(dir / "rank_0/Net/0/0/statistic.csv");
  const std::string relu = "Default/Net-Net/relu-op0";
  ASSERT_TRUE(m.count(relu + "|output|0")) << "relu is named by its module scope";
  const torch::Tensor h = torch::relu(net.fc1->forward(x));
  EXPECT_FLOAT_EQ(m.at(relu + "|output|0"), h.max().item<float>());
  EXPECT_FLOAT_EQ(m.at(relu + "|input|0"), net.fc1->forward(x).max().item<float>());
  // fc2's op (aten::linear, or addmm where the C++ frontend calls it directly): its output is y,
  // and one of its inputs is the weight.
  std::string fc2;
  for (const auto& [key, value] : m)
    if (key.rfind("Default/Net-Net/fc2-Linear/", 0) == 0 && key.find("|output|0") != std::string::npos) fc2 = key;
  ASSERT_FALSE(fc2.empty());
  EXPECT_FLOAT_EQ(m.at(fc2), y.max().item<float>());
  const std::string fc2_op = fc2.substr(0, fc2.find('|'));
  bool weight_seen = false;
  for (int slot = 0; slot < 3; ++slot) {
    auto it = m.find(fc2_op + "|input|" + std::to_string(slot));
    weight_seen |= it != m.end() && static_cast<float>(it->second) == net.fc2->weight.max().item<float>();
  }
  EXPECT_TRUE(weight_seen);
  // Backward ops carry the forward op's name.
  bool backward_of_fc2 = false;
  for (const auto& [key, value] : m) backward_of_fc2 |= key.rfind("Gradients/Default/Net/fc2-Linear/", 0) == 0;
  EXPECT_TRUE(backward_of_fc2);
}

TEST(TorchObserver, FinalizeWhileAnotherThreadRunsOpsLosesNothingItCounted) {
  pt::install();
  test::TempDir dir;
  Runtime::instance().set_dump_config(config(dir.path(), "statistic"));
  std::atomic<bool> stop{false};
  std::atomic<int> ran{0};
  std::thread trainer([&] {
    torch::Tensor a = torch::randn({64, 64});
    while (!stop) {
      a = torch::tanh(torch::mm(a, a));
      ++ran;
    }
  });
  while (ran < 50) std::this_thread::yield();
  auto dumper = Runtime::instance().dumper();
  const WriterReport r = finalize_dump();  // ops keep running on the other thread meanwhile
  const int after = ran.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  stop = true;
  trainer.join();
  EXPECT_GT(ran.load(), after) << "training went on after the dump closed";
  ASSERT_TRUE(r.ok()) << r.first_error;
  // Every row the dumper counted is in the file, whole; nothing was appended after finalize.
  const CsvTable t = read_csv(dir / "rank_0/Net/0/0/statistic.csv");
  EXPECT_EQ(t.rows.size(), dumper->counters().stat_rows);
  EXPECT_GE(t.rows.size(), 100u);
  for (const auto& row : t.rows) EXPECT_EQ(row.size(), t.header.size());
}

TEST(TorchObserver, TensorModeWritesWhatTheOpProduced) {
  pt::install();
  test::TempDir dir;
  Runtime::instance().set_dump_config(config(dir.path(), "tensor"));
  torch::Tensor x = torch::arange(12, torch::kFloat32).reshape({3, 4});
  torch::Tensor y = torch::sigmoid(x);
  ASSERT_TRUE(finalize_dump().ok());
  const auto files = test::list_files(dir / "rank_0/Net/0/0");
  std::string output;
  for (const auto& f : files)
    if (f.rfind("sigmoid.", 0) == 0 && f.find(".output.0.") != std::string::npos) output = f;
  ASSERT_FALSE(output.empty());
  const Tensor t = read_npy(dir / ("rank_0/Net/0/0/" + output));
  ASSERT_EQ(t.numel(), 12);
  for (int64_t i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(static_cast<const float*>(t.data)[i], y.view(-1)[i].item<float>());
}
