// A libtorch program dumping its ops through an installed opdump (find_package(opdump COMPONENTS torch)).
// Usage: consumer_torch DUMP_FOLDER. Exits non-zero unless the dump holds the model's ops, readable.
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "opdump/opdump.h"
#include "opdump/torch.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DUMP_FOLDER\n", argv[0]);
    return 2;
  }
  const std::string folder = std::filesystem::absolute(argv[1]).string();
  try {
    opdump::pt::install();
    opdump::set_dump_json(R"({"dump": {"dump_path": ")" + folder + R"(", "dump_mode": "all",
                              "dump_list": [{"model_name": "mlp"}], "dump_data": "stats"}})");
    torch::manual_seed(0);
    torch::nn::Sequential mlp(torch::nn::Linear(8, 16), torch::nn::ReLU(), torch::nn::Linear(16, 2));
    torch::Tensor y;
    for (int it = 0; it < 2; ++it) {
      opdump::ModelScope model("mlp", "Sequential");
      y = mlp->forward(torch::randn({4, 8}));
      opdump::step();
    }
    const opdump::WriterReport report = opdump::finalize_dump();
    std::printf("opdump %s: %llu files, %llu bytes written, ok=%d\n", opdump::version().c_str(),
                static_cast<unsigned long long>(report.files_written),
                static_cast<unsigned long long>(report.bytes_written), int(report.ok()));
    if (!report.ok()) return 1;
    // statistics only: a statistic.csv per iteration, a row per tensor; each addmm output once per iteration.
    int outputs = 0, files = 0;
    for (const auto& e : std::filesystem::recursive_directory_iterator(folder)) {
      if (!e.is_regular_file() || e.path().filename() != "statistic.csv") continue;
      ++files;
      std::ifstream in(e.path());
      for (std::string line; std::getline(in, line);)
        if (line.rfind("addmm,Default/mlp-Sequential/addmm-op", 0) == 0 && line.find(",output,0,") != std::string::npos)
          ++outputs;
    }
    std::printf("statistic.csv files: %d, addmm outputs: %d\n", files, outputs);
    return files == 2 && outputs == 4 && report.files_written >= 2 ? 0 : 1;  // 2 Linear layers x 2 iterations
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer_torch: %s\n", e.what());
    return 1;
  }
}
