// The watcher debug scene on PyTorch tensors (the CANN aclmdlSetDump reference's watcher mode):
// outputs of watched ops are copied when produced and compared with their tensors after each
// layer op, so that the op that overwrote one is named.
#pragma once
#include <ATen/ATen.h>

#include <mutex>
#include <vector>

#include "dumper/dump_sink.h"

namespace opdump::pt::detail {

class WatcherScene {
 public:
  // A watched op produced its outputs: remember them (a later run of the same op replaces them).
  void watch(const OpRecord& record, const std::vector<at::Tensor>& outputs);
  // A layer op ran: compare every watched output with its snapshot; dump the changed ones (or all
  // of them where the config names layers).
  void check_after(DumpSink& dumper, const OpRecord& layer);
  void clear();

 private:
  struct Watched {
    OpRecord record;
    uint32_t slot = 0;
    at::Tensor live;      // the output itself
    at::Tensor snapshot;  // its value when produced (or when last seen changed), on the host
  };

  std::mutex mutex_;
  std::vector<Watched> watched_;
};

}  // namespace opdump::pt::detail
