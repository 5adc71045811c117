// Which ops to dump by name: MindSpore's `kernels` list (and acl.json layer entries).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace opdump {

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
