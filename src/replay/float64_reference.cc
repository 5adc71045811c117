#include "float64_reference.h"

#include <torch/csrc/autograd/autograd.h>

#include <string>

#include "opdump/error.h"

namespace opdump::replay {
namespace {

// A stack's arguments by their schema names.
class Arguments {
 public:
  Arguments(const c10::FunctionSchema& schema, const std::vector<c10::IValue>& stack) : schema_(schema), stack_(stack) {}

  const c10::IValue& operator[](const char* name) const {
    const auto& args = schema_.arguments();
    for (size_t i = 0; i < args.size() && i < stack_.size(); ++i)
      if (args[i].name() == name) return stack_[i];
    throw Error(schema_.name() + ": the argument " + name + " is missing");
  }
  at::Tensor tensor(const char* name) const {
    const c10::IValue& v = (*this)[name];
    return v.isTensor() ? v.toTensor() : at::Tensor();
  }
  bool flag(const char* name) const { return (*this)[name].toBool(); }
  int64_t number(const char* name) const { return (*this)[name].toInt(); }

 private:
  const c10::FunctionSchema& schema_;
  const std::vector<c10::IValue>& stack_;
};

// oneDNN's LSTM layer, forward or backward: the ops this file computes in float64.
bool is_lstm_layer(const c10::FunctionSchema& schema) {
  return schema.overload_name().empty() &&
         (schema.name() == "aten::mkldnn_rnn_layer" || schema.name() == "aten::mkldnn_rnn_layer_backward");
}

// The mode PyTorch hands oneDNN for an LSTM (cuDNN's numbering: RNN_RELU 0, RNN_TANH 1, LSTM 2, GRU 3).
constexpr int64_t kLstmMode = 2;

// One direction of one LSTM layer, as oneDNN's layer computes it, on an input [T, B, I] from the
// state h0, c0 [B, H]: every step's h [T, B, H], and the last h and c. The gates are PyTorch's, in
// its order: input, forget, cell, output.
struct LstmRun {
  at::Tensor output, h, c;
};
LstmRun lstm_layer(const at::Tensor& x, const at::Tensor& w_ih, const at::Tensor& w_hh, const at::Tensor& b_ih,
                   const at::Tensor& b_hh, at::Tensor h, at::Tensor c, bool reverse) {
  const int64_t steps = x.size(0);
  const at::Tensor projected = at::matmul(x, w_ih.t()) + b_ih + b_hh;  // the input's share, every step at once
  std::vector<at::Tensor> outputs(static_cast<size_t>(steps));
  for (int64_t k = 0; k < steps; ++k) {
    const int64_t t = reverse ? steps - 1 - k : k;
    const std::vector<at::Tensor> gates = (projected[t] + at::matmul(h, w_hh.t())).chunk(4, 1);
    c = at::sigmoid(gates[1]) * c + at::sigmoid(gates[0]) * at::tanh(gates[2]);
    h = at::sigmoid(gates[3]) * at::tanh(c);
    outputs[static_cast<size_t>(t)] = h;
  }
  return {at::stack(outputs), h, c};
}

// oneDNN's LSTM layer made plain: its input [T, B, I] (PyTorch hands the layer a
// time-major input whatever batch_first says), 2-D states, the biases (zeros where the LSTM has none:
// oneDNN still returns the gradient a bias would get).
struct LstmLayer {
  at::Tensor x, w_ih, w_hh, b_ih, b_hh, h0, c0;
  bool reverse = false;

  // The forward op's weights are weight0-3 and its cell state cx_, the backward's weight1-4 and cx_tmp.
  LstmLayer(const Arguments& a, bool backward) {
    const std::string op = backward ? "mkldnn_rnn_layer_backward" : "mkldnn_rnn_layer";
    const char* const weights[] = {"weight0", "weight1", "weight2", "weight3", "weight4"};
    const int first = backward ? 1 : 0;
    const char* const cx_name = backward ? "cx_tmp" : "cx_";
    if (a.number("mode") != kLstmMode)
      throw Error(op + ": mode " + std::to_string(a.number("mode")) + " is not the LSTM's (2): no float64 reference");
    if (!a["batch_sizes"].toIntVector().empty())
      throw Error(op + ": batch_sizes is not empty (a packed sequence): no float64 reference");
    x = a.tensor("input");
    w_ih = a.tensor(weights[first + 0]);
    w_hh = a.tensor(weights[first + 1]);
    const at::Tensor hx = a.tensor("hx_"), cx = a.tensor(cx_name);
    if (!x.defined() || x.dim() != 3 || !w_ih.defined() || !w_hh.defined() || !hx.defined() || !cx.defined())
      throw Error(op + ": the input, the weights and the states must be tensors, the input 3-D");
    const int64_t hidden = a.number("hidden_size");
    h0 = hx.reshape({-1, hidden});
    c0 = cx.reshape({-1, hidden});
    if (x.size(1) != h0.size(0))
      throw Error(op + ": the input's batch (dimension 1: " + std::to_string(x.size(1)) + ") is not hx_'s (" +
                  std::to_string(h0.size(0)) + ")");
    if (a.flag("has_biases")) {
      b_ih = a.tensor(weights[first + 2]);
      b_hh = a.tensor(weights[first + 3]);
    }
    if (!b_ih.defined()) b_ih = at::zeros({4 * hidden}, w_ih.options());
    if (!b_hh.defined()) b_hh = at::zeros({4 * hidden}, w_ih.options());
    reverse = a.flag("reverse");
  }
};

// mkldnn_rnn_layer -> (output, hy, cy, workspace): oneDNN's workspace, laid out for its backward, has no
// float64 counterpart (undefined: not judged).
std::vector<at::Tensor> rnn_layer(const Arguments& a) {
  const LstmLayer l(a, /*backward=*/false);
  at::NoGradGuard no_grad;
  const LstmRun run = lstm_layer(l.x, l.w_ih, l.w_hh, l.b_ih, l.b_hh, l.h0, l.c0, l.reverse);
  return {run.output, run.h.reshape(a.tensor("hx_").sizes()), run.c.reshape(a.tensor("cx_").sizes()), at::Tensor()};
}

// mkldnn_rnn_layer_backward -> (grad input, grad w_ih, grad w_hh, grad b_ih, grad b_hh, grad hx, grad cx):
// the layer run again in float64 from its inputs and taken back by autograd from the gradients given
// (an absent one is zero).
std::vector<at::Tensor> rnn_layer_backward(const Arguments& a) {
  const LstmLayer l(a, /*backward=*/true);
  at::AutoGradMode grad_mode(true);
  std::vector<at::Tensor> leaves;
  for (const at::Tensor& t : {l.x, l.w_ih, l.w_hh, l.b_ih, l.b_hh, l.h0, l.c0})
    leaves.push_back(t.detach().requires_grad_(true));
  const LstmRun run = lstm_layer(leaves[0], leaves[1], leaves[2], leaves[3], leaves[4], leaves[5], leaves[6], l.reverse);
  auto given = [](const at::Tensor& g, const at::Tensor& like, const char* name) {
    if (!g.defined()) return at::zeros_like(like);
    if (g.numel() != like.numel())
      throw Error(std::string("mkldnn_rnn_layer_backward: ") + name + " has " + std::to_string(g.numel()) +
                  " elements, its output " + std::to_string(like.numel()));
    return g.reshape(like.sizes()).to(like.scalar_type());
  };
  const std::vector<at::Tensor> grads = torch::autograd::grad(
      {run.output, run.h, run.c},
      leaves,
      {given(a.tensor("grad_output"), run.output, "grad_output"), given(a.tensor("grad_hy"), run.h, "grad_hy"),
       given(a.tensor("grad_cy"), run.c, "grad_cy")},
      /*retain_graph=*/false, /*create_graph=*/false, /*allow_unused=*/true);
  auto or_zeros = [&](size_t i) { return grads[i].defined() ? grads[i] : at::zeros_like(leaves[i]); };
  return {or_zeros(0), or_zeros(1), or_zeros(2), or_zeros(3), or_zeros(4),
          or_zeros(5).reshape(a.tensor("hx_").sizes()), or_zeros(6).reshape(a.tensor("cx_tmp").sizes())};
}

}  // namespace

std::optional<std::vector<at::Tensor>> float64_composite(const c10::OperatorHandle& op,
                                                         const std::vector<c10::IValue>& stack) {
  const c10::FunctionSchema& schema = op.schema();
  if (!is_lstm_layer(schema)) return std::nullopt;
  const Arguments args(schema, stack);
  return schema.name() == "aten::mkldnn_rnn_layer" ? rnn_layer(args) : rnn_layer_backward(args);
}

ComputedIn computed_in(const c10::OperatorHandle& op, const std::vector<at::Tensor>& inputs) {
  if (!is_lstm_layer(op.schema())) return {};
  const at::ScalarType input = !inputs.empty() && inputs[0].defined() ? inputs[0].scalar_type() : at::ScalarType::Undefined;
  if (input != at::kBFloat16 && input != at::kHalf) return {};
  return {input, "by oneDNN's RNN layer (its gates and states at its input's dtype)"};
}

}  // namespace opdump::replay
