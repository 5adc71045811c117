// The first divergence (origin.h). Ops are visited iteration by iteration, in execution order
// (forward before backward), on whichever rank; the first whose output fails is the origin unless
// one of its inputs comes from an earlier dumped op whose output already failed (then it only
// carries the divergence on). Inputs no dumped op produced (parameters, constants, the data batch)
// cannot be blamed on anything earlier: when they differ, this op is the origin. An op that only
// one side ran and that feeds the failing op is the origin itself.
#include "origin.h"

#include <algorithm>
#include <map>
#include <set>

#include "compare/op_arguments.h"
#include "opdump/error.h"

namespace opdump::detail {
namespace {

constexpr size_t kReaches = 5;

std::string slot_list(const std::vector<uint32_t>& slots) {
  std::string s;
  for (size_t i = 0; i < slots.size(); ++i) s += (i ? (i + 1 == slots.size() ? " and " : ", ") : "") + std::to_string(slots[i]);
  return s;
}

// One op execution of one side, with its rows and its place in the execution order.
struct Op {
  uint32_t rank = 0;
  int64_t iteration = -1;
  std::string below, key;
  uint64_t occurrence = 0;
  uint64_t order = 0;
  std::string op_type, op_name;
  std::map<uint32_t, size_t> input_rows, output_rows;  // slot -> row
  size_t first_row = 0;
  bool matched = false;     // some row has a partner on the other side
  int64_t partner = -1;     // the other side's op
  const ExecutedOp* exec = nullptr;
  size_t exec_index = 0;

  bool output_failed(const std::vector<CompareRow>& rows) const {
    for (const auto& [slot, r] : output_rows)
      if (rows[r].failed()) return true;
    return false;
  }
};

using OpKey = std::tuple<uint32_t, int64_t, std::string, std::string, uint64_t>;
OpKey key_of(const DumpEntry& e) { return {e.rank(), e.iteration(), e.where.below, e.key_name, e.occurrence}; }

// The ops of one side, and the data flow of its execution order.
struct Side {
  const DumpIndex* index = nullptr;
  std::vector<Op> ops;
  std::map<OpKey, size_t> by_key;
  // Per rank: for each executed op, the executed op that produced each of its inputs (-1: none),
  // and the dumped op of each executed op (-1: not dumped).
  std::map<uint32_t, std::vector<std::vector<int64_t>>> producers;
  std::map<uint32_t, std::vector<int64_t>> dumped;

  void add_row(const DumpEntry& e, size_t row, bool matched) {
    auto [it, fresh] = by_key.emplace(key_of(e), ops.size());
    if (fresh) {
      Op op;
      op.rank = e.rank();
      op.iteration = e.iteration();
      op.below = e.where.below;
      op.key = e.key_name;
      op.occurrence = e.occurrence;
      op.order = e.order;
      op.op_type = e.op_type;
      op.op_name = e.op_name;
      op.first_row = row;
      ops.push_back(std::move(op));
    }
    Op& op = ops[it->second];
    (e.io == IoKind::Input ? op.input_rows : op.output_rows).emplace(e.slot, row);
    op.matched |= matched;
  }

  void link_execution_order() {
    for (const auto& [rank, order] : index->order) {
      auto& prod = producers[rank];
      auto& dump = dumped[rank];
      prod.resize(order.ops.size());
      dump.assign(order.ops.size(), -1);
      std::map<uint64_t, int64_t> last_writer;
      std::map<std::pair<int64_t, std::string>, uint64_t> seen;
      for (size_t i = 0; i < order.ops.size(); ++i) {
        const ExecutedOp& x = order.ops[i];
        for (uint64_t id : x.inputs) {
          auto w = id ? last_writer.find(id) : last_writer.end();
          prod[i].push_back(w == last_writer.end() ? -1 : w->second);
        }
        for (uint64_t id : x.outputs)
          if (id) last_writer[id] = static_cast<int64_t>(i);
        const uint64_t occurrence = seen[{x.iteration, x.key_name}]++;
        auto it = by_key.find(OpKey{rank, x.iteration, "", x.key_name, occurrence});
        if (it != by_key.end()) {
          ops[it->second].exec = &x;
          ops[it->second].exec_index = i;
          dump[i] = static_cast<int64_t>(it->second);
        }
      }
    }
  }

  // The dumped op that produced input `slot` of `op` (-1: none, -2: an executed op not dumped).
  int64_t producer(const Op& op, size_t slot) const {
    if (!op.exec) return -1;
    const auto& prod = producers.at(op.rank)[op.exec_index];
    if (slot >= prod.size() || prod[slot] < 0) return -1;
    const int64_t d = dumped.at(op.rank)[static_cast<size_t>(prod[slot])];
    return d >= 0 ? d : -2;
  }

  // The row of `producer`'s output holding tensor `id` (-1 when not dumped).
  int64_t output_row(const Op& producer, uint64_t id) const {
    if (!producer.exec) return -1;
    for (size_t j = 0; j < producer.exec->outputs.size(); ++j)
      if (producer.exec->outputs[j] == id) {
        auto it = producer.output_rows.find(static_cast<uint32_t>(j));
        return it == producer.output_rows.end() ? -1 : static_cast<int64_t>(it->second);
      }
    return -1;
  }

  // Neighbours of an op in its rank's execution order that the other side also has.
  std::string between(const Op& op) const {
    if (!op.exec) return "";
    const auto& dump = dumped.at(op.rank);
    std::string before, after;
    for (size_t i = op.exec_index; i-- > 0 && before.empty();)
      if (dump[i] >= 0 && ops[static_cast<size_t>(dump[i])].matched) before = ops[static_cast<size_t>(dump[i])].op_name;
    for (size_t i = op.exec_index + 1; i < dump.size() && after.empty(); ++i)
      if (dump[i] >= 0 && ops[static_cast<size_t>(dump[i])].matched) after = ops[static_cast<size_t>(dump[i])].op_name;
    if (before.empty() && after.empty()) return "";
    if (before.empty()) return "before " + after;
    if (after.empty()) return "after " + before;
    return "between " + before + " and " + after;
  }

  // Walks back from an op only this side ran to the earliest such op feeding it.
  size_t earliest_unmatched(size_t op_index) const {
    std::set<size_t> visited;
    for (;;) {
      visited.insert(op_index);
      const Op& op = ops[op_index];
      bool moved = false;
      if (op.exec)
        for (size_t s = 0; s < op.exec->inputs.size() && !moved; ++s) {
          const int64_t p = producer(op, s);
          if (p >= 0 && !ops[static_cast<size_t>(p)].matched && !visited.count(static_cast<size_t>(p))) {
            op_index = static_cast<size_t>(p);
            moved = true;
          }
        }
      if (!moved) return op_index;
    }
  }
};

DivergentOp divergent(const Op& op, const std::vector<CompareRow>& rows) {
  DivergentOp d;
  d.rank = op.rank;
  d.iteration = op.iteration;
  d.op_type = op.op_type;
  d.op_name = op.op_name;
  d.backward = op.key.rfind("Gradients", 0) == 0;
  d.order = op.order;
  d.row = op.first_row;
  for (const auto& [slot, r] : op.output_rows)
    if (rows[r].failed()) {
      d.row = r;
      break;
    }
  return d;
}

class OriginFinder {
 public:
  explicit OriginFinder(CompareResult& result) : result_(result), rows_(result.rows) {
    target_.index = &result.target;
    reference_.index = &result.reference;
    for (size_t r = 0; r < rows_.size(); ++r) {
      const bool both = rows_[r].target && rows_[r].reference;
      if (rows_[r].target) target_.add_row(*rows_[r].target, r, both);
      if (rows_[r].reference) reference_.add_row(*rows_[r].reference, r, both);
    }
    for (const auto& row : rows_)
      if (row.target && row.reference) {
        Op& t = target_.ops[target_.by_key.at(key_of(*row.target))];
        if (t.partner < 0) t.partner = static_cast<int64_t>(reference_.by_key.at(key_of(*row.reference)));
      }
    target_.link_execution_order();
    reference_.link_execution_order();
    see_failures_through_inputs();
  }

  void run() {
    std::vector<size_t> candidates;
    for (size_t i = 0; i < target_.ops.size(); ++i)
      if (target_.ops[i].output_failed(rows_) || seen_failing_.count(i) || failing_unexplained_input(i))
        candidates.push_back(i);
    std::stable_sort(candidates.begin(), candidates.end(), [&](size_t a, size_t b) {
      const Op &x = target_.ops[a], &y = target_.ops[b];
      if (x.iteration != y.iteration) return x.iteration < y.iteration;
      if (x.order != y.order) return x.order < y.order;
      return x.rank < y.rank;
    });
    for (size_t c : candidates)
      if (judge(c)) return;
    if (!candidates.empty()) {  // every failing op has a failing input: the runs parted earlier
      const Op& op = target_.ops[candidates.front()];
      auto& f = result_.first_divergence;
      f.found = true;
      f.inputs_agree = false;
      f.op = divergent_op(candidates.front());
      f.data_flow = op.exec != nullptr;
      f.cause = "its inputs already differ: the runs parted before the dumped data";
      f.source = find_source_line(*rows_[op.first_row].target);
      reaches_from(candidates.front());
    }
  }

 private:
  // Whether op `c` (its output fails) is the origin; fills the result when it is.
  bool judge(size_t c) {
    const Op& op = target_.ops[c];
    std::vector<uint32_t> differing_external, unknown_external, differing_inputs;
    if (!op.exec) {  // no data flow: the dumped inputs decide
      std::vector<uint32_t> external;
      for (const auto& [slot, r] : op.input_rows) {
        if (!rows_[r].failed()) continue;
        if (!produced_by_no_earlier_op(op, *rows_[r].target)) return false;
        external.push_back(slot);
      }
      return origin_output(c, external, {}, op.input_rows.empty());
    }
    for (size_t s = 0; s < op.exec->inputs.size(); ++s) {
      const uint64_t id = op.exec->inputs[s];
      if (!id) continue;
      auto in = op.input_rows.find(static_cast<uint32_t>(s));
      const bool in_failed = in != op.input_rows.end() && rows_[in->second].failed();
      const int64_t p = target_.producer(op, s);
      if (p >= 0) {
        const Op& producer = target_.ops[static_cast<size_t>(p)];
        if (!producer.matched) return origin_one_side(FirstDivergence::Kind::ExtraOp, target_.earliest_unmatched(static_cast<size_t>(p)), c);
        if (produced_failing(static_cast<size_t>(p), id)) return false;  // carried on from earlier
        if (in_failed) differing_inputs.push_back(static_cast<uint32_t>(s));
      } else if (p == -2 && in_failed) {
        return false;  // produced by an op the dump left out: it cannot be told apart from that op
      } else if (p == -1) {
        if (in_failed) differing_external.push_back(static_cast<uint32_t>(s));
        else if (in == op.input_rows.end()) unknown_external.push_back(static_cast<uint32_t>(s));
      }
    }
    // An input the reference got from an op the target did not run.
    if (op.partner >= 0) {
      const Op& twin = reference_.ops[static_cast<size_t>(op.partner)];
      if (twin.exec)
        for (size_t s = 0; s < twin.exec->inputs.size(); ++s) {
          const int64_t p = reference_.producer(twin, s);
          if (p >= 0 && !reference_.ops[static_cast<size_t>(p)].matched)
            return origin_one_side(FirstDivergence::Kind::MissingOp, reference_.earliest_unmatched(static_cast<size_t>(p)), c);
        }
    }
    if (!differing_inputs.empty()) {
      // An input differs although the op that produced it matches: something between them that
      // the dump does not show changed it.
      return origin_output(c, differing_external, unknown_external, false, differing_inputs);
    }
    return origin_output(c, differing_external, unknown_external, false);
  }

  bool origin_output(size_t c, const std::vector<uint32_t>& differing_external,
                     const std::vector<uint32_t>& unknown_external, bool no_inputs_known,
                     const std::vector<uint32_t>& changed_between = {}) {
    const Op& op = target_.ops[c];
    auto& f = result_.first_divergence;
    f.found = true;
    f.kind = FirstDivergence::Kind::Output;
    f.op = divergent_op(c);
    f.data_flow = op.exec != nullptr;
    f.inputs_agree = differing_external.empty() && changed_between.empty();
    std::vector<uint32_t> failed;
    for (const auto& [slot, r] : op.output_rows)
      if (rows_[r].failed()) failed.push_back(slot);
    if (!failed.empty()) {
      f.cause = (failed.size() > 1 ? "outputs " : "output ") + slot_list(failed) + " differ" + (failed.size() > 1 ? "" : "s");
    } else if (auto seen = seen_failing_.find(c); seen != seen_failing_.end()) {
      const CompareRow& by = rows_[seen->second];
      f.cause = "its output (not dumped) differs: " + by.target->op_name + " read it as input " +
                std::to_string(by.target->slot);
    } else {
      f.cause = "its outputs were not dumped";
    }
    if (!differing_external.empty())
      f.cause += "; " + inputs_text(op, differing_external) + (differing_external.size() > 1 ? " differ" : " differs") +
                 ": no dumped op produced " + (differing_external.size() > 1 ? "them" : "it") +
                 unnamed_note(op, differing_external);
    if (!changed_between.empty())
      f.cause += "; input " + slot_list(changed_between) +
                 " differs although the op that produced it matches (changed in between by something the dump does not show)";
    const std::vector<std::string> arguments = argument_differences(op);
    if (!arguments.empty()) {
      f.cause += "; argument";
      for (size_t i = 0; i < arguments.size(); ++i) f.cause += (i ? ", " : " ") + arguments[i];
      f.cause += " (its recorded arguments differ)";
    }
    if (differing_external.empty() && changed_between.empty()) {
      if (no_inputs_known) f.cause += "; its inputs were not dumped";
      else if (op.exec) f.cause += "; every input produced by a dumped op matches";
      else f.cause += "; its dumped inputs match";
      if (!unknown_external.empty())
        f.cause += "; " + inputs_text(op, unknown_external) + " came from no dumped op and " +
                   (unknown_external.size() > 1 ? "were" : "was") + " not dumped" + unnamed_note(op, unknown_external);
      else if (op.exec && !no_inputs_known && arguments.empty())
        f.cause += " (so a constant, setting or computation of the op itself differs)";
    }
    f.source = find_source_line(*rows_[op.first_row].target);
    reaches_from(c);
    return true;
  }

  // The non-tensor arguments the two sides recorded differently for this op (save_kernel_args).
  std::vector<std::string> argument_differences(const Op& op) const {
    for (const auto* rows : {&op.input_rows, &op.output_rows})
      for (const auto& [slot, r] : *rows)
        if (rows_[r].target && rows_[r].reference) return differing_arguments(*rows_[r].target, *rows_[r].reference);
    return {};
  }

  // Without execution order files (msprobe's dumps), an input whose recorded statistics (dtype,
  // shape, max, min, mean, norm) equal no output of an earlier dumped op of its rank and iteration
  // came from outside them: a parameter, a constant or the data batch.
  bool produced_by_no_earlier_op(const Op& op, const DumpEntry& input) {
    if (!input.msprobe || !input.stats || !input.stats->max || !input.stats->l2norm) return false;
    if (outputs_.empty())
      for (const Op& o : target_.ops)
        for (const auto& [slot, r] : o.output_rows)
          if (const DumpEntry* e = rows_[r].target; e && e->stats)
            outputs_.emplace(fingerprint(*e), std::make_tuple(o.rank, o.iteration, o.order));
    auto [from, to] = outputs_.equal_range(fingerprint(input));
    for (auto it = from; it != to; ++it) {
      const auto& [rank, iteration, order] = it->second;
      if (rank == op.rank && iteration == op.iteration && order < op.order) return false;
    }
    return true;
  }
  using Fingerprint = std::tuple<int, Shape, double, double, double, double>;
  static Fingerprint fingerprint(const DumpEntry& e) {
    const RecordedStats& s = *e.stats;
    return {int(e.dtype), e.shape, s.max.value_or(0), s.min.value_or(0), s.avg.value_or(0), s.l2norm.value_or(0)};
  }

  // The name the dump recorded for an input no dumped op produced ("parameter net.fc.weight"), or "".
  std::string input_name(const Op& op, uint32_t slot) const {
    if (!op.exec) return "";
    const auto& names = target_.index->order.at(op.rank).tensor_names;
    auto it = names.find(op.exec->inputs[slot]);
    return it == names.end() ? std::string() : it->second;
  }

  // "input 1 (parameter net.conv1.weight)", "inputs 0 and 2 (parameter net.fc.bias)"
  std::string inputs_text(const Op& op, const std::vector<uint32_t>& slots) const {
    std::string named;
    for (uint32_t s : slots) {
      const std::string name = input_name(op, s);
      if (!name.empty()) named += (named.empty() ? "" : "; ") + (slots.size() > 1 ? std::to_string(s) + ": " : "") + name;
    }
    return (slots.size() > 1 ? "inputs " : "input ") + slot_list(slots) + (named.empty() ? "" : " (" + named + ")");
  }

  // Dumps of inputs alone (dump_mode input) show an op's failing output only as a failing input of
  // the ops that read it: its producer fails as they see it.
  void see_failures_through_inputs() {
    for (size_t c = 0; c < target_.ops.size(); ++c) {
      const Op& op = target_.ops[c];
      if (!op.exec) continue;
      for (const auto& [slot, r] : op.input_rows) {
        if (!rows_[r].failed() || slot >= op.exec->inputs.size()) continue;
        const int64_t p = target_.producer(op, slot);
        if (p < 0 || target_.output_row(target_.ops[static_cast<size_t>(p)], op.exec->inputs[slot]) >= 0) continue;
        failing_ids_.insert({static_cast<size_t>(p), op.exec->inputs[slot]});
        seen_failing_.emplace(static_cast<size_t>(p), r);
      }
    }
  }

  // Whether the output of `producer` holding tensor `id` failed (its own row, or as its readers saw it).
  bool produced_failing(size_t producer, uint64_t id) const {
    const int64_t out = target_.output_row(target_.ops[producer], id);
    if (out >= 0) return rows_[static_cast<size_t>(out)].failed();
    return failing_ids_.count({producer, id}) > 0;
  }

  // An op with a failing input no dumped op produced (or no data flow to tell): a candidate even
  // when its outputs were not dumped.
  bool failing_unexplained_input(size_t c) const {
    const Op& op = target_.ops[c];
    for (const auto& [slot, r] : op.input_rows) {
      if (!rows_[r].failed()) continue;
      if (!op.exec) return op.output_rows.empty();
      if (slot < op.exec->inputs.size() && target_.producer(op, slot) == -1) return true;
    }
    return false;
  }

  DivergentOp divergent_op(size_t c) const {
    DivergentOp d = divergent(target_.ops[c], rows_);
    if (auto seen = seen_failing_.find(c); seen != seen_failing_.end() && target_.ops[c].output_rows.empty())
      d.row = seen->second;
    return d;
  }

  // What the inputs without a recorded name can be.
  std::string unnamed_note(const Op& op, const std::vector<uint32_t>& slots) const {
    for (uint32_t s : slots)
      if (input_name(op, s).empty()) return " (a parameter, constant or data batch)";
    return "";
  }

  // An op only one side ran (`kind` says which) feeds the target's failing op `consumer`.
  bool origin_one_side(FirstDivergence::Kind kind, size_t op_index, size_t consumer) {
    const bool extra = kind == FirstDivergence::Kind::ExtraOp;
    const Side& side = extra ? target_ : reference_;
    const Op& op = side.ops[op_index];
    auto& f = result_.first_divergence;
    f.found = true;
    f.kind = kind;
    f.op = divergent(op, rows_);
    f.data_flow = true;
    f.neighbours = side.between(op);
    f.cause = std::string("an op only the ") + (extra ? "target" : "reference") + " ran, " +
              (f.neighbours.empty() ? std::string() : f.neighbours + ", ") + "feeds " + target_.ops[consumer].op_name +
              (extra ? ", whose output differs" : " there; in the target its output differs");
    const CompareRow& row = rows_[op.first_row];
    f.source = find_source_line(extra ? *row.target : *row.reference);
    if (!extra) f.reaches.push_back(divergent(target_.ops[consumer], rows_));
    reaches_from(extra ? op_index : consumer);
    return true;
  }

  // The failing ops the origin's outputs reach through failing ops (data flow), or the next
  // failing ops in order when there is no data flow.
  void reaches_from(size_t start) {
    auto& reaches = result_.first_divergence.reaches;
    const Op& origin = target_.ops[start];
    if (!origin.exec) {
      bool after = false;
      for (const Op& op : target_.ops) {
        if (reaches.size() >= kReaches) break;
        if (&op == &origin) after = true;
        else if (after && op.output_failed(rows_)) reaches.push_back(divergent(op, rows_));  // (no data flow)
      }
      return;
    }
    const auto& order = target_.index->order.at(origin.rank).ops;
    const auto& dump = target_.dumped.at(origin.rank);
    std::set<uint64_t> tainted(origin.exec->outputs.begin(), origin.exec->outputs.end());
    tainted.erase(0);
    for (size_t i = origin.exec_index + 1; i < order.size() && reaches.size() < kReaches; ++i) {
      bool reads = false;
      for (uint64_t id : order[i].inputs) reads |= id && tainted.count(id);
      if (!reads) continue;
      const bool failing = dump[i] < 0 || target_.ops[static_cast<size_t>(dump[i])].output_failed(rows_) ||
                           seen_failing_.count(static_cast<size_t>(dump[i]));
      if (!failing) continue;
      if (dump[i] >= 0) reaches.push_back(divergent_op(static_cast<size_t>(dump[i])));
      for (uint64_t id : order[i].outputs)
        if (id) tainted.insert(id);
    }
  }

  CompareResult& result_;
  const std::vector<CompareRow>& rows_;
  Side target_, reference_;
  std::set<std::pair<size_t, uint64_t>> failing_ids_;  // (target op, tensor id) its readers saw fail
  std::map<size_t, size_t> seen_failing_;              // target op -> a failing input row that shows it
  std::multimap<Fingerprint, std::tuple<uint32_t, int64_t, uint64_t>> outputs_;  // -> (rank, iteration, order)
};

}  // namespace

void find_first_divergence(CompareResult& result) { OriginFinder(result).run(); }

}  // namespace opdump::detail
