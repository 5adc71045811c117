// Operator names that survive unrelated change. A forward op is named by its module scope, its
// type and its call index among the ops of that type in that scope; a backward op by the forward
// op that created its autograd node, the node, and its own call index in the node. No counter
// spans the iteration, so an op added elsewhere, another thread's ops (DataLoader, autograd) or
// the iteration number never rename an op.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "opdump/api.h"

namespace opdump::identity {

// The n of "{scope}/{type}-op{n}": calls counted per (scope, op type). It is kept per thread
// (api ops), per api op (the ops below it) and per autograd node, on the training thread's path:
// counting allocates nothing once a key was seen.
class OPDUMP_ADAPTER_API CallIndex {
 public:
  uint64_t next(std::string_view scope, std::string_view type);
  // Every count starts again from 0 (a new iteration). The keys stay: the next iteration names
  // the same ops again, and re-inserting each would be two allocations per op.
  void clear();

 private:
  // The ops below one api op or node are of a few types: their keys fit inline, and an index per
  // op costs no allocation at all.
  static constexpr size_t kInline = 4;
  static constexpr size_t kInlineKey = 46;
  struct InlineCount {
    uint64_t value;
    uint8_t size;
    char key[kInlineKey];
  };
  struct Count {
    uint64_t value = 0;
    uint64_t epoch = 0;  // counts of an earlier epoch are 0
  };
  InlineCount inline_[kInline];
  size_t inline_size_ = 0;
  std::unordered_map<std::string, Count> counts_;
  uint64_t epoch_ = 0;
  size_t used_ = 0;  // keys of counts_ counted in this epoch
  std::string key_;  // reused: no allocation per call once the map holds the key
};

// The type backward ops are counted by, and named by outside a node: an in-place op with its
// out-of-place twin (add_ with add). The autograd engine accumulates a gradient in place or not
// depending on who else holds the tensor and its memory (PyTorch 2.x), and a dump that holds them
// must rename nothing.
OPDUMP_ADAPTER_API std::string_view counted_type(std::string_view type);

// "{scope}/{type}-op{index}"
OPDUMP_ADAPTER_API std::string op_name(std::string_view scope, std::string_view type, uint64_t index);

// The scope of the ops an autograd node runs: "Gradients/{forward op}/{node}". `forward_op` is
// the forward op's name with its container modules written by attribute alone
// ("Default/net/layer1/0/conv1-Conv2d/conv2d-op0"), which keeps backward names of deep models
// under the file-name limit. A forward op may create several nodes of one type (cosine_similarity
// makes two DivBackward0): `occurrence` counts them in the order the engine runs them, and every
// one after the first is "{node}-{occurrence}", so that no two ops of an iteration share a name.
OPDUMP_ADAPTER_API std::string backward_scope(std::string_view forward_op, std::string_view node,
                                              uint64_t occurrence = 0);
// For a node no forward op created (AccumulateGrad, nodes of code run outside the observer):
// "Gradients/{node}-{index}", index counted per node type.
OPDUMP_ADAPTER_API std::string orphan_backward_scope(std::string_view node, uint64_t index);

// "conv1-Conv2d" -> "conv1" style short element of a TorchScript hierarchy entry
// "conv1(Conv2d)": returns {element, short element}.
OPDUMP_ADAPTER_API std::pair<std::string, std::string> script_scope_element(std::string_view entry);

// The module path of a forward op's scoped name, its model's own scope left out:
// "Default/net-Net/layer1-Sequential/0-BasicBlock/conv1-Conv2d/conv2d-op0" -> "layer1.0.conv1",
// "Default/net-Net/relu-op0" -> "". nullopt for names without that form (gradients, other tools').
std::optional<std::string> module_path_of(std::string_view scoped_name);

}  // namespace opdump::identity
