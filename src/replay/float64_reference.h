// The float64 run of ops whose kernels have no float64 version: the same computation written with
// ATen ops that have one (and autograd, for a backward). Replay judges every output against a
// float64 run; without this such ops were skipped. Today: oneDNN's LSTM layer (PyTorch 2.x runs
// nn.LSTM on the CPU as aten::mkldnn_rnn_layer, a kernel-level op, and its backward node as
// mkldnn_rnn_layer_backward).
#pragma once
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <string>
#include <vector>

namespace opdump::replay {

// `op`'s results on the float64 `stack` (its arguments, as build_stack makes them) in the order the
// dump numbers outputs, where `op` is one of those ops; nullopt for every other op (an output without
// a float64 counterpart is undefined). Throws opdump::Error, naming the
// argument, where the arguments are ones it does not cover (packed sequences, another RNN mode).
std::optional<std::vector<at::Tensor>> float64_composite(const c10::OperatorHandle& op,
                                                         const std::vector<c10::IValue>& stack);

// Where such an op computes at a coarser dtype than its outputs', that dtype and how (Undefined
// otherwise): oneDNN's LSTM layer on bfloat16 or float16 inputs keeps its gates and states at that
// dtype, and returns the weights' gradients in float32 (their errors, 0.1-0.4% of their size against
// float64, are that dtype's rounding).
struct ComputedIn {
  at::ScalarType dtype = at::ScalarType::Undefined;
  std::string why;
};
ComputedIn computed_in(const c10::OperatorHandle& op, const std::vector<at::Tensor>& inputs);

}  // namespace opdump::replay
