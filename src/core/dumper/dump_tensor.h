// A tensor as an adapter hands it to the Dumper: its bytes, what keeps them alive, statistics the
// adapter computes itself, or a placeholder saying why a slot holds no data.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "stats/stats.h"
#include "util/tensor.h"
#include "opdump/api.h"

namespace opdump {

// Statistics an adapter computes itself (on the device, later on another thread, once for a tensor
// seen again). An interface rather than a std::function: the adapter's lazy statistics are one
// allocation per tensor, not two.
class DeferredStats {
 public:
  virtual ~DeferredStats() = default;
  virtual TensorStats get() = 0;
};

// Statistics known when the row is made (those of a slot without elements).
class KnownStats final : public DeferredStats {
 public:
  explicit KnownStats(TensorStats stats) : stats_(std::move(stats)) {}
  TensorStats get() override { return stats_; }

 private:
  TensorStats stats_;
};

// A tensor handed to the Dumper: contiguous bytes described by `view`, kept alive by `owner`.
// An adapter that computes the statistics itself sets `deferred_stats`; they are asked for on a
// writer thread after owner->wait_ready(), and view.data may then be null (no tensor file is
// written for such a tensor).
struct DumpTensor {
  TensorView view;
  std::shared_ptr<const Buffer> owner;
  std::shared_ptr<DeferredStats> deferred_stats;
  uint64_t pending_bytes = 0;  // memory `deferred_stats` holds until it runs (for the in-flight cap)
  // Bytes the adapter reads for `deferred_stats`: the tensor's when they are a new pass over it, 0
  // when they were known (remembered from an earlier op, or derived from other statistics).
  uint64_t bytes_read = 0;
  // Non-empty: this slot holds no data, and why (an undefined tensor, an out= buffer the op does
  // not read, a layout or dtype with no dump format). Written as an empty float32 tensor of shape
  // (0,), which keeps slot numbers aligned, and listed with its reason in the folder's
  // placeholders.csv so that readers tell it from a real empty tensor.
  std::string placeholder;
  bool data_lost = false;  // the placeholder stands for data opdump could not dump (finalize warns)
};
// A slot with data: `view` into memory that `owner` keeps alive.
OPDUMP_ADAPTER_API DumpTensor data_tensor(TensorView view, std::shared_ptr<const Buffer> owner);
// A slot without data, and why. `data_lost`: the tensor had values that are not in the dump.
OPDUMP_ADAPTER_API DumpTensor placeholder_tensor(std::string why, bool data_lost = false);

}  // namespace opdump
