#include "identity/op_names.h"

#include <cstring>
#include <vector>

namespace opdump::identity {

uint64_t CallIndex::next(std::string_view scope, std::string_view type) {
  // The key is scope, '\0', type: "a" + "bc" and "ab" + "c" stay apart.
  const size_t size = scope.size() + 1 + type.size();
  if (size <= kInlineKey) {
    for (size_t i = 0; i < inline_size_; ++i) {
      InlineCount& c = inline_[i];
      if (c.size == size && std::string_view(c.key, scope.size()) == scope && c.key[scope.size()] == '\0' &&
          std::string_view(c.key + scope.size() + 1, type.size()) == type)
        return c.value++;
    }
  }
  key_.assign(scope);
  key_ += '\0';
  key_.append(type);
  // (a key not inline is never moved inline within an epoch: it is looked up in the map below)
  auto it = counts_.find(key_);
  if (it == counts_.end() && size <= kInlineKey && inline_size_ < kInline) {
    InlineCount& c = inline_[inline_size_++];
    c.value = 0;
    c.size = static_cast<uint8_t>(size);
    std::memcpy(c.key, key_.data(), size);
    return c.value++;
  }
  if (it == counts_.end()) it = counts_.emplace(key_, Count{0, epoch_ - 1}).first;
  Count& c = it->second;
  if (c.epoch != epoch_) {
    c = Count{0, epoch_};
    ++used_;
  }
  return c.value++;
}

void CallIndex::clear() {
  inline_size_ = 0;
  // Keys no longer used (scopes of a model that is gone) are dropped once they are most of them.
  if (counts_.size() > 2 * used_ + 64) counts_.clear();
  used_ = 0;
  ++epoch_;
}

std::string_view counted_type(std::string_view type) {
  const bool dunder = type.size() > 2 && type.substr(type.size() - 2) == "__";  // __and__, __iand__
  if (!dunder && type.size() > 1 && type.back() == '_') type.remove_suffix(1);
  return type;
}

std::string op_name(std::string_view scope, std::string_view type, uint64_t index) {
  std::string out;
  out.reserve(scope.size() + type.size() + 8);
  out.append(scope);
  out += '/';
  out.append(type);
  out += "-op";
  out += std::to_string(index);
  return out;
}

std::string backward_scope(std::string_view forward_op, std::string_view node, uint64_t occurrence) {
  constexpr std::string_view gradients = "Gradients/";
  std::string out;
  out.reserve(gradients.size() + forward_op.size() + 1 + node.size() + (occurrence ? 21 : 0));  // one allocation
  out.append(gradients);
  out.append(forward_op);
  out += '/';
  out.append(node);
  if (occurrence) {
    out += '-';
    out += std::to_string(occurrence);
  }
  return out;
}

std::string orphan_backward_scope(std::string_view node, uint64_t index) {
  return "Gradients/" + std::string(node) + "-" + std::to_string(index);
}

std::pair<std::string, std::string> script_scope_element(std::string_view entry) {
  const size_t open = entry.find('(');
  if (open == std::string_view::npos || entry.back() != ')') return {std::string(entry), std::string(entry)};
  const std::string attr(entry.substr(0, open));
  return {attr + "-" + std::string(entry.substr(open + 1, entry.size() - open - 2)), attr};
}

std::optional<std::string> module_path_of(std::string_view name) {
  if (name.rfind("Default/", 0) != 0) return std::nullopt;
  std::vector<std::string_view> parts;
  for (size_t start = 0; start <= name.size();) {
    size_t slash = name.find('/', start);
    if (slash == std::string_view::npos) slash = name.size();
    parts.push_back(name.substr(start, slash - start));
    start = slash + 1;
  }
  if (parts.size() < 3) return std::nullopt;  // Default/{model}/.../{op}
  std::string path;
  for (size_t i = 2; i + 1 < parts.size(); ++i) {
    if (!path.empty()) path += '.';
    path.append(parts[i].substr(0, parts[i].find('-')));  // "conv1-Conv2d" -> "conv1"
  }
  return path;
}

}  // namespace opdump::identity
