// C++ inference with an acl.json dump config (the CANN offline-model dump guide's flow: init with the config, load the
// model, run it; each execution is one data_index).
//   infer_acl MODEL.pt ACL.json [RUNS]
#include <cstdio>

#include "opdump/torch.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: infer_acl MODEL.pt ACL.json [RUNS]\n");
    return 2;
  }
  const int runs = argc > 3 ? std::atoi(argv[3]) : 2;
  try {
    opdump::pt::install();                                   // the PyTorch observer
    opdump::init(argv[2]);                                   // aclInit(acl.json)
    opdump::pt::ScriptModel model(argv[1], "scripted_net");  // loaded after the config: dumped
    torch::manual_seed(0);
    for (int i = 0; i < runs; ++i) {
      torch::NoGradGuard no_grad;
      at::Tensor out = model.forward({torch::randn({2, 3, 16, 16})}).toTensor();
      std::printf("run %d: output %s, sum %.6f\n", i, c10::str(out.sizes()).c_str(), out.sum().item<double>());
      opdump::step();  // the next execution is the next data_index
    }
    opdump::WriterReport r = opdump::finalize_dump();
    std::printf("dump: %llu files, %llu bytes, %s\n", static_cast<unsigned long long>(r.files_written),
                static_cast<unsigned long long>(r.bytes_written), r.ok() ? "complete" : r.first_error.c_str());
    opdump::finalize();
    return r.ok() ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "infer_acl: %s\n", e.what());
    return 1;
  }
}
