// Readers and indexes do work linear (or n log n) in their input: each is run on an input and on
// one ten times larger in the same process, and the larger must not take more than 50 times as
// long (quadratic work takes about 100 times; linear work with a cache-unfriendly large input took
// 32 times in the PyTorch 2.x chroot while another build ran). Best of three runs each, so that a
// busy machine does not fail it; no absolute time is asserted.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>

#include "compare/matching.h"
#include "format/msprobe_dump.h"
#include "read/execution_order.h"
#include "test_util.h"

namespace opdump {
namespace {

double best_seconds(const std::function<void()>& work) {
  double best = 1e9;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    work();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

void expect_linear(const std::function<void(size_t)>& run, size_t n) {
  run(n / 10);  // warm-up: first-touch costs are not the input's
  const double small = best_seconds([&] { run(n / 10); });
  const double large = best_seconds([&] { run(n); });
  EXPECT_LT(large, 50 * std::max(small, 1e-4)) << n / 10 << " items: " << small << " s; " << n << " items: " << large << " s";
}

TEST(BoundedWork, ExecutionOrderOfOneNameRepeated) {
  // One op name in every row (an op run in a loop): the occurrence count must not restart per row.
  auto run = [](size_t rows) {
    test::TempDir dir;
    std::string csv = "Iteration,Task ID,Op Type,Op Name,Model,Input Tensors,Output Tensors,Timestamp\n";
    for (size_t i = 0; i < rows; ++i) csv += "0," + std::to_string(i) + ",add,Default/add-op0,net,%1,%2,0\n";
    std::filesystem::create_directories(dir / "execution_order");
    test::write_text(dir / "execution_order/ms_execution_order_graph_0.csv", csv);
    ExecutionOrder order;
    std::vector<std::string> warnings;
    ASSERT_TRUE(read_execution_order(dir.path(), order, warnings));
    ASSERT_EQ(order.ops.size(), rows);
    ASSERT_NE(order.find(0, "Default_add-op0", rows - 1), nullptr);
  };
  expect_linear(run, 100000);
}

DumpIndex statistics_index(size_t n, const std::string& type_prefix) {
  DumpIndex index;
  for (size_t i = 0; i < n; ++i) {
    DumpEntry e;
    e.source = DumpEntry::Source::Statistics;
    e.op_type = type_prefix + std::to_string(i);
    e.op_name = "Default/" + e.op_type + "-op0";
    e.key_name = e.op_name;
    e.where.iteration = 0;
    e.order = i;
    index.entries.push_back(std::move(e));
  }
  return index;
}

TEST(BoundedWork, FallbackMatchingOfTypesThatNeverMatch) {
  // Past the size of the exact alignment, ops are matched greedily by type: a type the reference
  // lacks must not cost a scan of the whole reference.
  auto run = [](size_t n) {
    const DumpIndex target = statistics_index(n, "A"), reference = statistics_index(n, "B");
    const auto pairing = detail::pair_entries(target, reference, CompareOptions{});
    ASSERT_EQ(std::count(pairing.target_to_reference.begin(), pairing.target_to_reference.end(), -1), int64_t(n));
  };
  expect_linear(run, 100000);
}

TEST(BoundedWork, MsprobeDumpOfManyApis) {
  auto run = [](size_t apis) {
    std::string json = "{\"task\": \"statistics\", \"level\": \"L1\", \"data\": {";
    for (size_t i = 0; i < apis; ++i)
      json += std::string(i ? "," : "") + "\"Functional.relu." + std::to_string(i) +
              ".forward\": {\"input_args\": [{\"type\": \"torch.Tensor\", \"dtype\": \"torch.float32\", \"shape\": [2, 3], "
              "\"Max\": 1.0, \"Min\": 0.0, \"Mean\": 0.5, \"Norm\": 1.2}], \"output\": [{\"type\": \"torch.Tensor\", "
              "\"dtype\": \"torch.float32\", \"shape\": [2, 3], \"Max\": 1.0, \"Min\": 0.0, \"Mean\": 0.5, \"Norm\": 1.2}]}";
    json += "}}";
    const MsprobeDump d = parse_msprobe_dump(json, "", "", "dump.json");
    ASSERT_EQ(d.tensors.size(), 2 * apis);
    ASSERT_EQ(d.tensors.back().api, "Functional.relu." + std::to_string(apis - 1) + ".forward");  // file order kept
  };
  expect_linear(run, 100000);
}

}  // namespace
}  // namespace opdump
