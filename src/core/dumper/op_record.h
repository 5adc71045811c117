// One operator execution as an adapter reports it to the Dumper.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "layout/layout.h"

namespace opdump {

struct OpRecord {
  OpIdentity id;
  std::string model_name;  // empty: run outside any registered model
  uint64_t model_id = 0;   // Ascend {model_id}; MindSpore {graph_id}
  uint64_t iteration = 0;  // Ascend {data_index}; MindSpore {iteration}
  uint64_t sequence = 0;   // .h5 dumps: the op's number among every op the dump saw, from 1 (its seqid); else 0
  // An .h5 dump's ops: the arguments JSON (save_kernel_args), which names the datasets and is kept
  // in the op's group ("" otherwise: the arguments go to a file of their own).
  std::string arguments;
};

// The ids of an op's input or output tensors in slot order (0: a slot without a tensor), wherever
// the adapter keeps them (inline in its op's context: no vector per op on the training thread).
class TensorIdList {
 public:
  TensorIdList(const uint64_t* data, size_t size) : data_(data), size_(size) {}
  // (a braced list lives to the end of the call it is written in)
  TensorIdList(std::initializer_list<uint64_t> ids) : TensorIdList(ids.begin(), ids.size()) {}
  const uint64_t* begin() const { return data_; }
  const uint64_t* end() const { return data_ + size_; }
  size_t size() const { return size_; }

 private:
  const uint64_t* data_;
  size_t size_;
};

}  // namespace opdump
