// One operator execution as an adapter reports it to the Dumper.
#pragma once
#include <cstdint>
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

}  // namespace opdump
