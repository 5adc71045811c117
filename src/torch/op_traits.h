// What the observer needs to know of a record's operator, worked out once per operator overload
// instead of once per op: whether it is an operator at all, its type, what it writes in place,
// whether it computes anything, which rules of the statistics cache it may fall under, and overflow
// mode's rules for the bound of its output.
#pragma once
#include <ATen/record_function.h>

#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "debug_scenes/product_sum_bound.h"
#include "debug_scenes/range_bound.h"

namespace opdump::pt::detail {

struct OpTraits {
  // What an in-place op's result may take from statistics already known (host_stats.h).
  enum class Derives : uint8_t {
    Nothing,
    Fill,         // zero_, fill_, _foreach_zero_: one value
    AddInPlace,   // add_: into a tensor holding zeros, the added tensor's (StatsCache::share)
    MulInPlace,   // mul_ by a number: the tensor's scaled (StatsCache::remember_scaled)
  };
  bool is_operator = false;  // op_kinds::is_operator: false for engine records and user scopes
  std::string_view type;     // after "aten::" (points into the record's name)
  // Argument positions the op writes in place: its schema's alias annotations, and batch norm's
  // running statistics (which PyTorch 1.x does not annotate).
  std::vector<uint32_t> written;
  std::vector<uint32_t> out;      // among them, keyword-only out= buffers
  bool returns_nothing = false;   // its schema returns nothing (_foreach_add_): its results are `written`
  bool computes_nothing = false;  // op_kinds::computes_nothing
  int copied_input = -1;          // op_kinds::copied_input
  bool aliases_input = false;     // op_kinds::aliases_input
  Derives derives = Derives::Nothing;
  // Overflow mode's rules for its output's bound (range_bound.h, product_sum_bound.h)
  BoundRule bound_rule = BoundRule::None;
  ProductSum product_sum = ProductSum::None;
  // At api level, whether PyTorch's records of the ops it calls are switched off while it runs (nothing
  // below an api op is named, listed or captured), learned from its first call on this thread, with them
  // on. Off where those ops write no memory it was given (such a write must first finish statistics
  // pending on that memory) and are many: switching costs about what two or three records do.
  enum class RecordsBelow : uint8_t { Unknown, Kept, Off };
  mutable RecordsBelow records_below = RecordsBelow::Unknown;  // (the cache is per thread)
};

// Per thread (no lock): the traits of each operator overload seen, by its name pointer
// (RecordFunction names of dispatcher ops are one static string per overload).
class OpTraitsCache {
 public:
  // The traits of `fn`'s operator; for a record that is no dispatcher op (its name may be a
  // temporary), worked out again each time into a slot valid until the next call.
  const OpTraits& of(const at::RecordFunction& fn);

 private:
  std::unordered_map<const char*, OpTraits> by_overload_;
  // In front of it, the overloads seen last by a few bits of their name's address: most ops are
  // found there without hashing and a bucket's chain (a few hundred overloads make a step).
  struct Recent {
    const char* name = nullptr;
    const OpTraits* traits = nullptr;
  };
  std::array<Recent, 256> recent_{};
  OpTraits uncached_;
};

}  // namespace opdump::pt::detail
