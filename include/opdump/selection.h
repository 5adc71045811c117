// What to dump: iteration specs ("all", "0|5-8|100-120") and MindSpore-style kernel filters.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace opdump {

// A set of iterations. Parsing is strict: "5-", "a", "3-1", empty pieces and numbers beyond
// 2^64-1 are errors naming `field`.
class IterationSet {
 public:
  static IterationSet all();
  static IterationSet parse(std::string_view spec, const std::string& field);

  bool contains(uint64_t iteration) const;
  bool is_all() const { return all_; }
  bool empty() const { return !all_ && ranges_.empty(); }
  // The first selected iteration > `iteration`, or UINT64_MAX when none.
  uint64_t next_after(uint64_t iteration) const;
  std::string to_string() const;  // normalized: "all" or "0|5-8|100-120"

 private:
  bool all_ = false;
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;  // sorted, merged, inclusive
};

// The type part of a MindSpore full op name: between the last '/' and the last '-'
// ("Default/net/conv3-Conv2d/Conv2D-op12" -> "Conv2D").
std::string_view op_type_from_full_name(std::string_view full_name);

// The `kernels` list: each entry is tried in MindSpore's order for every op:
// name-regex(...) full match (RE2), exact full name (entries with '/' or "-op"), else a
// case-insensitive substring of the op type. Thread-safe; remembers which entries matched.
class KernelFilter {
 public:
  KernelFilter();
  KernelFilter(const std::vector<std::string>& entries, const std::string& field);
  ~KernelFilter();
  KernelFilter(KernelFilter&&) noexcept;
  KernelFilter& operator=(KernelFilter&&) noexcept;

  bool empty() const;
  // `op_type` is the framework's type (e.g. "conv2d"); it is tried beside the type part of the name.
  bool matches(std::string_view full_name, std::string_view op_type) const;
  std::vector<std::string> unmatched_entries() const;
  const std::vector<std::string>& entries() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Case-insensitive substring test.
bool icontains(std::string_view haystack, std::string_view needle);

}  // namespace opdump
