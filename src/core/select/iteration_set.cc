#include <algorithm>
#include <cctype>
#include <limits>

#include "opdump/error.h"
#include "select/iteration_set.h"

namespace opdump {
namespace {

const char* kAllowed = "\"all\", or numbers and inclusive ranges lo-hi separated by '|' (e.g. \"0|5-8|100-120\")";

uint64_t parse_number(std::string_view text, std::string_view spec, const std::string& field) {
  if (text.empty())
    throw ConfigError(field, "\"" + std::string(spec) + "\" has an empty number; allowed: " + kAllowed);
  uint64_t v = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c)))
      throw ConfigError(field, "\"" + std::string(spec) + "\" contains '" + std::string(1, c) +
                                   "'; allowed: " + kAllowed);
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10)
      throw ConfigError(field, "\"" + std::string(spec) + "\": " + std::string(text) +
                                   " is larger than 18446744073709551615");
    v = v * 10 + digit;
  }
  return v;
}

}  // namespace

IterationSet IterationSet::all() {
  IterationSet s;
  s.all_ = true;
  return s;
}

IterationSet IterationSet::parse(std::string_view spec, const std::string& field) {
  if (spec == "all") return all();
  if (spec.empty()) throw ConfigError(field, "is empty; allowed: " + std::string(kAllowed));
  if (spec.size() > (1u << 20)) throw ConfigError(field, "is longer than 1 MiB");
  IterationSet s;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t bar = spec.find('|', start);
    if (bar == std::string_view::npos) bar = spec.size();
    std::string_view piece = spec.substr(start, bar - start);
    if (piece.empty())
      throw ConfigError(field, "\"" + std::string(spec) + "\" has an empty piece; allowed: " + kAllowed);
    size_t dash = piece.find('-');
    uint64_t lo, hi;
    if (dash == std::string_view::npos) {
      lo = hi = parse_number(piece, spec, field);
    } else {
      lo = parse_number(piece.substr(0, dash), spec, field);
      hi = parse_number(piece.substr(dash + 1), spec, field);
      if (hi < lo)
        throw ConfigError(field, "\"" + std::string(spec) + "\": range " + std::string(piece) +
                                     " ends before it starts");
    }
    s.ranges_.emplace_back(lo, hi);
    start = bar + 1;
  }
  std::sort(s.ranges_.begin(), s.ranges_.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& r : s.ranges_) {
    if (!merged.empty() && (merged.back().second == UINT64_MAX || r.first <= merged.back().second + 1))
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  s.ranges_ = std::move(merged);
  return s;
}

bool IterationSet::contains(uint64_t it) const {
  if (all_) return true;
  auto pos = std::upper_bound(ranges_.begin(), ranges_.end(), std::make_pair(it, UINT64_MAX));
  if (pos == ranges_.begin()) return false;
  --pos;
  return it >= pos->first && it <= pos->second;
}

uint64_t IterationSet::next_after(uint64_t it) const {
  if (it == UINT64_MAX) return UINT64_MAX;
  if (all_) return it + 1;
  for (const auto& r : ranges_) {
    if (r.second <= it) continue;
    return std::max(r.first, it + 1);
  }
  return UINT64_MAX;
}

std::string IterationSet::to_string() const {
  if (all_) return "all";
  std::string s;
  for (const auto& r : ranges_) {
    if (!s.empty()) s += '|';
    s += std::to_string(r.first);
    if (r.second != r.first) s += '-' + std::to_string(r.second);
  }
  return s;
}

}  // namespace opdump
