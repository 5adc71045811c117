// opdump demo: trains a small AlexNet-like CNN (the MindSpore Dump guide's example, scaled down) on generated
// data with dumping configured by examples/demo_config.json, then says what was dumped.
//   opdump_demo [--config FILE] [--output DIR] [--iterations N] [--plant-bug]
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "config/config.h"
#include "opdump/error.h"
#include "opdump/opdump.h"
#include "opdump/torch.h"
#include "runtime/runtime_interface.h"

namespace {

// Conv/ReLU/MaxPool x3 then three Dense layers, like the MindSpore Dump guide's AlexNet, for 3x32x32 inputs.
struct AlexNetSmallImpl : torch::nn::Module {
  torch::nn::Conv2d conv1{torch::nn::Conv2dOptions(3, 16, 3).padding(1)};
  torch::nn::Conv2d conv2{torch::nn::Conv2dOptions(16, 32, 3).padding(1)};
  torch::nn::BatchNorm2d bn2{torch::nn::BatchNorm2dOptions(32)};
  torch::nn::Conv2d conv3{torch::nn::Conv2dOptions(32, 32, 3).padding(1)};
  torch::nn::Linear fc1{32 * 4 * 4, 128}, fc2{128, 64}, fc3{64, 10};

  // plant_bug: bn2 computes with a different epsilon, a slightly wrong batch_norm that
  // `opdump compare` should name as the first divergence.
  explicit AlexNetSmallImpl(bool plant_bug) {
    if (plant_bug) bn2->options.eps(1e-2);
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("bn2", bn2);
    register_module("conv3", conv3);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
    register_module("fc3", fc3);
  }

  // Scope guards give ops MindSpore-style names: Default/AlexNetSmall-Net/conv1-Conv2d/conv2d-op0.
  torch::Tensor forward(torch::Tensor x) {
    x = layer("conv1-Conv2d", [&] { return conv1(x); });
    x = layer("relu-ReLU", [&] { return torch::relu(x); });
    x = layer("max_pool2d-MaxPool2d", [&] { return torch::max_pool2d(x, 2); });
    x = layer("conv2-Conv2d", [&] { return conv2(x); });
    x = layer("bn2-BatchNorm2d", [&] { return bn2(x); });
    x = layer("relu-ReLU", [&] { return torch::relu(x); });
    x = layer("max_pool2d-MaxPool2d", [&] { return torch::max_pool2d(x, 2); });
    x = layer("conv3-Conv2d", [&] { return conv3(x); });
    x = layer("relu-ReLU", [&] { return torch::relu(x); });
    x = layer("max_pool2d-MaxPool2d", [&] { return torch::max_pool2d(x, 2); });
    x = layer("flatten-Flatten", [&] { return x.flatten(1); });
    x = layer("fc1-Dense", [&] { return torch::relu(fc1(x)); });
    x = layer("fc2-Dense", [&] { return torch::relu(fc2(x)); });
    return layer("fc3-Dense", [&] { return fc3(x); });
  }

  template <typename F>
  torch::Tensor layer(const char* scope, F&& f) {
    opdump::ScopeGuard guard(scope);
    return f();
  }
};
TORCH_MODULE(AlexNetSmall);

bool has_flag(int argc, char** argv, const std::string& flag) {
  for (int i = 1; i < argc; ++i)
    if (argv[i] == flag) return true;
  return false;
}

std::string arg_value(int argc, char** argv, const std::string& flag, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == flag) return argv[i + 1];
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path exe_dir = std::filesystem::canonical("/proc/self/exe").parent_path();
  const std::string config_path =
      arg_value(argc, argv, "--config", (exe_dir.parent_path() / "examples" / "demo_config.json").string());
  const std::string out = std::filesystem::absolute(arg_value(argc, argv, "--output", "opdump-demo-out")).string();
  const int iterations = std::stoi(arg_value(argc, argv, "--iterations", "4"));
  try {
    opdump::pt::install();  // the PyTorch observer: explicit, before any dump
    opdump::DumpConfig config = opdump::load_config(config_path);
    config.dump_path = std::filesystem::path(out).lexically_normal().string();
    while (config.dump_path.size() > 1 && config.dump_path.back() == '/') config.dump_path.pop_back();
    opdump::runtime_interface().set_dump_config(config);

    torch::manual_seed(0);
    torch::set_num_threads(2);
    const bool plant_bug = has_flag(argc, argv, "--plant-bug");
    AlexNetSmall net(plant_bug);
    torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
    const auto t0 = std::chrono::steady_clock::now();
    std::printf("opdump demo: training AlexNetSmall%s on generated data, dumping iterations %s\n",
                plant_bug ? " (with a planted bug in bn2)" : "", config.iterations.to_string().c_str());
    for (int it = 0; it < iterations; ++it) {
      torch::Tensor x = torch::randn({8, 3, 32, 32});
      torch::Tensor y = torch::randint(0, 10, {8});
      torch::Tensor loss;
      {
        opdump::ModelScope model("AlexNetSmall", "Net");
        loss = torch::nll_loss(torch::log_softmax(net->forward(x), 1), y);
        sgd.zero_grad();
        loss.backward();
        sgd.step();
      }
      std::printf("  iteration %d  loss %.6f%s\n", it, loss.item<float>(),
                  config.iterations.contains(static_cast<uint64_t>(it)) ? "  (dumped)" : "");
      opdump::step();
    }
    auto dumper = opdump::runtime_interface().dump_sink();
    const std::string root = dumper->run_root();
    const opdump::WriterReport r = opdump::finalize_dump();
    const opdump::DumpCounters c = dumper->counters();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("dumped %llu op executions (forward and backward, api level): %llu tensor files, %.1f MB, "
                "%llu statistic rows\n",
                static_cast<unsigned long long>(c.ops), static_cast<unsigned long long>(r.files_written),
                r.bytes_written / 1e6, static_cast<unsigned long long>(c.stat_rows));
    std::printf("folder: %s\ntime:   %.2f s\n", root.c_str(), secs);
    std::printf("next:   build/opdump stats %s/AlexNetSmall/0/0 | head\n", root.c_str());
    if (!r.ok()) {
      std::fprintf(stderr, "opdump demo: %llu files lost: %s\n", static_cast<unsigned long long>(r.files_lost),
                   r.first_error.c_str());
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "opdump demo: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
