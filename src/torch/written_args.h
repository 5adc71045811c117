// What an op writes in place, from its schema's alias annotations ("Tensor(a!)"): the statistics
// barrier finishes what reads those storages before the op runs, and out= buffers are dumped as
// placeholders (their bytes before the op mean nothing).
#pragma once
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <c10/util/SmallVector.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace opdump::pt::detail {

// What one op writes: most write one tensor (an optimizer's _foreach_ ops, one per parameter), so
// the lists live inside the op's context without an allocation of their own.
using WrittenTensors = c10::SmallVector<const c10::TensorImpl*, 4>;
using WrittenStorages = c10::SmallVector<const c10::StorageImpl*, 4>;

// Per thread (no lock): the written arguments of each operator overload seen, by its name
// pointer (RecordFunction names of dispatcher ops are one static string per overload).
class WrittenArgs {
 public:
  struct Positions {
    std::vector<uint32_t> written;  // argument positions the op writes
    std::vector<uint32_t> out;      // among them, keyword-only out= buffers
  };
  const Positions& of(const at::RecordFunction& fn);
  // The tensors (and their storages) `fn` may modify in place.
  void collect(const at::RecordFunction& fn, WrittenTensors& tensors, WrittenStorages& storages);
  // Per dump slot of `fn`'s input tensors: whether it is an out= buffer.
  std::vector<bool> out_buffer_slots(const at::RecordFunction& fn);

 private:
  std::unordered_map<const char*, Positions> by_overload_;
};

}  // namespace opdump::pt::detail
