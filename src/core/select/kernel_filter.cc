#include <re2/re2.h>

#include <atomic>
#include <cctype>

#include "opdump/error.h"
#include "select/kernel_filter.h"

namespace opdump {

bool icontains(std::string_view haystack, std::string_view needle) {
  if (needle.empty()) return true;
  if (needle.size() > haystack.size()) return false;
  for (size_t i = 0; i + needle.size() <= haystack.size(); ++i) {
    size_t j = 0;
    while (j < needle.size() &&
           std::tolower(static_cast<unsigned char>(haystack[i + j])) ==
               std::tolower(static_cast<unsigned char>(needle[j])))
      ++j;
    if (j == needle.size()) return true;
  }
  return false;
}

std::string_view op_type_from_full_name(std::string_view name) {
  size_t slash = name.rfind('/');
  std::string_view tail = slash == std::string_view::npos ? name : name.substr(slash + 1);
  size_t dash = tail.rfind('-');
  return dash == std::string_view::npos ? tail : tail.substr(0, dash);
}

namespace {

enum class EntryKind { Regex, FullName, Type };

struct Entry {
  std::string text;
  EntryKind kind;
  std::unique_ptr<RE2> regex;
  mutable std::atomic<bool> matched{false};
};

}  // namespace

struct KernelFilter::Impl {
  std::vector<std::string> texts;
  std::vector<std::unique_ptr<Entry>> entries;
};

KernelFilter::KernelFilter() : impl_(std::make_unique<Impl>()) {}
KernelFilter::~KernelFilter() = default;
KernelFilter::KernelFilter(KernelFilter&&) noexcept = default;
KernelFilter& KernelFilter::operator=(KernelFilter&&) noexcept = default;

KernelFilter::KernelFilter(const std::vector<std::string>& entries, const std::string& field)
    : impl_(std::make_unique<Impl>()) {
  impl_->texts = entries;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string& text = entries[i];
    const std::string where = field + "[" + std::to_string(i) + "]";
    auto e = std::make_unique<Entry>();
    e->text = text;
    if (text.empty()) throw ConfigError(where, "is an empty string; give an op name, an op type or name-regex(...)");
    const std::string prefix = "name-regex(";
    if (text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0) {
      if (text.back() != ')' || text.size() == prefix.size() + 1)
        throw ConfigError(where, "\"" + text + "\" must have the form name-regex(EXPRESSION)");
      RE2::Options opts;
      opts.set_log_errors(false);
      opts.set_max_mem(64 << 20);
      e->regex = std::make_unique<RE2>(text.substr(prefix.size(), text.size() - prefix.size() - 1), opts);
      if (!e->regex->ok())
        throw ConfigError(where, "\"" + text + "\" is not a valid regular expression: " + e->regex->error());
      e->kind = EntryKind::Regex;
    } else if (text.find('/') != std::string::npos || text.find("-op") != std::string::npos) {
      e->kind = EntryKind::FullName;
    } else {
      e->kind = EntryKind::Type;
    }
    impl_->entries.push_back(std::move(e));
  }
}

bool KernelFilter::empty() const { return impl_->entries.empty(); }
const std::vector<std::string>& KernelFilter::entries() const { return impl_->texts; }

bool KernelFilter::matches(std::string_view full_name, std::string_view op_type) const {
  // Every entry is tried (not only up to the first hit) so that the end-of-run report of
  // entries that never matched is exact. The result is the same as MindSpore's ordered test.
  bool any = false;
  for (const auto& e : impl_->entries) {
    bool hit = false;
    switch (e->kind) {
      case EntryKind::Regex:
        hit = RE2::FullMatch(re2::StringPiece(full_name.data(), full_name.size()), *e->regex);
        break;
      case EntryKind::FullName:
        hit = full_name == e->text;
        break;
      case EntryKind::Type:
        hit = icontains(op_type_from_full_name(full_name), e->text) ||
              (!op_type.empty() && icontains(op_type, e->text));
        break;
    }
    if (hit) {
      e->matched.store(true, std::memory_order_relaxed);
      any = true;
    }
  }
  return any;
}

std::vector<std::string> KernelFilter::unmatched_entries() const {
  std::vector<std::string> out;
  for (const auto& e : impl_->entries)
    if (!e->matched.load(std::memory_order_relaxed)) out.push_back(e->text);
  return out;
}

}  // namespace opdump
