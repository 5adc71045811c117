// The module scopes of the calling thread (include/opdump/scopes.h): what names operators.
#include "opdump/scopes.h"

#include <string>
#include <vector>

namespace opdump {

namespace scopes {
namespace {

struct ThreadScopes {
  std::vector<std::string> elements;        // "conv1-Conv2d"
  std::vector<std::string> short_elements;  // "conv1"
  std::string path = "Default";
  std::string short_path = "Default";
  std::vector<std::string> models;
  std::vector<bool> marks;
  void rebuild() {
    path = short_path = "Default";
    for (const auto& e : elements) path += "/" + e;
    for (const auto& e : short_elements) short_path += "/" + e;
  }
};

ThreadScopes& mine() {
  thread_local ThreadScopes s;
  return s;
}

const std::string kNoModel;

}  // namespace

void push(const std::string& element, const std::string& short_element) {
  auto& s = mine();
  const std::string& brief = short_element.empty() ? element : short_element;
  s.elements.push_back(element);
  s.short_elements.push_back(brief);
  s.path += "/" + element;
  s.short_path += "/" + brief;
}

void pop() {
  auto& s = mine();
  if (s.elements.empty()) return;
  s.path.resize(s.path.size() - s.elements.back().size() - 1);
  s.short_path.resize(s.short_path.size() - s.short_elements.back().size() - 1);
  s.elements.pop_back();
  s.short_elements.pop_back();
}

void truncate(size_t depth) {
  auto& s = mine();
  if (s.elements.size() <= depth) return;
  s.elements.resize(depth);
  s.short_elements.resize(depth);
  s.rebuild();
}

size_t depth() { return mine().elements.size(); }
const std::string& path() { return mine().path; }
const std::string& short_path() { return mine().short_path; }
void enter_model(const std::string& name) { mine().models.push_back(name); }
void exit_model() {
  if (!mine().models.empty()) mine().models.pop_back();
}
const std::string& current_model() {
  const auto& m = mine().models;
  return m.empty() ? kNoModel : m.back();
}
void push_mark(bool marked) { mine().marks.push_back(marked); }
void pop_mark() {
  if (!mine().marks.empty()) mine().marks.pop_back();
}
bool marked() {
  for (bool m : mine().marks)
    if (m) return true;
  return false;
}

}  // namespace scopes
}  // namespace opdump
