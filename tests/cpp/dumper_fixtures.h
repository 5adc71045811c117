// Configs, ops and tensors for the tests that drive a Dumper or a Runtime directly.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "dumper/dumper.h"
#include "util/tensor.h"

namespace opdump::test {

// Parsing that sees no environment variables and resolves relative paths from "/".
inline ParseOptions no_env() {
  ParseOptions o;
  o.env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  o.cwd = "/";
  return o;
}

inline DumpTensor tensor_of(std::vector<float> values) {
  auto b = std::make_shared<HeapBuffer>(values.data(), values.size() * 4);
  return data_tensor(TensorView{b->data(), DType::Float32, {static_cast<int64_t>(values.size())}}, b);
}

inline OpRecord op(const std::string& type, const std::string& name, uint64_t task, uint64_t iteration,
                   const std::string& model = "") {
  OpRecord r;
  r.id = OpIdentity{type, name, task, 0, 1000 + task};
  r.iteration = iteration;
  r.model_name = model;
  return r;
}

// A MindSpore dump config of iterations 0 and 2 into `path`; `extra_common` adds fields to
// common_dump_settings (starting with a comma).
inline std::string ms_config(const std::string& path, const std::string& extra_common, const std::string& e2e = "true") {
  return R"({"common_dump_settings": {"dump_mode": 0, "path": ")" + path +
         R"(", "net_name": "Net", "iteration": "0|2", "input_output": 0, "kernels": [], "support_device": [0],
         "op_debug_mode": 0)" + extra_common + R"(}, "e2e_dump_settings": {"enable": )" + e2e + "}}";
}

}  // namespace opdump::test
