// Pairing the tensors of two dumps (matching.h).
#include "matching.h"

#include "identity/op_names.h"

#include <re2/re2.h>

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "opdump/error.h"

namespace opdump::detail {
namespace {

// Target name -> reference name, per the mapping rules (exact names or name-regex(...)).
class NameMapping {
 public:
  explicit NameMapping(const std::vector<std::pair<std::string, std::string>>& rules) {
    for (const auto& [from, to] : rules) {
      const std::string prefix = "name-regex(";
      if (from.rfind(prefix, 0) == 0 && from.back() == ')') {
        auto re = std::make_unique<RE2>(from.substr(prefix.size(), from.size() - prefix.size() - 1));
        if (!re->ok()) throw ConfigError("mapping", "\"" + from + "\" is not a valid regular expression: " + re->error());
        regex_.emplace_back(std::move(re), to);
      } else {
        exact_[sanitize_name(from)] = sanitize_name(to);
      }
    }
  }
  std::string map(const std::string& name) const {
    if (auto it = exact_.find(name); it != exact_.end()) return it->second;
    for (const auto& [re, rewrite] : regex_) {
      std::string out;
      if (RE2::FullMatch(name, *re) && RE2::Extract(name, *re, rewrite, &out)) return out;
    }
    return name;
  }

 private:
  std::map<std::string, std::string> exact_;
  std::vector<std::pair<std::unique_ptr<RE2>, std::string>> regex_;
};

// The op type used for alignment: backend prefixes and suffixes removed, so that the kernels one
// device runs line up with another's (mkldnn_convolution / cudnn_convolution -> convolution), and
// the in-place mark, so that add_ lines up with add.
std::string alignment_type(const std::string& type) {
  static const char* prefixes[] = {"mkldnn_", "cudnn_", "miopen_", "_nnpack_", "thnn_", "slow_", "_slow_", "npu_", "xpu_", "_mps_"};
  static const char* suffixes[] = {"_cpu", "_cuda", "_npu", "_mkldnn", "_cudnn"};
  std::string t = type;
  for (const char* p : prefixes)
    if (t.rfind(p, 0) == 0) t = t.substr(std::strlen(p));
  t = std::string(identity::counted_type(t));
  for (const char* x : suffixes) {
    const size_t n = std::strlen(x);
    if (t.size() > n && t.compare(t.size() - n, n, x) == 0) t.resize(t.size() - n);
  }
  return t;
}

// Where a forward op sits in its model, as the module path ("layer1.0.conv1"), and its type:
// msprobe's entries from construct.json; opdump's and MindSpore's from their scoped names
// ("Default/net-Net/layer1-Sequential/0-BasicBlock/conv1-Conv2d/conv2d-op0"). nullopt for
// gradients and names without scopes.
std::optional<std::pair<std::string, std::string>> module_and_type(const DumpEntry& e) {
  if (e.backward()) return std::nullopt;
  if (e.msprobe) return std::make_pair(e.module, alignment_type(e.op_type));
  const std::optional<std::string> path = identity::module_path_of(e.op_name);
  if (!path) return std::nullopt;
  return std::make_pair(*path, alignment_type(e.op_type));
}

// Ops of one rank and iteration in execution order: one per (name, occurrence) not matched by name.
struct OpSeq {
  std::vector<std::pair<std::string, uint64_t>> ops;
  std::vector<std::string> types;
};

// Longest common subsequence of op types; returns index pairs. Falls back to a greedy in-order
// match when the table would be too large.
std::vector<std::pair<size_t, size_t>> align(const OpSeq& a, const OpSeq& b) {
  const size_t n = a.types.size(), m = b.types.size();
  std::vector<std::pair<size_t, size_t>> out;
  if (n == 0 || m == 0) return out;
  if (n * m > 50'000'000) {
    // Each op of `a` takes the next op of its type in `b`: positions by type, so that a type `b`
    // lacks costs one lookup, not a scan of `b` (n log m in all).
    std::unordered_map<std::string_view, std::vector<size_t>> positions;
    for (size_t k = 0; k < m; ++k) positions[b.types[k]].push_back(k);
    size_t j = 0;
    for (size_t i = 0; i < n && j < m; ++i) {
      const auto p = positions.find(a.types[i]);
      if (p == positions.end()) continue;
      const auto k = std::lower_bound(p->second.begin(), p->second.end(), j);
      if (k == p->second.end()) continue;
      out.emplace_back(i, *k);
      j = *k + 1;
    }
    return out;
  }
  std::vector<uint32_t> dp((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return dp[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      at(i, j) = a.types[i] == b.types[j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  for (size_t i = 0, j = 0; i < n && j < m;) {
    if (a.types[i] == b.types[j]) {
      out.emplace_back(i, j);
      ++i;
      ++j;
    } else if (at(i + 1, j) >= at(i, j + 1)) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

// A rank (or iteration) of the target that stands for another of the reference: when each side
// holds exactly one and they differ (rank 0 against rank 1 of the same job, iteration 2 against 3).
template <typename T>
std::optional<std::pair<T, T>> lone_pair(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() == 1 && b.size() == 1 && a[0] != b[0]) return std::make_pair(a[0], b[0]);
  return std::nullopt;
}

}  // namespace

Pairing pair_entries(const DumpIndex& target, const DumpIndex& reference, const CompareOptions& options) {
  const auto& T = target.entries;
  const auto& R = reference.entries;
  Pairing p;
  p.target_to_reference.assign(T.size(), -1);
  p.reference_to_target.assign(R.size(), -1);
  p.aligned.assign(T.size(), false);
  auto pair = [&](size_t i, size_t j, bool aligned) {
    p.target_to_reference[i] = static_cast<int64_t>(j);
    p.reference_to_target[j] = static_cast<int64_t>(i);
    p.aligned[i] = aligned;
  };
  if (T.size() == 1 && R.size() == 1) {  // two single tensors: compare them whatever their names
    pair(0, 0, false);
    return p;
  }
  const auto ranks = lone_pair(target.ranks(), reference.ranks());
  const auto iterations = lone_pair(target.iterations(), reference.iterations());
  if (ranks) p.notes.push_back("rank " + std::to_string(ranks->first) + " of the target is compared with rank " +
                               std::to_string(ranks->second) + " of the reference (each side holds one rank)");
  if (iterations)
    p.notes.push_back("iteration " + std::to_string(iterations->first) + " of the target is compared with iteration " +
                      std::to_string(iterations->second) + " of the reference (each side holds one iteration)");
  auto rank_of = [&](const DumpEntry& e) { return ranks ? ranks->second : e.rank(); };
  auto iteration_of = [&](const DumpEntry& e) { return iterations ? iterations->second : e.iteration(); };

  NameMapping mapping(options.mapping);
  using Key = std::tuple<uint32_t, int64_t, std::string, std::string, int, uint32_t, uint64_t>;
  std::map<Key, size_t> by_key;
  for (size_t j = 0; j < R.size(); ++j)
    by_key.emplace(Key{R[j].rank(), R[j].iteration(), R[j].where.below, R[j].key_name, int(R[j].io), R[j].slot,
                       R[j].occurrence},
                   j);
  for (size_t i = 0; i < T.size(); ++i) {
    auto it = by_key.find(Key{rank_of(T[i]), iteration_of(T[i]), T[i].where.below, mapping.map(T[i].key_name),
                              int(T[i].io), T[i].slot, T[i].occurrence});
    if (it != by_key.end() && p.reference_to_target[it->second] < 0) pair(i, it->second, false);
  }
  if (!options.align_unmatched) return p;

  // Ops outside every module are named by a call index in one scope ("Gradients/Default/add-op4": the
  // backward engine's gradient sums, numbered in the order it ran them), which another stack's autograd
  // graph renumbers (autocast's casts: a gru's bfloat16 weights summed over its steps, in another order).
  // Where such a pair's tensors in one slot differ in shape, it is not one op: both go to the alignment
  // by order, type and shape below.
  auto unscoped = [](const DumpEntry& e) {
    const size_t cut = e.op_name.rfind('/');
    const std::string_view scope = cut == std::string::npos ? std::string_view() : std::string_view(e.op_name).substr(0, cut);
    return scope == "Default" || scope == "Gradients/Default";
  };
  using OpOf = std::tuple<uint32_t, int64_t, std::string, std::string, uint64_t>;
  std::set<OpOf> renumbered;
  for (size_t i = 0; i < T.size(); ++i) {
    const int64_t j = p.target_to_reference[i];
    if (j >= 0 && unscoped(T[i]) && T[i].shape_known && R[j].shape_known && T[i].shape != R[j].shape &&
        T[i].placeholder.empty() && R[j].placeholder.empty())  // a placeholder has no shape of its own
      renumbered.insert({T[i].rank(), T[i].iteration(), T[i].where.below, T[i].key_name, T[i].occurrence});
  }
  if (!renumbered.empty()) {
    for (size_t i = 0; i < T.size(); ++i)
      if (const int64_t j = p.target_to_reference[i];
          j >= 0 && renumbered.count({T[i].rank(), T[i].iteration(), T[i].where.below, T[i].key_name, T[i].occurrence})) {
        p.reference_to_target[j] = -1;
        p.target_to_reference[i] = -1;
      }
    // Unmatched ops outside every module pair by what they are: the k-th of a type, forward or backward,
    // with tensors of these shapes in these slots, on each side (their order may differ, so no
    // alignment by order could pair them all).
    using Kind = std::tuple<uint32_t, int64_t, std::string, std::string, std::string>;
    auto kinds = [&](const std::vector<DumpEntry>& entries, const std::vector<int64_t>& match, bool is_target) {
      std::map<OpOf, std::pair<Kind, std::vector<size_t>>> ops;  // each op: its kind and its tensors
      std::vector<OpOf> order;
      for (size_t i = 0; i < entries.size(); ++i) {
        const DumpEntry& e = entries[i];
        if (match[i] >= 0 || !unscoped(e) || !e.shape_known) continue;
        const uint32_t rank = is_target ? rank_of(e) : e.rank();
        const int64_t iteration = is_target ? iteration_of(e) : e.iteration();
        const OpOf op{rank, iteration, e.where.below, e.key_name, e.occurrence};
        auto [it, fresh] = ops.try_emplace(op);
        if (fresh) {
          order.push_back(op);
          std::get<0>(it->second.first) = rank;
          std::get<1>(it->second.first) = iteration;
          std::get<2>(it->second.first) = e.where.below;
          std::get<3>(it->second.first) = alignment_type(e.op_type) + (e.backward() ? "#backward" : "");
        }
        std::string& shapes = std::get<4>(it->second.first);
        shapes += std::to_string(int(e.io)) + ":" + std::to_string(e.slot) + "(";
        for (int64_t d : e.shape) shapes += std::to_string(d) + ",";
        shapes += ")";
        it->second.second.push_back(i);
      }
      std::map<std::pair<Kind, size_t>, std::vector<size_t>> out;  // (kind, k-th of it) -> tensors
      std::map<Kind, size_t> seen;
      for (const OpOf& op : order) {
        const auto& [kind, tensors] = ops.at(op);
        out[{kind, seen[kind]++}] = tensors;
      }
      return out;
    };
    const auto t_kinds = kinds(T, p.target_to_reference, true);
    const auto r_kinds = kinds(R, p.reference_to_target, false);
    for (const auto& [kind, ti] : t_kinds) {
      auto rj = r_kinds.find(kind);
      if (rj == r_kinds.end()) continue;
      for (size_t i : ti)
        for (size_t j : rj->second)
          if (p.reference_to_target[j] < 0 && T[i].io == R[j].io && T[i].slot == R[j].slot) {
            pair(i, j, true);
            break;
          }
    }
  }

  // msprobe against another tool: no name in common. Forward ops pair by module path, op type and
  // call index among the ops of that type in that module (an op added elsewhere shifts nothing),
  // when msprobe's construct.json gave the modules (levels mix and L0).
  auto has_modules = [](const std::vector<DumpEntry>& v) {
    return std::any_of(v.begin(), v.end(), [](const DumpEntry& e) { return e.msprobe && !e.module.empty(); });
  };
  auto all_msprobe = [](const std::vector<DumpEntry>& v) {
    return std::all_of(v.begin(), v.end(), [](const DumpEntry& e) { return e.msprobe; });
  };
  if ((has_modules(T) && !all_msprobe(R) && !has_modules(R)) || (has_modules(R) && !all_msprobe(T) && !has_modules(T))) {
    // (group, module, type, call index, io, slot) of each unmatched forward tensor
    using Place = std::tuple<uint32_t, int64_t, std::string, std::string, std::string, uint64_t, int, uint32_t>;
    auto places = [&](const std::vector<DumpEntry>& entries, const std::vector<int64_t>& match, bool is_target) {
      std::map<Place, size_t> out;
      std::map<std::tuple<uint32_t, int64_t, std::string, std::string, std::string>, uint64_t> calls;
      // one call index per op (its tensors share it): (rank, iteration, folder, op name, occurrence)
      std::map<std::tuple<uint32_t, int64_t, std::string, std::string, uint64_t>, uint64_t> call_of;
      for (size_t i = 0; i < entries.size(); ++i) {
        if (match[i] >= 0) continue;
        const DumpEntry& e = entries[i];
        const auto mt = module_and_type(e);
        if (!mt) continue;
        const uint32_t rank = is_target ? rank_of(e) : e.rank();
        const int64_t iteration = is_target ? iteration_of(e) : e.iteration();
        auto [it, fresh] = call_of.try_emplace({rank, iteration, e.where.below, e.key_name, e.occurrence});
        if (fresh) it->second = calls[{rank, iteration, e.where.below, mt->first, mt->second}]++;
        out.emplace(Place{rank, iteration, e.where.below, mt->first, mt->second, it->second, int(e.io), e.slot}, i);
      }
      return out;
    };
    const auto t_places = places(T, p.target_to_reference, true);
    const auto r_places = places(R, p.reference_to_target, false);
    for (const auto& [place, i] : t_places)
      if (auto j = r_places.find(place); j != r_places.end() && p.reference_to_target[j->second] < 0) pair(i, j->second, true);
  }

  // Per rank and iteration: the ops left unmatched on both sides, aligned by order and op type.
  using Group = std::tuple<uint32_t, int64_t, std::string>;
  using OpKey = std::tuple<Group, std::string, uint64_t>;
  std::map<Group, std::pair<OpSeq, OpSeq>> groups;
  std::map<OpKey, std::vector<size_t>> t_tensors, r_tensors;
  auto collect = [&](const std::vector<DumpEntry>& entries, const std::vector<int64_t>& match, bool is_target,
                     std::map<OpKey, std::vector<size_t>>& tensors) {
    for (size_t i = 0; i < entries.size(); ++i) {
      if (match[i] >= 0) continue;
      const DumpEntry& e = entries[i];
      const Group g{is_target ? rank_of(e) : e.rank(), is_target ? iteration_of(e) : e.iteration(), e.where.below};
      auto& v = tensors[{g, e.key_name, e.occurrence}];
      if (v.empty()) {
        OpSeq& seq = is_target ? groups[g].first : groups[g].second;
        seq.ops.emplace_back(e.key_name, e.occurrence);
        // a gradient never lines up with a forward op
        seq.types.push_back(alignment_type(e.op_type) + (e.backward() ? "#backward" : ""));
      }
      v.push_back(i);
    }
  };
  collect(T, p.target_to_reference, true, t_tensors);
  collect(R, p.reference_to_target, false, r_tensors);
  // Two ops whose tensors in the same slot have other shapes are not one op under two names (PyTorch 2.x
  // accumulating a residual's gradient where 1.13 accumulates a parameter's: add_ against add_).
  auto same_shapes = [&](const std::vector<size_t>& ti, const std::vector<size_t>& rj) {
    for (size_t i : ti)
      for (size_t j : rj)
        if (T[i].io == R[j].io && T[i].slot == R[j].slot && T[i].shape_known && R[j].shape_known &&
            T[i].shape != R[j].shape)
          return false;
    return true;
  };
  for (auto& [group, seqs] : groups) {
    for (auto [a, b] : align(seqs.first, seqs.second)) {
      const auto& ti = t_tensors[{group, seqs.first.ops[a].first, seqs.first.ops[a].second}];
      const auto& rj = r_tensors[{group, seqs.second.ops[b].first, seqs.second.ops[b].second}];
      if (!same_shapes(ti, rj)) continue;
      for (size_t i : ti)
        for (size_t j : rj)
          if (p.reference_to_target[j] < 0 && T[i].io == R[j].io && T[i].slot == R[j].slot) {
            pair(i, j, true);
            break;
          }
    }
  }
  return p;
}

}  // namespace opdump::detail
