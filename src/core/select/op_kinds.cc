#include "select/op_kinds.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

namespace opdump::op_kinds {
bool is_operator(const char* name) {
  if (!std::strstr(name, "::")) return false;
  if (!std::strncmp(name, "autograd::", 10) || !std::strncmp(name, "profiler::", 10)) return false;
  return std::strchr(name, ' ') == nullptr;
}

bool computes_nothing(std::string_view op_type) {
  static const std::unordered_set<std::string_view> ops = {
      "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "ones",
      "ones_like", "full", "full_like", "new_zeros", "new_ones", "new_full", "rand", "randn", "randint", "randperm",
      "rand_like", "randn_like", "arange", "linspace", "scalar_tensor", "view", "_unsafe_view", "reshape",
      "_reshape_alias", "as_strided", "t", "transpose", "permute", "expand", "expand_as", "squeeze", "unsqueeze",
      "select", "slice", "narrow", "detach", "detach_", "alias", "lift_fresh", "size", "stride", "numel", "dim",
      "is_same_size", "is_nonzero", "flatten", "unflatten", "view_as", "split", "chunk", "unbind", "resize_",
      "set_", "item", "_local_scalar_dense", "requires_grad_", "retain_grad", "to", "_to_copy", "contiguous",
      "clone", "copy_", "zero_", "fill_", "uniform_", "normal_", "bernoulli_", "random_", "result_type",
      "as_strided_", "resize_as_", "_empty_affine_quantized",
      "_has_compatible_shallow_copy_type", "record_stream", "output_nr", "_version", "is_leaf", "data",
      // views that only change how the same memory is read
      "resolve_conj", "resolve_neg", "conj", "_conj", "_neg_view", "view_as_real", "view_as_complex", "diagonal",
      "movedim", "moveaxis", "swapaxes", "swapdims", "unfold", "split_with_sizes", "tensor_split", "unsafe_split",
      "unsafe_chunk", "real", "imag", "adjoint", "numpy_T", "matrix_H", "mT", "mH", "_values", "_indices",
  };
  return ops.count(op_type) > 0;
}

bool aliases_input(std::string_view op_type) {
  // (reshape and _reshape_alias are views when they can be: a copy is told apart by its memory)
  static const std::unordered_set<std::string_view> ops = {"detach", "alias", "view", "view_as", "reshape",
                                                           "_reshape_alias"};
  return ops.count(op_type) > 0;
}

bool draws_random(std::string_view op_type) {
  static const std::unordered_set<std::string_view> ops = {
      "dropout", "dropout_", "native_dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout",
      "_fused_dropout", "bernoulli", "bernoulli_", "rand", "rand_like", "randn", "randn_like", "randint",
      "randint_like", "randperm", "normal", "normal_", "uniform_", "multinomial", "rrelu", "rrelu_",
      "rrelu_with_noise", "exponential_", "geometric_", "cauchy_", "log_normal_", "random_", "poisson",
      "_standard_gamma", "_sample_dirichlet", "binomial"};
  return ops.count(op_type) > 0;
}

bool normalizes(std::string_view op_type) {
  // Not batch norm: in eval mode it scales by its running statistics, and its output moves with its input.
  static const std::unordered_set<std::string_view> ops = {"layer_norm",        "native_layer_norm", "group_norm",
                                                           "native_group_norm", "instance_norm",     "rms_norm",
                                                           "_fused_rms_norm"};
  return ops.count(op_type) > 0;
}

bool selects_or_averages(std::string_view op_type) {
  static const std::unordered_set<std::string_view> ops = {
      "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
      "_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "max_pool1d", "max_pool2d", "max_pool3d",
      "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices", "adaptive_max_pool1d",
      "adaptive_max_pool2d", "adaptive_max_pool3d", "relu", "relu_", "relu6", "relu6_", "hardtanh", "hardtanh_",
      "leaky_relu", "leaky_relu_", "threshold", "threshold_", "clamp", "clamp_", "clamp_min", "clamp_min_",
      "clamp_max", "clamp_max_", "constant_pad_nd", "pad", "reflection_pad1d", "reflection_pad2d",
      "reflection_pad3d", "replication_pad1d", "replication_pad2d", "replication_pad3d", "upsample_nearest1d",
      "upsample_nearest2d", "upsample_nearest3d", "cat", "concat", "stack", "amax", "amin"};
  return ops.count(op_type) > 0;
}

ExtremesKept extremes_kept(std::string_view op_type) {
  static const std::unordered_map<std::string_view, ExtremesKept> ops = {
      {"relu", ExtremesKept::Both},          {"relu_", ExtremesKept::Both},
      {"relu6", ExtremesKept::Both},         {"relu6_", ExtremesKept::Both},
      {"leaky_relu", ExtremesKept::Both},    {"leaky_relu_", ExtremesKept::Both},
      {"hardtanh", ExtremesKept::Both},      {"hardtanh_", ExtremesKept::Both},
      {"clamp", ExtremesKept::Both},         {"clamp_", ExtremesKept::Both},
      {"clamp_min", ExtremesKept::Both},     {"clamp_min_", ExtremesKept::Both},
      {"clamp_max", ExtremesKept::Both},     {"clamp_max_", ExtremesKept::Both},
      {"sigmoid", ExtremesKept::Both},       {"sigmoid_", ExtremesKept::Both},
      {"tanh", ExtremesKept::Both},          {"tanh_", ExtremesKept::Both},
      {"hardsigmoid", ExtremesKept::Both},   {"hardsigmoid_", ExtremesKept::Both},
      {"softplus", ExtremesKept::Both},      {"log_sigmoid", ExtremesKept::Both},
      {"elu", ExtremesKept::Both},           {"elu_", ExtremesKept::Both},
      {"max_pool1d", ExtremesKept::Max},     {"max_pool2d", ExtremesKept::Max},
      {"max_pool3d", ExtremesKept::Max},     {"max_pool1d_with_indices", ExtremesKept::Max},
      {"max_pool2d_with_indices", ExtremesKept::Max}, {"max_pool3d_with_indices", ExtremesKept::Max},
      {"adaptive_max_pool1d", ExtremesKept::Max}, {"adaptive_max_pool2d", ExtremesKept::Max},
      {"adaptive_max_pool3d", ExtremesKept::Max}, {"amax", ExtremesKept::Max},
      {"amin", ExtremesKept::Min}};
  auto it = ops.find(op_type);
  return it == ops.end() ? ExtremesKept::None : it->second;
}

int copied_input(std::string_view op_type) {
  static const std::unordered_map<std::string_view, int> ops = {
      {"to", 0},      {"_to_copy", 0}, {"contiguous", 0}, {"clone", 0},          {"reshape", 0},
      {"flatten", 0}, {"type_as", 0},  {"copy_", 1},      {"_reshape_alias", 0}};
  auto it = ops.find(op_type);
  return it == ops.end() ? -1 : it->second;
}

const std::vector<std::string>& overflow_ignored_by_default() {
  // The uninitialized-output ops, and those that swap in memory nothing wrote yet.
  static const std::vector<std::string> ops = {"empty",     "empty_like", "empty_strided", "new_empty",
                                               "new_empty_strided", "_empty_affine_quantized", "resize_", "set_"};
  return ops;
}

bool leaves_memory_unwritten(std::string_view op_type) {
  const auto& ops = overflow_ignored_by_default();
  return std::find(ops.begin(), ops.end(), op_type) != ops.end();
}

}  // namespace opdump::op_kinds
