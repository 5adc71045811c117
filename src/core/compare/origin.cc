// The first divergence (origin.h). Ops are visited iteration by iteration, in execution order
// (forward before backward), on whichever rank; the first whose output fails is the origin unless
// one of its inputs comes from an earlier dumped op whose output already failed (then it only
// carries the divergence on). Inputs no dumped op produced (parameters, constants, the data batch)
// cannot be blamed on anything earlier: when they differ, this op is the origin. An op that only
// one side ran and that feeds the failing op is the origin itself.
//
// Across stacks (precision.h) every op differs a little: a row within its dtypes' rounding does not
// fail here, and an op whose inputs already differ is the origin only when its output's error grows
// beyond what their error and its precision explain. Two things name an op whatever its error: a
// model argument recorded differently on the two sides, and a precision lowered at this op while
// other ops of its type keep the reference's (a change of the model, not of the stack).
#include "origin.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "compare/metrics.h"
#include "compare/op_arguments.h"
#include "compare/precision.h"
#include "compare/source_lines.h"
#include "opdump/error.h"
#include "select/op_kinds.h"

namespace opdump::detail {
namespace {

constexpr size_t kReaches = 5;
// The precision said of a pair is the coarsest one held by at least 1 in this many differing rows.
constexpr size_t kPrecisionShare = 20;

// A row that fails beyond its precision (a failing row within it is the stacks' rounding).
bool differs(const CompareRow& r) { return r.failed() && !r.within_precision; }

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2g", v);
  return text;
}

std::string slot_list(const std::vector<uint32_t>& slots) {
  std::string s;
  for (size_t i = 0; i < slots.size(); ++i) s += (i ? (i + 1 == slots.size() ? " and " : ", ") : "") + std::to_string(slots[i]);
  return s;
}

// How far tensor `a` lies from tensor `b` of the same side (the relative euclidean distance; from
// statistics, the norms' relative difference), with what rounding one to the other's precision
// explains: a cast moves each value by half an epsilon of the coarser dtype at most, and the norm
// and that distance by no more; nullopt where they cannot be told apart so (other shapes, exact
// dtypes, no data).
struct Distance {
  double value = 0, floor = 0;
};
std::optional<Distance> distance_between(const DumpEntry& a, const DumpEntry& b) {
  if (!a.shape_known || !b.shape_known || a.shape != b.shape || !a.unreadable.empty() || !b.unreadable.empty() ||
      !a.placeholder.empty() || !b.placeholder.empty() || dtype_epsilon(a.dtype) == 0 || dtype_epsilon(b.dtype) == 0)
    return std::nullopt;
  if (a.source == DumpEntry::Source::Statistics || b.source == DumpEntry::Source::Statistics) {
    if (!a.stats || !b.stats || !a.stats->l2norm || !b.stats->l2norm || !(*b.stats->l2norm > 0)) return std::nullopt;
    return Distance{std::fabs(*a.stats->l2norm - *b.stats->l2norm) / *b.stats->l2norm,
                    0.5 * dtype_epsilon(coarser_dtype(a.dtype, b.dtype))};
  }
  try {
    const Tensor x = load_entry(a), y = load_entry(b);
    if (x.numel() == 0) return std::nullopt;
    bool mismatch = false;
    MetricsOptions options;
    options.threads = 1;
    const TensorMetrics m = compute_metrics(x.view(), y.view(), options, &mismatch);
    if (mismatch) return Distance{std::numeric_limits<double>::infinity(), 0};
    if (std::isnan(m.rel_euclidean)) return std::nullopt;
    return Distance{m.rel_euclidean,
                    0.5 * dtype_epsilon(coarser_dtype(held_precision(x.view()), held_precision(y.view())))};
  } catch (const Error&) {
    return std::nullopt;
  }
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
      if (differs(rows[r])) return true;
    return false;
  }
  bool backward() const { return key.rfind("Gradients", 0) == 0; }
  // Some output fails its verdict, even within its precision.
  bool output_warned(const std::vector<CompareRow>& rows) const {
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
  d.backward = op.backward();
  d.order = op.order;
  d.row = op.first_row;
  for (const auto& [slot, r] : op.output_rows)
    if (rows[r].failed()) {
      d.row = r;
      break;
    }
  return d;
}

// Per rank and iteration, the order of the first op for which a condition holds (built once, on first use).
class FirstOrders {
 public:
  template <typename Holds>
  void build(const std::vector<Op>& ops, Holds holds) {
    if (ready_) return;
    ready_ = true;
    for (const Op& o : ops) {
      if (!holds(o)) continue;
      auto [it, fresh] = first_.emplace(std::make_pair(o.rank, o.iteration), o.order);
      if (!fresh) it->second = std::min(it->second, o.order);
    }
  }
  // Whether such an op ran before `op` in its rank and iteration; ...or is `op` itself.
  bool before(const Op& op) const {
    auto it = first_.find({op.rank, op.iteration});
    return it != first_.end() && it->second < op.order;
  }
  bool at_or_before(const Op& op) const {
    auto it = first_.find({op.rank, op.iteration});
    return it != first_.end() && it->second <= op.order;
  }

 private:
  std::map<std::pair<uint32_t, int64_t>, uint64_t> first_;  // (rank, iteration) -> order
  bool ready_ = false;
};

class OriginFinder {
 public:
  OriginFinder(CompareResult& result, const CrossReplay& cross_replay)
      : result_(result), rows_(result.rows), cross_replay_(cross_replay) {
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
      if (target_.ops[i].output_failed(rows_) || seen_failing_.count(i) || failing_unexplained_input(i) ||
          (target_.ops[i].output_warned(rows_) && (lowers_precision_alone(i) || !model_arguments(i).empty())))
        candidates.push_back(i);
    std::stable_sort(candidates.begin(), candidates.end(), [&](size_t a, size_t b) {
      const Op &x = target_.ops[a], &y = target_.ops[b];
      if (x.iteration != y.iteration) return x.iteration < y.iteration;
      if (x.order != y.order) return x.order < y.order;
      return x.rank < y.rank;
    });
    for (size_t c : candidates)
      if (judge(c)) return;
    // Every failing op has a failing input: the runs parted before the dumped data, unless the
    // first of them only grew its inputs' small differences (the stacks agree to their precision).
    if (!candidates.empty() && !grown_.count(candidates.front())) {
      const Op& op = target_.ops[candidates.front()];
      auto& f = result_.first_divergence;
      f.found = true;
      f.inputs_agree = false;
      f.op = divergent_op(candidates.front());
      f.data_flow = op.exec != nullptr;
      f.cause = "its inputs already differ: the runs parted before the dumped data";
      f.source = find_source_line(*rows_[op.first_row].target);
      reaches_from(candidates.front());
      return;
    }
    describe_precision();
  }

 private:
  // Whether op `c` (a candidate) is the origin; fills the result when it is.
  bool judge(size_t c) {
    const Op& op = target_.ops[c];
    std::vector<uint32_t> differing_external, unknown_external, differing_inputs;
    bool carried = false;        // an input comes from an earlier op whose output already differs
    bool carried_state = false;  // ... or is a parameter or buffer an earlier op with differing data updated
    std::optional<std::pair<FirstDivergence::Kind, size_t>> one_side;  // an op only one side ran feeds it
    if (!op.exec) {  // no data flow: the dumped inputs decide
      for (const auto& [slot, r] : op.input_rows) {
        if (!differs(rows_[r])) continue;
        if (produced_by_no_earlier_op(op, *rows_[r].target)) differing_external.push_back(slot);
        else carried = true;
      }
    } else {
      for (size_t s = 0; s < op.exec->inputs.size(); ++s) {
        const uint64_t id = op.exec->inputs[s];
        if (!id) continue;
        auto in = op.input_rows.find(static_cast<uint32_t>(s));
        const bool in_failed = in != op.input_rows.end() && differs(rows_[in->second]);
        const int64_t p = target_.producer(op, s);
        if (p >= 0) {
          const Op& producer = target_.ops[static_cast<size_t>(p)];
          if (!producer.matched) {
            // Amid differences already there (another stack), an op one side runs and the other does
            // not (a gradient accumulated by add instead of stolen) is blamed only when it changes
            // the values it passes on, or when this op's error is more than what its inputs carry.
            one_side = {FirstDivergence::Kind::ExtraOp, target_.earliest_unmatched(static_cast<size_t>(p))};
            if (!after_differences(op) || one_side_changes_values(c, s, static_cast<size_t>(p), true))
              return origin_one_side(one_side->first, one_side->second, c);
            carried = true;
            continue;
          }
          if (produced_failing(static_cast<size_t>(p), id)) {
            carried = true;
            carried_state |= producer.iteration != op.iteration;  // a parameter an earlier step updated
          } else if (in_failed && !within_producer_precision(producer, id, in->second)) {
            // Changed between its producer and this op by something the dump does not show; after
            // ops whose outputs already differ, that something (a gradient accumulated in place) may
            // carry their difference.
            if (after_differences(op)) carried = true;
            else differing_inputs.push_back(static_cast<uint32_t>(s));
          }
        } else if (p == -2 && in_failed) {
          carried = true;  // produced by an op the dump left out: it cannot be told apart from that op
        } else if (p == -1) {
          // An unnamed tensor no dumped op made (a nested op's result that autograd saved), after
          // ops whose outputs already differ (a coarser dtype, other kernels), may carry that
          // difference; so may a buffer an earlier op whose data differs read and updated in place
          // (batch_norm's running statistics, in this iteration or an earlier one: its schema does
          // not mark them written), or one an earlier op read when it still agreed, amid differences.
          // Neither is blamed on its own.
          if (in_failed && input_name(op, s).empty() && after_differences(op) &&
              may_carry_earlier_differences(op, rows_[in->second])) {
            carried = true;
          } else if (in_failed && (read_by_differing_op(op, id) ||
                                   (after_differences(op) && changed_since_read(op, id)))) {
            carried = true;
            carried_state = true;
          } else if (in_failed) {
            differing_external.push_back(static_cast<uint32_t>(s));
          } else if (in == op.input_rows.end()) {
            unknown_external.push_back(static_cast<uint32_t>(s));
          }
        }
      }
      // An input the reference got from an op the target did not run.
      if (op.partner >= 0) {
        const Op& twin = reference_.ops[static_cast<size_t>(op.partner)];
        if (twin.exec)
          for (size_t s = 0; s < twin.exec->inputs.size(); ++s) {
            const int64_t p = reference_.producer(twin, s);
            if (p >= 0 && !reference_.ops[static_cast<size_t>(p)].matched) {
              one_side = {FirstDivergence::Kind::MissingOp, reference_.earliest_unmatched(static_cast<size_t>(p))};
              if (!after_differences(op) || one_side_changes_values(c, s, static_cast<size_t>(p), false))
                return origin_one_side(one_side->first, one_side->second, c);
              carried = true;
              break;
            }
          }
      }
    }
    const bool no_inputs_known = !op.exec && op.input_rows.empty();
    // What the op itself shows, whatever its inputs carry: a model argument changed, or a
    // precision lowered here alone.
    if (op.output_warned(rows_) && (!model_arguments(c).empty() || lowers_precision_alone(c)))
      return origin_output(c, differing_external, unknown_external, no_inputs_known, differing_inputs);
    const double in_error = input_error(op);
    // A parameter, constant or data batch that differs, or an input changed between the op that
    // made it and this one: the divergence enters here.
    if (!differing_external.empty() || !differing_inputs.empty())
      return origin_output(c, differing_external, unknown_external, no_inputs_known, differing_inputs);
    // Inputs that already differ: a re-run of the reference's op on the target's inputs says
    // whether this op adds error, where it can be done; the error's growth where it cannot.
    if (carried || in_error > 0)
      if (const std::optional<CrossCheck>& check = cross_check(c)) {
        if (!check->strays) {
          grown_.insert(c);
          return false;
        }
        if (one_side) return origin_one_side(one_side->first, one_side->second, c);
        return origin_output(c, {}, {}, false, {}, in_error, check->detail);
      }
    // From statistics, extremes an op keeps from its input move only as far as the input's did, on each
    // side exactly, whatever the input carries: none of the excuses of growth below applies to them.
    if ((carried || in_error > 0) && statistics_only(op))
      if (const std::string moved = extreme_moved(op); !moved.empty()) {
        if (one_side) return origin_one_side(one_side->first, one_side->second, c);
        return origin_output(c, {}, {}, false, {}, in_error, "", moved);
      }
    // An op whose inputs already differ and that draws random numbers (dropout) differs by its draws
    // where the two sides drew differently (PyTorch 2.x against 1.13 from one seed): no growth of error
    // says anything about it.
    if ((carried || in_error > 0) && op_kinds::draws_random(op.op_type)) {
      grown_.insert(c);
      return false;
    }
    // With only statistics to go on, the growth of error says nothing an origin could be told by
    // where sums cancel (gradients over a batch, the optimizer's updates outside the model) or where
    // parameters already differ by what an earlier step's rounding did to them (a re-run's
    // conditioning would tell; statistics cannot).
    const bool outside_model = std::count(op.op_name.begin(), op.op_name.end(), '/') < 2;
    if ((carried || in_error > 0) && statistics_only(op) &&
        (op.backward() || outside_model || carried_state || parameters_differ_by(op) || drawn_otherwise_before(op))) {
      grown_.insert(c);
      return false;
    }
    if (carried) {
      if (!adds_error(c, in_error)) {  // it carries the divergence on
        grown_.insert(c);
        return false;
      }
      if (one_side) return origin_one_side(one_side->first, one_side->second, c);
      return origin_output(c, {}, {}, false, {}, in_error);
    }
    if (!op.output_failed(rows_) && !seen_failing_.count(c)) return false;  // within its precision
    // Its inputs agree, or differ within their precision: the op is the origin when its own error
    // is more than theirs grows into.
    if (in_error > 0 && !adds_error(c, in_error)) {
      grown_.insert(c);
      return false;
    }
    if (computed_lower_inside(c)) {
      grown_.insert(c);
      return false;
    }
    return origin_output(c, {}, unknown_external, no_inputs_known, {}, in_error > 0 ? in_error : -1);
  }

  bool origin_output(size_t c, const std::vector<uint32_t>& differing_external,
                     const std::vector<uint32_t>& unknown_external, bool no_inputs_known,
                     const std::vector<uint32_t>& changed_between = {}, double grown_from = -1,
                     const std::string& replayed = "", const std::string& extreme = "") {
    const Op& op = target_.ops[c];
    auto& f = result_.first_divergence;
    f.found = true;
    f.kind = FirstDivergence::Kind::Output;
    f.op = divergent_op(c);
    f.data_flow = op.exec != nullptr;
    f.inputs_agree = differing_external.empty() && changed_between.empty() && grown_from < 0;
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
    if (grown_from >= 0 && !replayed.empty())
      f.cause += "; its inputs already differ (relative error " + number(grown_from) +
                 "), but re-run in float64 on them with the reference's arguments, its output strays: " + replayed;
    else if (grown_from >= 0 && !extreme.empty())
      f.cause += "; its inputs already differ, but " + extreme;
    else if (grown_from >= 0)
      f.cause += "; its inputs already differ, but its error grows from " + number(grown_from) + " at its inputs to " +
                 number(output_error(op)) + ", more than they and " + std::string(dtype_name(output_precision(op))) +
                 " rounding explain (" + number(kErrorGrowth) + "x their error + " + number(kPrecisionFloorEps) + " eps)" +
                 hidden_rounding_note(op);
    if (!differing_external.empty())
      f.cause += "; " + inputs_text(op, differing_external) + (differing_external.size() > 1 ? " differ" : " differs") +
                 ": no dumped op produced " + (differing_external.size() > 1 ? "them" : "it") +
                 unnamed_note(op, differing_external);
    if (!changed_between.empty())
      f.cause += "; input " + slot_list(changed_between) +
                 " differs although the op that produced it matches (changed in between by something the dump does not show)";
    const std::string precision = lowers_precision_alone(c) ? precision_change_text(op) : "";
    if (!precision.empty()) f.cause += "; " + precision;
    const std::optional<std::vector<ArgumentDifference>> arguments = argument_differences(op);
    if (arguments && !arguments->empty()) {
      f.cause += "; argument";
      for (size_t i = 0; i < arguments->size(); ++i) f.cause += (i ? ", " : " ") + (*arguments)[i].text;
      f.cause += " (its recorded arguments differ)";
    }
    const bool arguments_differ = arguments && !arguments->empty();
    if (differing_external.empty() && changed_between.empty() && grown_from < 0 && precision.empty()) {
      if (no_inputs_known) f.cause += "; its inputs were not dumped";
      else if (op.exec) f.cause += "; every input produced by a dumped op matches";
      else f.cause += "; its dumped inputs match";
      if (!unknown_external.empty())
        f.cause += "; " + inputs_text(op, unknown_external) + " came from no dumped op and " +
                   (unknown_external.size() > 1 ? "were" : "was") + " not dumped" + unnamed_note(op, unknown_external);
      else if (!no_inputs_known && !arguments_differ && inputs_identical(op) && arguments)
        f.cause += " bit for bit, and so do its recorded arguments: a kernel difference (the two sides compute this op differently)";
      else if (op.exec && !no_inputs_known && !arguments_differ)
        f.cause += " (so a constant, setting or computation of the op itself differs)";
    }
    f.source = find_source_line(*rows_[op.first_row].target);
    reaches_from(c);
    return true;
  }

  // ---- precision (precision.h) -----------------------------------------------------------------

  // The cross-replay of op `c` (nullopt: none was possible), once per op.
  const std::optional<CrossCheck>& cross_check(size_t c) {
    auto cached = cross_checks_.find(c);
    if (cached != cross_checks_.end()) return cached->second;
    std::optional<CrossCheck>& check = cross_checks_[c];
    const Op& op = target_.ops[c];
    const DumpEntry* reference = nullptr;
    std::map<uint32_t, const DumpEntry*> inputs, outputs;
    for (const auto& [slot, r] : op.input_rows) {
      inputs[slot] = rows_[r].target;
      if (!reference) reference = rows_[r].reference;
    }
    for (const auto& [slot, r] : op.output_rows) {
      outputs[slot] = rows_[r].target;
      if (!reference) reference = rows_[r].reference;
    }
    if (cross_replay_ && reference && !outputs.empty()) check = cross_replay_(inputs, outputs, *reference);
    return check;
  }

  // The largest relative error of the rows that failed among an op's outputs.
  double output_error(const Op& op) const {
    double e = 0;
    for (const auto& [slot, r] : op.output_rows)
      if (rows_[r].compared) e = std::max(e, row_error(rows_[r]));
    return e;
  }

  // The rows of an op's inputs: their own rows, or the rows of the outputs that produced them.
  std::vector<size_t> input_rows_of(const Op& op) const {
    std::vector<size_t> out;
    for (const auto& [slot, r] : op.input_rows) out.push_back(r);
    if (op.exec)
      for (size_t s = 0; s < op.exec->inputs.size(); ++s) {
        if (op.input_rows.count(static_cast<uint32_t>(s))) continue;
        if (const int64_t row = input_row(op, static_cast<uint32_t>(s)); row >= 0) out.push_back(static_cast<size_t>(row));
      }
    return out;
  }

  // The relative error an op's inputs carry: what their rows measured, and, from statistics, the rounding
  // they may hide.
  struct InputError {
    double measured = 0;  // the largest relative error among the inputs' rows (0 when none was compared)
    double hidden = 0;    // the part of a coarser dtype's rounding that statistics may hide, as this op passes it on
    double largest() const { return std::max(measured, hidden); }
  };

  // Statistics (max, min, mean, norm) hide most of an elementwise rounding error: a statistics row held
  // in two precisions counts as carrying at least the coarser one's rounding (its norm bounds the error
  // from below), except where the op normalizes: its output's size cannot grow with what the input
  // hides. An op that selects or averages its input's elements passes that rounding on at most
  // kHiddenErrorPassedOn times, not kErrorGrowth times: it counts that share of the floor. A norm's
  // relative difference is about the elementwise error over the square root of the elements when the
  // error is noise, so an input larger than the op's output (a linear layer's 512 features to 10
  // classes, a pooling) shows a smaller part of its error than the output does: it counts that many
  // times more, as the output would see it.
  InputError input_errors(const Op& op) const {
    InputError e;
    const uint64_t out_elements = largest_output_elements(op);
    const bool normalizes = op_kinds::normalizes(op.op_type);
    const double hidden_share = op_kinds::selects_or_averages(op.op_type) ? kHiddenErrorPassedOn / kErrorGrowth : 1.0;
    for (size_t r : input_rows_of(op)) {
      const CompareRow& row = rows_[r];
      if (!row.compared) continue;
      double error = row_error(row);
      if (row.statistics_only && out_elements > 0 && row.entry().shape_known) {
        const uint64_t elements = shape_numel(row.entry().shape);
        if (elements > out_elements) error *= std::sqrt(static_cast<double>(elements) / static_cast<double>(out_elements));
      }
      e.measured = std::max(e.measured, error);
      if (row.statistics_only && row.target_precision != row.reference_precision && !normalizes)
        e.hidden = std::max(e.hidden, precision_floor(row) * hidden_share);
    }
    return e;
  }
  double input_error(const Op& op) const { return input_errors(op).largest(); }

  // The row of an op's input at `slot`: its own, or the output row of the op that produced it (-1: none).
  int64_t input_row(const Op& op, uint32_t slot) const {
    if (auto in = op.input_rows.find(slot); in != op.input_rows.end()) return static_cast<int64_t>(in->second);
    if (!op.exec || slot >= op.exec->inputs.size() || !op.exec->inputs[slot]) return -1;
    const int64_t p = target_.producer(op, slot);
    return p < 0 ? -1 : target_.output_row(target_.ops[static_cast<size_t>(p)], op.exec->inputs[slot]);
  }

  // From statistics: an extreme of an op's output that is its input's, mapped by a monotone function of
  // slope at most 1 (op_kinds::extremes_kept), moves between the two sides at most as far as the input's
  // did (kHiddenErrorPassedOn times, with the output's rounding). What moved further, said for the
  // cause ("its output's min moved by 0.25 where its input's moved by 0.0017: ..."); empty otherwise.
  std::string extreme_moved(const Op& op) const {
    const op_kinds::ExtremesKept kept = op_kinds::extremes_kept(op.op_type);
    if (kept == op_kinds::ExtremesKept::None) return "";
    const int64_t in = input_row(op, 0);
    const auto out = op.output_rows.find(0);
    if (in < 0 || out == op.output_rows.end()) return "";
    const CompareRow& x = rows_[static_cast<size_t>(in)];
    const CompareRow& y = rows_[out->second];
    if (!x.compared || !y.compared || !x.statistics_only || !y.statistics_only || !y.reference ||
        !y.reference->stats)
      return "";
    const double floor = precision_floor(y);
    for (const StatIndex i : {kStatMax, kStatMin}) {
      if ((i == kStatMax && kept == op_kinds::ExtremesKept::Min) || (i == kStatMin && kept == op_kinds::ExtremesKept::Max))
        continue;
      if (!x.stat_compared[i] || !y.stat_compared[i]) continue;
      const std::optional<double>& kept_value = i == kStatMax ? y.reference->stats->max : y.reference->stats->min;
      if (!kept_value || !std::isfinite(x.stat_diff[i]) || !std::isfinite(y.stat_diff[i])) continue;
      const double allowed = kHiddenErrorPassedOn * std::fabs(x.stat_diff[i]) + floor * std::fabs(*kept_value);
      if (std::fabs(y.stat_diff[i]) > allowed) {
        const char* which = i == kStatMax ? "max" : "min";
        return std::string("its output's ") + which + " moved by " + number(std::fabs(y.stat_diff[i])) +
               " where its input's moved by " + number(std::fabs(x.stat_diff[i])) + ": " + op.op_type +
               " keeps its input's " + which + " (mapped by a monotone function of slope at most 1) on each side";
      }
    }
    return "";
  }

  // Where an op that selects or averages its input's elements was judged by the rounding its inputs'
  // statistics may hide: the cause says so (that error is counted at its share, not measured).
  std::string hidden_rounding_note(const Op& op) const {
    const InputError e = input_errors(op);
    if (e.hidden <= e.measured || !op_kinds::selects_or_averages(op.op_type)) return "";
    return "; their statistics may hide their dtype's rounding, which an op that selects or averages elements "
           "passes on at most " + number(kHiddenErrorPassedOn) + "x: counted as " + number(e.hidden);
  }

  // The element count of an op's largest output whose shape is known (0: none).
  uint64_t largest_output_elements(const Op& op) const {
    uint64_t n = 0;
    for (const auto& [slot, r] : op.output_rows)
      if (rows_[r].entry().shape_known) n = std::max(n, shape_numel(rows_[r].entry().shape));
    return n;
  }

  // Whether a parameter or buffer (a named input) differs at this op or an earlier one of its rank and
  // iteration beyond its dtypes' rounding: from there on, activations carry what an earlier step's
  // rounding did to the parameters, which statistics cannot tell from an op's own error. (A parameter
  // held in a lower precision on one side, and no more apart than that precision's rounding, is the
  // stack's own rounding: input_error counts it as that precision's floor.)
  bool parameters_differ_by(const Op& op) {
    named_differences_.build(target_.ops, [&](const Op& o) {
      if (!o.exec) return false;
      for (const auto& [slot, r] : o.input_rows)
        if (differs(rows_[r]) && !input_name(o, slot).empty()) return true;
      return false;
    });
    return named_differences_.at_or_before(op);
  }

  // Whether a random op (dropout) ran before this one in its rank and iteration whose statistics moved
  // beyond what its inputs' error explains: the two sides drew otherwise, and every activation after
  // it differs by what it drew. Statistics keep their size through that (a layer norm's output keeps
  // its norm while its values moved), so the next op's growth would be the draws', not its own.
  bool drawn_otherwise_before(const Op& op) {
    drawn_otherwise_.build(target_.ops, [&](const Op& o) {
      if (!o.exec || !op_kinds::draws_random(o.op_type) || !statistics_only(o) || !o.output_failed(rows_)) return false;
      return adds_error(static_cast<size_t>(&o - target_.ops.data()), input_error(o));
    });
    return drawn_otherwise_.before(op);
  }

  // Whether every input of the op was compared and is the same bit for bit on both sides.
  bool inputs_identical(const Op& op) const {
    const std::vector<size_t> rows = input_rows_of(op);
    if (rows.empty()) return false;
    for (size_t r : rows) {
      const CompareRow& row = rows_[r];
      if (!row.compared || row.verdict != Verdict::Pass || row.statistics_only || row.metrics.max_abs_err != 0) return false;
    }
    return true;
  }

  // Whether every compared output row of an op compares statistics.
  bool statistics_only(const Op& op) const {
    bool any = false;
    for (const auto& [slot, r] : op.output_rows) {
      if (!rows_[r].compared) continue;
      if (!rows_[r].statistics_only) return false;
      any = true;
    }
    return any;
  }

  // The coarsest dtype an op's outputs hold, on either side: the precision it computes in.
  DType output_precision(const Op& op) const {
    DType p = DType::Float64;
    for (const auto& [slot, r] : op.output_rows)
      p = coarser_dtype(p, row_precision(rows_[r]));
    return p;
  }

  // Whether the op's output error exceeds what its inputs' error grows into (kErrorGrowth times)
  // plus the rounding of the precision it computes in.
  bool adds_error(size_t c, double in_error) const {
    const Op& op = target_.ops[c];
    const double floor = kPrecisionFloorEps * dtype_epsilon(output_precision(op));
    return output_error(op) > kErrorGrowth * in_error + floor;
  }

  // The target holds a row in a coarser dtype than the reference.
  bool coarse(size_t r) const {
    const CompareRow& row = rows_[r];
    return row.target && row.reference && dtype_epsilon(row.target_precision) > dtype_epsilon(row.reference_precision);
  }

  // Whether the target lowers the precision at this op (its output is coarser than the reference's
  // while no input brought that precision from an earlier op: its inputs are the reference's, or were
  // cast just before it) and other ops of its type compute at the reference's precision: a change of
  // this op, where a stack that lowers every op of a type (autocast, a float16 model) is not.
  bool lowers_precision_alone(size_t c) {
    auto cached = lowers_alone_.find(c);
    if (cached != lowers_alone_.end()) return cached->second;
    const Op& op = target_.ops[c];
    // Every floating output coarser: an op that computes in bfloat16 writes all of them so, where a
    // float32 output whose values happen to fit in bfloat16 (a bias gradient summing a few dyadic
    // numbers) is one of several.
    bool lowers = false, all_coarse = true;
    for (const auto& [slot, r] : op.output_rows) {
      if (!rows_[r].compared || dtype_epsilon(rows_[r].reference_precision) == 0) continue;
      lowers |= coarse(r);
      all_coarse &= coarse(r);
    }
    lowers &= all_coarse;
    if (lowers && op.exec)
      for (size_t s = 0; s < op.exec->inputs.size() && lowers; ++s) {
        const int64_t p = op.exec->inputs[s] ? target_.producer(op, s) : -1;
        // In backward, an input the op read at the coarser precision from an op both sides ran: autograd
        // cast it in between (the gradient of autocast's cast, which no dumped op shows), so the precision
        // came with the forward's (a gru's bfloat16 weight copies, their gradients summed by the engine in
        // bfloat16). In forward such a cast is the model's own, just before the op: a precision lowered here.
        const auto in = op.input_rows.find(static_cast<uint32_t>(s));
        if (op.backward() && in != op.input_rows.end() && coarse(in->second) && p >= 0 &&
            target_.ops[static_cast<size_t>(p)].matched)
          lowers = false;
        if (p < 0) continue;
        const int64_t row = target_.output_row(target_.ops[static_cast<size_t>(p)], op.exec->inputs[s]);
        if (row >= 0 && coarse(static_cast<size_t>(row))) lowers = false;  // the precision came with this input
      }
    else if (lowers)
      for (const auto& [slot, r] : op.input_rows) lowers &= !coarse(r);
    const bool alone = lowers && full_precision_types().count({op.op_type, op.backward()});
    lowers_alone_[c] = alone;
    return alone;
  }

  // The precision the target's stack lowers ops to: the coarsest it holds where the reference holds
  // a finer one (bfloat16 under autocast); float64 where it lowers none.
  DType lowered_precision() {
    if (!lowered_ready_) {
      lowered_ready_ = true;
      for (size_t r = 0; r < rows_.size(); ++r)
        if (rows_[r].compared && coarse(r)) lowered_ = coarser_dtype(lowered_, rows_[r].target_precision);
    }
    return lowered_;
  }

  // Whether op `c`'s outputs, finer than the precision the target's stack lowers ops to, differ by
  // no more than that precision rounds to, because the op is made of ops the stack lowers: a gru
  // under bfloat16 autocast runs its linear layers in bfloat16 and returns float32 (0.4% from the
  // reference's on the same inputs). Where the target recorded the op's arguments, it must have run
  // under such an autocast, and a cross-replay, where one can be run, must find the output right
  // at the precision it computed in (the replay judges such a composite at the autocast's bounds
  // only where PyTorch's own kernel gives otherwise with autocast off).
  bool computed_lower_inside(size_t c) {
    const Op& op = target_.ops[c];
    const DType lowered = lowered_precision();
    if (dtype_epsilon(lowered) <= dtype_epsilon(output_precision(op))) return false;
    const double floor = kPrecisionFloorEps * dtype_epsilon(lowered);
    bool any = false;
    for (const auto& [slot, r] : op.output_rows) {
      if (!rows_[r].failed()) continue;
      if (!rows_[r].compared || row_error(rows_[r]) > floor) return false;
      any = true;
    }
    if (!any) return false;
    const nlohmann::json args = read_kernel_args(*rows_[op.first_row].target);
    if (args.is_object() && args.contains("autocast_cpu")) {
      const auto& autocast = args["autocast_cpu"];
      if (!autocast.is_string()) return false;  // it ran with autocast off: computed at its own dtype
      std::string name = autocast.get<std::string>();
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
      const std::optional<DType> dtype = dtype_from_name(name);
      if (!dtype || dtype_epsilon(*dtype) <= dtype_epsilon(output_precision(op))) return false;
    }
    if (const std::optional<CrossCheck>& check = cross_check(c)) return !check->strays;
    return true;
  }

  // Op types (forward or backward) of which some matched op holds every row at the reference's precision.
  const std::set<std::pair<std::string, bool>>& full_precision_types() {
    if (!full_types_ready_) {
      full_types_ready_ = true;
      for (const Op& op : target_.ops) {
        if (!op.matched) continue;
        bool compared = false, any_float = false, any_coarse = false;
        for (const auto* rows : {&op.input_rows, &op.output_rows})
          for (const auto& [slot, r] : *rows) {
            any_coarse |= coarse(r);
            if (!rows_[r].compared) continue;
            compared = true;
            any_float |= dtype_epsilon(rows_[r].target_precision) > 0;
          }
        if (compared && any_float && !any_coarse) full_types_.insert({op.op_type, op.backward()});
      }
    }
    return full_types_;
  }

  std::string precision_change_text(const Op& op) const {
    DType t = DType::Float64, r = DType::Float64;
    for (const auto& [slot, row] : op.output_rows)
      if (coarse(row)) {
        t = rows_[row].target_precision;
        r = rows_[row].reference_precision;
        break;
      }
    return "it computes in " + std::string(dtype_name(t)) + " here (the reference: " + std::string(dtype_name(r)) +
           ") while other " + op.op_type + " ops of this run compute in " + std::string(dtype_name(r)) +
           ": a precision change at this op";
  }

  // The arguments that differ and that the model decides (not a dtype or device: those a stack decides).
  const std::vector<std::string>& model_arguments(size_t c) {
    auto cached = model_arguments_.find(c);
    if (cached != model_arguments_.end()) return cached->second;
    std::vector<std::string> names;
    if (auto differences = argument_differences(target_.ops[c]))
      for (const auto& d : *differences)
        if (!d.placement) names.push_back(d.name);
    return model_arguments_[c] = std::move(names);
  }

  // Whether input row `row` (tensor `id`) differs by no more than the precision its producer wrote it
  // in: a cast between them (a bfloat16 output read as float32) shows the same rounding in a finer
  // dtype, which statistics cannot tell from a change.
  bool within_producer_precision(const Op& producer, uint64_t id, size_t row) const {
    const int64_t out = target_.output_row(producer, id);
    return out >= 0 && rows_[static_cast<size_t>(out)].within_precision &&
           row_error(rows_[row]) <= precision_floor(rows_[static_cast<size_t>(out)]);
  }

  // Whether some dumped op before `op` on its rank (this iteration or an earlier one) read tensor `id` at
  // a slot for which `pred(reader, slot)` holds.
  template <typename Pred>
  bool earlier_reader(const Op& op, uint64_t id, Pred pred) const {
    if (!op.exec) return false;
    const auto& order = target_.index->order.at(op.rank).ops;
    const auto& dump = target_.dumped.at(op.rank);
    for (size_t i = op.exec_index; i-- > 0;) {
      if (dump[i] < 0) continue;
      const auto& inputs = order[i].inputs;
      for (size_t slot = 0; slot < inputs.size(); ++slot)
        if (inputs[slot] == id && pred(target_.ops[static_cast<size_t>(dump[i])], static_cast<uint32_t>(slot)))
          return true;
    }
    return false;
  }

  // Whether an earlier op of the same rank read tensor `id` while its own rows failed.
  bool read_by_differing_op(const Op& op, uint64_t id) const {
    return earlier_reader(op, id, [&](const Op& reader, uint32_t) {
      for (const auto* rows : {&reader.input_rows, &reader.output_rows})
        for (const auto& [slot, r] : *rows)
          if (rows_[r].failed()) return true;
      return false;
    });
  }

  // Whether an earlier op of the same rank read tensor `id` while its row of it did not fail: the
  // tensor changed in place since, by an op that does not show it (batch_norm updating its running
  // statistics from a batch whose values already differ a little, where its own rows pass).
  bool changed_since_read(const Op& op, uint64_t id) const {
    return earlier_reader(op, id, [&](const Op& reader, uint32_t slot) {
      auto row = reader.input_rows.find(slot);
      return row != reader.input_rows.end() && rows_[row->second].compared && !rows_[row->second].failed();
    });
  }

  // Whether an unnamed input that no executed op produced (`row`, failing) may hold a difference that
  // earlier ops carried to it. In backward it may: autograd saves the results of nested ops, which
  // the dump does not list. A forward op reads such a tensor only as data it was given (a Python
  // number, a tensor built from Python data, a plain attribute of a module), so there it may not
  // when it is a number (a Python number is exact on every stack: a bfloat16 run's scale is the
  // float32 run's), nor when its error is beyond what anything before it on the rank carries
  // (kErrorGrowth times the largest error of an earlier output, plus its own rounding).
  bool may_carry_earlier_differences(const Op& op, const CompareRow& row) {
    if (op.backward()) return true;
    const DumpEntry& t = row.entry();
    if (t.shape_known && t.shape.empty()) return false;
    return row_error(row) <= kErrorGrowth * largest_error_before(op) + precision_floor(row);
  }

  // The largest relative error of an output of an op that ran before `op` on its rank (in an
  // earlier iteration, or earlier in its own).
  double largest_error_before(const Op& op) {
    if (!errors_ready_) {
      errors_ready_ = true;
      for (const Op& o : target_.ops)
        for (const auto& [slot, r] : o.output_rows)
          if (rows_[r].compared) errors_by_rank_[o.rank].push_back({{o.iteration, o.order}, row_error(rows_[r])});
      for (auto& [rank, errors] : errors_by_rank_) {
        std::sort(errors.begin(), errors.end());
        for (size_t i = 1; i < errors.size(); ++i) errors[i].second = std::max(errors[i].second, errors[i - 1].second);
      }
    }
    auto it = errors_by_rank_.find(op.rank);
    if (it == errors_by_rank_.end()) return 0;
    const auto& errors = it->second;
    const auto at = std::lower_bound(errors.begin(), errors.end(), std::make_pair(std::make_pair(op.iteration, op.order), -1.0));
    return at == errors.begin() ? 0 : std::prev(at)->second;
  }

  // Whether an op only one side ran (`side.ops[i]`) gives as its output tensor `id` the values of one
  // of its inputs of that shape, within their rounding (a cast, a copy, a gradient accumulated into
  // zeros), and so do the ops only that side ran before it on that input's path. Each side's own
  // tensors decide, so what the stacks' rounding did before does not hide a change.
  enum class Passes { Yes, No, Unknown };
  Passes passes_values_on(const Side& side, size_t i, uint64_t id, std::set<size_t>& seen) const {
    const Op& op = side.ops[i];
    if (!op.exec || !seen.insert(i).second) return Passes::Unknown;
    const int64_t out = side.output_row(op, id);
    if (out < 0) return Passes::Unknown;
    const bool target = &side == &target_;
    const auto entry = [&](size_t r) { return target ? rows_[r].target : rows_[r].reference; };
    const DumpEntry* result = entry(static_cast<size_t>(out));
    if (!result) return Passes::Unknown;
    bool told = false;
    for (size_t s = 0; s < op.exec->inputs.size(); ++s) {
      auto in = op.input_rows.find(static_cast<uint32_t>(s));
      if (in == op.input_rows.end() || !entry(in->second)) continue;
      const std::optional<Distance> d = distance_between(*result, *entry(in->second));
      if (!d) continue;
      told = true;
      if (d->value > d->floor) continue;
      const int64_t p = side.producer(op, s);
      if (p >= 0 && !side.ops[static_cast<size_t>(p)].matched)
        return passes_values_on(side, static_cast<size_t>(p), op.exec->inputs[s], seen);
      return Passes::Yes;
    }
    return told ? Passes::No : Passes::Unknown;
  }

  // The matched ops whose outputs the ops only `side` ran read, from `unmatched` back along such ops,
  // and the largest relative error of those outputs; nullopt where one is unknown (an op the dump
  // left out, an output not compared). Parameters and data as the step began count as agreeing.
  struct Upstream {
    std::set<size_t> ops;
    double error = 0;
    bool draws = false;  // one of the ops draws random numbers
  };
  std::optional<Upstream> upstream_of(const Side& side, size_t unmatched) const {
    Upstream up;
    std::vector<size_t> todo{unmatched};
    std::set<size_t> seen;
    while (!todo.empty()) {
      const size_t i = todo.back();
      todo.pop_back();
      if (!seen.insert(i).second) continue;
      const Op& op = side.ops[i];
      if (!op.exec) return std::nullopt;
      up.draws |= op_kinds::draws_random(op.op_type);
      for (size_t s = 0; s < op.exec->inputs.size(); ++s) {
        const int64_t p = side.producer(op, s);
        if (p == -2) return std::nullopt;
        if (p < 0) continue;
        const Op& producer = side.ops[static_cast<size_t>(p)];
        if (!producer.matched) {
          todo.push_back(static_cast<size_t>(p));
          continue;
        }
        const int64_t row = side.output_row(producer, op.exec->inputs[s]);
        if (row < 0 || !rows_[static_cast<size_t>(row)].compared) return std::nullopt;
        up.ops.insert(static_cast<size_t>(p));
        up.error = std::max(up.error, row_error(rows_[static_cast<size_t>(row)]));
      }
    }
    return up;
  }

  // Whether the ops only one side ran that give the target's op `c` its input `slot` (`extra`: the
  // target ran them, from `unmatched`; else the reference did, for c's twin) change the values they
  // pass on, amid differences already there. A cast to another dtype, or a gradient accumulated where
  // the other side steals it, passes its values on; an op removed from the model or inserted into it
  // does not.
  // - Inserted or removed: the other side's input comes straight from the twin of a matched op those
  //   ops read. That side's own tensors decide where they show it (passes_values_on); else the error:
  //   the input's is beyond what the errors of the matched outputs those ops read grow into
  //   (kErrorGrowth times), plus its own rounding.
  // - Substituted: the other side too got the input from ops only it ran (PyTorch 2.x's
  //   scaled_dot_product_attention for 1.13's matmuls and softmax, a gradient summed in place under
  //   another name): both compute it, and only the error can say whether they agree.
  // - Otherwise (the graphs differ around it more than that: ops renumbered where the sides run
  //   different ops) nothing is said here (false), and the op's own error is judged.
  bool one_side_changes_values(size_t c, size_t slot, size_t unmatched, bool extra) const {
    const Op& op = target_.ops[c];
    if (op.partner < 0) return false;
    const Op& twin = reference_.ops[static_cast<size_t>(op.partner)];
    const Side& side = extra ? target_ : reference_;
    const Op& consumer = extra ? op : twin;
    const int64_t other = extra ? reference_.producer(twin, slot) : target_.producer(op, slot);
    if (other < 0) return false;
    const std::optional<Upstream> up = upstream_of(side, unmatched);
    if (!up) return false;
    const Side& other_side = extra ? reference_ : target_;
    double upstream = up->error;
    if (!other_side.ops[static_cast<size_t>(other)].matched) {  // substituted
      const std::optional<Upstream> other_up = upstream_of(other_side, static_cast<size_t>(other));
      // Ops that draw random numbers (dropout) on either side: two versions draw otherwise.
      if (!other_up || up->draws || other_up->draws) return false;
      upstream = std::max(upstream, other_up->error);
    } else {
      if (!inserted_between(op, twin, slot, *up, extra, other)) return false;
      std::set<size_t> passed;
      switch (passes_values_on(side, unmatched, consumer.exec->inputs[slot], passed)) {
        case Passes::Yes: return false;
        case Passes::No: return true;
        case Passes::Unknown: break;
      }
    }
    auto in = consumer.input_rows.find(static_cast<uint32_t>(slot));
    if (in == consumer.input_rows.end() || !rows_[in->second].compared) return false;
    const CompareRow& row = rows_[in->second];
    return row_error(row) > kErrorGrowth * upstream + precision_floor(row);
  }

  // Whether the ops only one side ran sit between matched ops and nothing else differs around them:
  // the other side's input `slot` of the twin comes straight from the twin of a matched op they read
  // (`up`; `other` is that producer), and every other input of op and twin comes from twin producers.
  // Where names are renumbered (a side running an extra `add_` shifts every later `add_-opN`), a
  // consumer's twin by name is another op, whose inputs do not pair so.
  bool inserted_between(const Op& op, const Op& twin, size_t slot, const Upstream& up, bool extra, int64_t other) const {
    const bool straight = std::any_of(up.ops.begin(), up.ops.end(), [&](size_t u) {
      return extra ? target_.ops[u].partner == other
                   : target_.ops[static_cast<size_t>(other)].partner == static_cast<int64_t>(u);
    });
    if (!straight || op.exec->inputs.size() != twin.exec->inputs.size()) return false;
    for (size_t t = 0; t < op.exec->inputs.size(); ++t) {
      if (t == slot) continue;
      const int64_t a = target_.producer(op, t), b = reference_.producer(twin, t);
      if ((a >= 0) != (b >= 0) || (a >= 0 && target_.ops[static_cast<size_t>(a)].partner != b)) return false;
    }
    return true;
  }

  // Whether an earlier op of the op's rank and iteration has an output that differs at all.
  bool after_differences(const Op& op) {
    differences_.build(target_.ops, [&](const Op& o) {
      for (const auto& [slot, r] : o.output_rows)
        if (rows_[r].compared && row_error(rows_[r]) > 0) return true;
      return false;
    });
    return differences_.before(op);
  }

  // Without a divergence: what precision the two sides agree to. The coarsest precision that a
  // share of the differing rows hold, not the coarsest of any: a float32 tensor that cancelled to
  // a few ulps (a batch norm's bias gradient) fits in bfloat16 and would name it for a float64 pair.
  void describe_precision() {
    size_t failing = 0;
    std::map<DType, size_t> held;
    double largest = 0;
    for (const CompareRow& r : rows_) {
      if (!r.failed() || !r.compared) continue;
      ++failing;
      ++held[row_precision(r)];
      largest = std::max(largest, row_error(r));
    }
    if (failing == 0 || (result_.within_precision == 0 && grown_.empty())) return;
    DType coarsest = DType::Float64;
    for (const auto& [dtype, rows] : held)
      if (rows * kPrecisionShare >= failing) coarsest = coarser_dtype(coarsest, dtype);
    result_.precision = "outputs agree to " + std::string(dtype_name(coarsest)) + " precision: no op adds error beyond what " +
                        "its dtypes' rounding and its inputs' error explain (" + std::to_string(failing) +
                        " rows differ, " + std::to_string(result_.within_precision) +
                        " of them within their rounding; largest relative error " + number(largest) + ")";
  }

  // The non-tensor arguments the two sides recorded differently for this op (save_kernel_args).
  std::optional<std::vector<ArgumentDifference>> argument_differences(const Op& op) const {
    for (const auto* rows : {&op.input_rows, &op.output_rows})
      for (const auto& [slot, r] : *rows)
        if (rows_[r].target && rows_[r].reference) return differing_arguments(*rows_[r].target, *rows_[r].reference);
    return std::nullopt;
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
        if (!differs(rows_[r]) || slot >= op.exec->inputs.size()) continue;
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
    if (out >= 0) return differs(rows_[static_cast<size_t>(out)]);
    return failing_ids_.count({producer, id}) > 0;
  }

  // An op with a failing input no dumped op produced (or no data flow to tell): a candidate even
  // when its outputs were not dumped.
  bool failing_unexplained_input(size_t c) const {
    const Op& op = target_.ops[c];
    for (const auto& [slot, r] : op.input_rows) {
      if (!differs(rows_[r])) continue;
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
  const CrossReplay& cross_replay_;
  std::map<size_t, std::optional<CrossCheck>> cross_checks_;
  Side target_, reference_;
  std::set<std::pair<size_t, uint64_t>> failing_ids_;  // (target op, tensor id) its readers saw fail
  std::map<size_t, size_t> seen_failing_;              // target op -> a failing input row that shows it
  std::multimap<Fingerprint, std::tuple<uint32_t, int64_t, uint64_t>> outputs_;  // -> (rank, iteration, order)
  std::map<size_t, bool> lowers_alone_;
  std::map<size_t, std::vector<std::string>> model_arguments_;
  std::set<std::pair<std::string, bool>> full_types_;
  bool full_types_ready_ = false;
  FirstOrders differences_;        // ops with an output that differs at all
  FirstOrders named_differences_;  // ops reading a parameter or buffer whose row fails
  FirstOrders drawn_otherwise_;    // random ops whose statistics moved beyond their inputs' error
  // Per rank: ((iteration, order), the largest output error up to that op), in execution order.
  std::map<uint32_t, std::vector<std::pair<std::pair<int64_t, uint64_t>, double>>> errors_by_rank_;
  bool errors_ready_ = false;
  std::set<size_t> grown_;  // candidates whose error their inputs' error grew into
  DType lowered_ = DType::Float64;
  bool lowered_ready_ = false;
};

}  // namespace

void find_first_divergence(CompareResult& result, const CrossReplay& cross_replay) {
  OriginFinder(result, cross_replay).run();
}

}  // namespace opdump::detail
