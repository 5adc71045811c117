// Nodes of the adapter's hash maps whose entries come and go with tensors (a few per op, dropped
// when the tensors die), kept for reuse: an entry made in place of a dead one costs no allocation
// on the training thread. Not thread-safe: each recycler serves one map under that map's lock.
#pragma once
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

namespace opdump::pt::detail {

template <typename Map>
class NodeRecycler {
 public:
  using Node = typename Map::node_type;
  static constexpr size_t kKept = 4096;  // about one iteration's tensors of a large model

  // Erases `it` from `map`, keeping its node, its value emptied by `clear`, while there is room;
  // returns the iterator after it.
  template <typename Clear>
  typename Map::iterator erase(Map& map, typename Map::iterator it, Clear&& clear) {
    auto next = std::next(it);
    Node node = map.extract(it);
    if (spare_.size() < kKept) {
      clear(node.mapped());
      spare_.push_back(std::move(node));
    }
    return next;
  }

  // Inserts (key, value) into `map`, in a kept node when there is one; returns where it went.
  template <typename Key, typename Value>
  typename Map::iterator insert(Map& map, Key&& key, Value&& value) {
    if (spare_.empty()) return position(map.emplace(std::forward<Key>(key), std::forward<Value>(value)));
    Node node = std::move(spare_.back());
    spare_.pop_back();
    node.key() = std::forward<Key>(key);
    node.mapped() = std::forward<Value>(value);
    return position(map.insert(std::move(node)));
  }

 private:
  // Maps with unique keys report an insertion's place beside whether it happened; multimaps the place alone.
  template <typename Result>
  static typename Map::iterator position(Result&& r) {
    using R = std::decay_t<Result>;
    if constexpr (std::is_same_v<R, typename Map::iterator>) return r;
    else if constexpr (std::is_same_v<R, std::pair<typename Map::iterator, bool>>) return r.first;
    else return r.position;  // Map::insert_return_type
  }
  std::vector<Node> spare_;
};

}  // namespace opdump::pt::detail
