// The runtime in process: snapshots the op path reads without a lock, ops in flight when a dump
// is finalized, the order listeners hear things in, and the environment.
#include "runtime/runtime.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "dumper_fixtures.h"
#include "util/log.h"
#include "format/statistic_csv.h"
#include "test_util.h"
#include "util/thread_budget.h"

using namespace opdump;

namespace {

DumpConfig statistics_config(const std::string& path) {
  return parse_config(test::ms_config(path, R"(, "saved_data": "statistic")"), "t.json", test::no_env());
}

// Records what a runtime tells its listeners, in order.
class Recorder final : public RuntimeListener {
 public:
  void on_activity(bool dumping) override { events.push_back(dumping ? "on" : "off"); }
  void on_iteration(uint64_t it) override { events.push_back("iteration " + std::to_string(it)); }
  void on_dump_ending(DumpSink& d) override {
    events.push_back("ending");
    lease_while_ending = static_cast<bool>(static_cast<Dumper&>(d).enter_op());  // the runtime's sink is its Dumper
  }
  std::vector<std::string> events;
  bool lease_while_ending = true;
};

// Captures log lines for the duration of a test.
class LogCapture {
 public:
  LogCapture() {
    previous_ = set_log_sink([this](LogLevel, const std::string& m) { lines.push_back(m); });
  }
  ~LogCapture() { set_log_sink(std::move(previous_)); }
  bool contains(const std::string& s) const {
    for (const auto& l : lines)
      if (l.find(s) != std::string::npos) return true;
    return false;
  }
  std::vector<std::string> lines;

 private:
  LogSink previous_;
};

}  // namespace

TEST(Runtime, SnapshotFollowsSetDumpModelsAndFinalize) {
  test::TempDir dir;
  Runtime rt;
  Recorder listener;
  rt.add_listener(&listener);
  EXPECT_EQ(rt.snapshot()->dumper, nullptr);
  rt.register_model("early");
  rt.set_dump_config(statistics_config(dir.path()));
  auto s = rt.snapshot();
  ASSERT_NE(s->dumper, nullptr);
  EXPECT_EQ(s->dumper, rt.dumper());
  ASSERT_NE(s->find_model("early"), nullptr);
  EXPECT_FALSE(s->model_enabled("early"));  // registered before this set_dump
  EXPECT_TRUE(s->model_enabled("never-registered"));
  rt.register_model("late");
  EXPECT_EQ(s->find_model("late"), nullptr) << "a snapshot never changes";
  EXPECT_TRUE(rt.snapshot()->model_enabled("late"));
  EXPECT_EQ(rt.snapshot()->find_model("late")->id, 1u);
  rt.name_tensors({{0x1000, "parameter net.fc.weight"}});
  EXPECT_EQ(s->tensor_name(0x1000), "") << "names come with a new snapshot";
  rt.name_tensors({{0x2000, "buffer net.bn.running_mean"}});
  EXPECT_EQ(rt.snapshot()->tensor_name(0x1000), "parameter net.fc.weight");
  EXPECT_EQ(rt.tensor_name(0x2000), "buffer net.bn.running_mean");
  rt.finalize_dump();
  EXPECT_EQ(rt.snapshot()->dumper, nullptr);
  EXPECT_NE(s->dumper, nullptr) << "a thread's old snapshot keeps its Dumper alive";
  rt.remove_listener(&listener);
}

TEST(Runtime, SnapshotsOfTwoRuntimesAreNotConfused) {
  test::TempDir dir;
  Runtime a, b;
  a.register_model("only-in-a");
  EXPECT_NE(a.snapshot()->find_model("only-in-a"), nullptr);
  EXPECT_EQ(b.snapshot()->find_model("only-in-a"), nullptr);
  EXPECT_NE(a.snapshot()->find_model("only-in-a"), nullptr);
}

TEST(Runtime, SnapshotsStayWholeWhileModelsAreRegisteredOnOtherThreads) {
  Runtime rt;
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; i < 2000; ++i) rt.register_model("m" + std::to_string(i));
    stop = true;
  });
  size_t last = 0;
  while (!stop) {
    auto s = rt.snapshot();
    ASSERT_GE(s->models.size(), last);  // never goes back, never torn
    for (size_t i = 0; i < s->models.size(); ++i) ASSERT_EQ(s->models[i].id, i);
    last = s->models.size();
  }
  writer.join();
  EXPECT_EQ(rt.snapshot()->models.size(), 2000u);
}

TEST(Runtime, FinalizeWaitsForOpsInFlightAndRefusesNewOnes) {
  test::TempDir dir;
  Runtime rt;
  Recorder listener;
  rt.add_listener(&listener);
  rt.set_dump_config(statistics_config(dir.path()));
  std::shared_ptr<Dumper> d = rt.dumper();
  std::atomic<bool> entered{false};
  std::thread op_thread([&] {
    Dumper::OpLease lease = d->enter_op();
    ASSERT_TRUE(lease);
    entered = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // finalize is called meanwhile
    d->dump_op(test::op("Add", "Default/add-op0", 0, 0), {test::tensor_of({1, 2})}, {test::tensor_of({3})});
  });
  while (!entered) std::this_thread::yield();
  const WriterReport r = rt.finalize_dump();
  op_thread.join();
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(d->counters().ops, 1u) << "the op that was in flight is in the dump";
  const CsvTable csv = read_csv(dir / "rank_0/Net/0/0/statistic.csv");
  EXPECT_EQ(csv.rows.size(), 2u);
  EXPECT_FALSE(d->enter_op()) << "no op starts on a finalized dump";
  // Listeners heard the end after ops were stopped: they collect what adapters still hold.
  ASSERT_FALSE(listener.events.empty());
  EXPECT_EQ(listener.events.back(), "ending");
  EXPECT_FALSE(listener.lease_while_ending);
  rt.remove_listener(&listener);
}

TEST(Runtime, FinalizeFromInsideAnOpDoesNotWaitForItself) {
  test::TempDir dir;
  Runtime rt;
  rt.set_dump_config(statistics_config(dir.path()));
  std::shared_ptr<Dumper> d = rt.dumper();
  Dumper::OpLease lease = d->enter_op();
  const auto start = std::chrono::steady_clock::now();
  rt.finalize_dump();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(Dumper::kOpDrainMilliseconds / 2));
  // What the op reports after its dump was finalized is dropped, not written into closed files.
  d->dump_op(test::op("Add", "Default/add-op0", 0, 0), {test::tensor_of({1})}, {test::tensor_of({1})});
  EXPECT_EQ(d->counters().ops, 0u);
  EXPECT_FALSE(std::filesystem::exists(dir / "rank_0/Net/0/0/statistic.csv"));
}

TEST(Runtime, ListenersHearActivityInTheOrderItChanged) {
  test::TempDir dir;
  Runtime rt;
  Recorder listener;
  rt.add_listener(&listener);  // told the current state at once
  rt.set_dump_config(statistics_config(dir.path()));  // iteration 0 is dumped
  rt.step();                                          // 1 is not
  rt.step();                                          // 2 is
  rt.finalize_dump();
  const std::vector<std::string> expected = {"off", "on", "iteration 1", "off", "iteration 2", "on", "off", "ending"};
  EXPECT_EQ(listener.events, expected);
  rt.remove_listener(&listener);
}

TEST(Runtime, ADumpWithoutAnyAdapterWarns) {
  test::TempDir dir;
  LogCapture log;
  Runtime rt;
  rt.set_dump_config(statistics_config(dir.path()));
  EXPECT_TRUE(log.contains("no framework adapter is installed")) << "a dump nothing can observe is not silent";
}

TEST(Runtime, EnvironmentNamesRankDeviceAndConfig) {
  test::TempDir dir;
  test::write_text(dir / "c.json", test::ms_config(dir / "out", ""));
  ::setenv("RANK", "3", 1);
  ::setenv("LOCAL_RANK", "1", 1);
  ::unsetenv("OPDUMP_CONFIG");
  ::setenv("MINDSPORE_DUMP_CONFIG", (dir / "c.json").c_str(), 1);
  EnvironmentSettings env = read_environment();
  EXPECT_EQ(env.rank, 3u);
  EXPECT_EQ(env.device_id, 1u);
  EXPECT_EQ(env.config_path, dir / "c.json");
  ::setenv("OPDUMP_CONFIG", "/elsewhere.json", 1);
  EXPECT_EQ(read_environment().config_path, "/elsewhere.json") << "OPDUMP_CONFIG comes first";
  ::unsetenv("OPDUMP_CONFIG");

  Runtime rt;
  EXPECT_TRUE(rt.activate_from_environment());
  EXPECT_EQ(rt.rank(), 3u);
  ASSERT_NE(rt.dumper(), nullptr);
  EXPECT_EQ(rt.dumper()->run_root(), dir / "out/rank_3");
  EXPECT_FALSE(rt.claim_environment()) << "the environment is applied once";
  rt.finalize_dump();

  {
    LogCapture log;
    ::setenv("RANK", "three", 1);
    EXPECT_EQ(read_environment().rank, 1u) << "falls back to LOCAL_RANK";
    EXPECT_TRUE(log.contains("RANK=three is not a rank number"));
  }
  {
    LogCapture log;
    ::setenv("MINDSPORE_DUMP_CONFIG", (dir / "missing.json").c_str(), 1);
    Runtime broken;
    EXPECT_FALSE(broken.activate_from_environment()) << "a bad config is logged, not thrown";
    EXPECT_TRUE(log.contains("missing.json"));
    EXPECT_EQ(broken.dumper(), nullptr);
  }
  ::unsetenv("RANK");
  ::unsetenv("LOCAL_RANK");
  ::unsetenv("MINDSPORE_DUMP_CONFIG");
}

TEST(ThreadBudget, NestedWorkNeverTakesMoreThanThereIs) {
  ThreadBudget budget(4);
  EXPECT_EQ(budget.take(1), 1u);
  EXPECT_EQ(budget.take(1), 1u);
  EXPECT_EQ(budget.take(8), 2u) << "only what is left";
  EXPECT_EQ(budget.take(1), 0u);
  budget.give_back(2);
  EXPECT_EQ(budget.take(3), 2u);
  std::atomic<int> running{0}, most{0};
  ThreadBudget shared(3);
  std::vector<std::thread> pool;
  for (int t = 0; t < 8; ++t)
    pool.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        const unsigned n = shared.take(2);
        const int now = running += static_cast<int>(n);
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        running -= static_cast<int>(n);
        shared.give_back(n);
      }
    });
  for (auto& th : pool) th.join();
  EXPECT_LE(most.load(), 3);
  EXPECT_EQ(shared.take(100), 3u) << "everything was given back";
}
