// opdump demo: runs a small built-in model with dumping on and prints what was dumped.
// The model is a two-layer perceptron computed in plain C++ (no framework), so the demo shows
// the core (config, selection, layout, npy, statistics, writer) on any machine.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <cerrno>
#include <cstring>
#include <memory>
#include <unistd.h>

#include "commands.h"
#include "dumper/dumper.h"
#include "opdump/error.h"

namespace opdump::cli {
namespace {

// The shipped demo config (examples/demo_mindspore.json), MindSpore dialect.
constexpr const char* kDemoConfig = R"({
  "common_dump_settings": {
    "dump_mode": 0,
    "path": "/tmp/opdump-demo",
    "net_name": "DemoMLP",
    "iteration": "1|2",
    "saved_data": "full",
    "input_output": 0,
    "kernels": [],
    "support_device": [0],
    "statistic_category": ["max", "min", "avg", "nan count", "l2norm"]
  },
  "e2e_dump_settings": {"enable": true, "trans_flag": true}
})";

using Matrix = std::vector<float>;

struct DemoModel {
  int in = 64, hidden = 128, out = 10, batch = 16;
  Matrix w1, w2;
  explicit DemoModel(std::mt19937& rng) {
    std::normal_distribution<float> n(0.f, 0.1f);
    w1.resize(size_t(in) * hidden);
    w2.resize(size_t(hidden) * out);
    for (auto& v : w1) v = n(rng);
    for (auto& v : w2) v = n(rng);
  }
};

std::shared_ptr<HeapBuffer> copy_of(const Matrix& m) {
  return std::make_shared<HeapBuffer>(m.data(), m.size() * sizeof(float));
}

DumpTensor as_dump(const std::shared_ptr<HeapBuffer>& b, Shape shape) {
  return data_tensor(TensorView{b->data(), DType::Float32, std::move(shape)}, b);
}

Matrix matmul(const Matrix& a, const Matrix& b, int m, int k, int n) {
  Matrix c(size_t(m) * n, 0.f);
  for (int i = 0; i < m; ++i)
    for (int p = 0; p < k; ++p)
      for (int j = 0; j < n; ++j) c[size_t(i) * n + j] += a[size_t(i) * k + p] * b[size_t(p) * n + j];
  return c;
}

}  // namespace

// The options of this subcommand, one value per command (CLI11's subcommands-in-files shape).
struct DemoCommandOptions {
  std::string out_dir = "opdump-demo-out";
  int iterations = 4;
  bool builtin = false, plant_bug = false;
};

void add_demo_command(CLI::App& app, int* exit_code) {
  auto opt = std::make_shared<DemoCommandOptions>();  // owned by the callback (CLI11 keeps it alive)
  auto* cmd = app.add_subcommand(
      "demo", "Train a small CNN with PyTorch (or, without the adapter, a plain C++ perceptron) with dumping on, "
              "and show what was dumped");
  cmd->add_option("-o,--output", opt->out_dir, "Dump folder (replaces the config's path)");
  cmd->add_option("--iterations", opt->iterations, "Iterations to run")->check(CLI::Range(1, 1000));
  cmd->add_flag("--no-torch", opt->builtin, "Run the plain C++ perceptron even when the PyTorch demo is built");
  cmd->add_flag("--plant-bug", opt->plant_bug, "PyTorch demo: make one batch_norm slightly wrong (for opdump compare)");
  cmd->callback([opt, exit_code] {
    const std::string demo = opt->builtin ? "" : adapter_program("opdump_demo");
    if (!demo.empty()) {
      const std::string its = std::to_string(opt->iterations);
      if (opt->plant_bug)
        ::execl(demo.c_str(), demo.c_str(), "--output", opt->out_dir.c_str(), "--iterations", its.c_str(), "--plant-bug",
                nullptr);
      else
        ::execl(demo.c_str(), demo.c_str(), "--output", opt->out_dir.c_str(), "--iterations", its.c_str(), nullptr);
      throw Error("cannot run " + demo + ": " + std::strerror(errno));
    }
    ParseOptions po;
    DumpConfig config = parse_config(kDemoConfig, "built-in demo config", po);
    config.dump_path = std::filesystem::absolute(opt->out_dir).lexically_normal().string();
    while (config.dump_path.size() > 1 && config.dump_path.back() == '/') config.dump_path.pop_back();
    const auto t0 = std::chrono::steady_clock::now();
    Dumper dumper(config);
    std::mt19937 rng(7);
    DemoModel model(rng);
    std::normal_distribution<float> n(0.f, 1.f);
    for (int it = 0; it < opt->iterations; ++it) {
      if (!dumper.iteration_selected(static_cast<uint64_t>(it))) continue;
      Matrix x(size_t(model.batch) * model.in);
      for (auto& v : x) v = n(rng);
      uint64_t task = 0;
      auto record = [&](const char* type, const char* scope) {
        OpRecord r;
        r.id = OpIdentity{type, fmt::format("Default/network-DemoMLP/{}-op{}", scope, task), task, 0, now_microseconds()};
        r.iteration = static_cast<uint64_t>(it);
        ++task;
        return r;
      };
      Matrix h = matmul(x, model.w1, model.batch, model.in, model.hidden);
      dumper.dump_op(record("MatMul", "fc1-Dense/MatMul"), {as_dump(copy_of(x), {model.batch, model.in}), as_dump(copy_of(model.w1), {model.in, model.hidden})},
                     {as_dump(copy_of(h), {model.batch, model.hidden})});
      Matrix r = h;
      for (auto& v : r) v = v > 0 ? v : 0;
      dumper.dump_op(record("ReLU", "relu-ReLU/ReLU"), {as_dump(copy_of(h), {model.batch, model.hidden})},
                     {as_dump(copy_of(r), {model.batch, model.hidden})});
      Matrix y = matmul(r, model.w2, model.batch, model.hidden, model.out);
      dumper.dump_op(record("MatMul", "fc2-Dense/MatMul"), {as_dump(copy_of(r), {model.batch, model.hidden}), as_dump(copy_of(model.w2), {model.hidden, model.out})},
                     {as_dump(copy_of(y), {model.batch, model.out})});
    }
    WriterReport report = dumper.finalize();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    DumpCounters c = dumper.counters();
    std::printf("opdump demo: %d iterations of a 2-layer perceptron, dumped iterations %s\n", opt->iterations,
                config.iterations.to_string().c_str());
    std::printf("  ops dumped:      %llu\n", static_cast<unsigned long long>(c.ops));
    std::printf("  tensor files:    %llu (%llu bytes)\n", static_cast<unsigned long long>(report.files_written),
                static_cast<unsigned long long>(report.bytes_written));
    std::printf("  statistic rows:  %llu\n", static_cast<unsigned long long>(c.stat_rows));
    std::printf("  folder:          %s\n", dumper.run_root().c_str());
    std::printf("  time:            %.3f s\n", secs);
    std::printf("next: build/opdump stats %s\n", dumper.run_root().c_str());
    *exit_code = report.ok() ? kExitOk : kExitFailure;
  });
}

}  // namespace opdump::cli
