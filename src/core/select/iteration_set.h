// Which iterations to dump: "all", "0|5-8|100-120" (CANN dump_step, MindSpore iteration).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "opdump/api.h"

namespace opdump {

// A set of iterations. Parsing is strict: "5-", "a", "3-1", empty pieces and numbers beyond
// 2^64-1 are errors naming `field`.
class IterationSet {
 public:
  static IterationSet all();
  static IterationSet parse(std::string_view spec, const std::string& field);

  OPDUMP_ADAPTER_API bool contains(uint64_t iteration) const;
  bool is_all() const { return all_; }
  bool empty() const { return !all_ && ranges_.empty(); }
  // The first selected iteration > `iteration`, or UINT64_MAX when none.
  OPDUMP_ADAPTER_API uint64_t next_after(uint64_t iteration) const;
  OPDUMP_ADAPTER_API std::string to_string() const;  // normalized: "all" or "0|5-8|100-120"

 private:
  bool all_ = false;
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;  // sorted, merged, inclusive
};

}  // namespace opdump
