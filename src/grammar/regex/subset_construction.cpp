// The subset construction (Rabin & Scott, "Finite Automata and Their Decision Problems", 1959) of a
// pattern's Thompson automaton over code point ranges: each deterministic state is a set of
// automaton states, its moves the elementary ranges where the members' edges begin and end.
#include <algorithm>
#include <map>

#include "regex_internal.h"

namespace nf::grammar::regex_detail {
namespace {

// The steps (automaton states visited by closures, edges sorted into ranges) the construction may
// take: bounds its time and memory where few deterministic states hold many automaton states each
// (^(.{0,500}){60}$ would take a minute and 2 GB before reaching the state budget).
// JSONSchemaBench's patterns take at most 3.1 million (an unanchored alternation of 150 names).
constexpr size_t kMaxSteps = size_t{1} << 24;

class SubsetConstruction {
 public:
  SubsetConstruction(const Nfa& nfa, std::string_view pattern, size_t max_states)
      : nfa_(nfa), pattern_(pattern), max_states_(max_states), seen_(nfa.states.size(), 0) {}

  Dfa run() {
    // the start: before any code point, where ^ holds (it gets its own state: ^ holds nowhere else)
    start_ = closure({nfa_.start}, /*at_start=*/true);
    sets_.push_back(&start_);
    dfa_.edges.emplace_back();
    for (size_t id = 0; id < sets_.size(); ++id) {
      dfa_.accepting.push_back(accepts(*sets_[id], id == 0));
      add_edges(static_cast<uint32_t>(id));
    }
    return std::move(dfa_);
  }

 private:
  // The states reachable from `seeds` by empty moves, ^'s moves when at_start, $'s when at_end;
  // sorted. A set holding the pattern's accepting state (which loops on every code point) accepts
  // every continuation: it becomes that state alone.
  std::vector<uint32_t> closure(std::vector<uint32_t> seeds, bool at_start, bool at_end = false) {
    ++stamp_;
    std::vector<uint32_t> out, stack = std::move(seeds);
    while (!stack.empty()) {
      const uint32_t s = stack.back();
      stack.pop_back();
      if (seen_[s] == stamp_) continue;
      seen_[s] = stamp_;
      step(1 + nfa_.states[s].moves.size());
      out.push_back(s);
      for (const auto& [target, move] : nfa_.states[s].moves)
        if (move == Nfa::Move::empty || (move == Nfa::Move::begin && at_start) || (move == Nfa::Move::end && at_end))
          stack.push_back(target);
    }
    if (!at_end && seen_[nfa_.accept] == stamp_) return {nfa_.accept};
    std::sort(out.begin(), out.end());
    return out;
  }

  // Whether the input may end here: the accepting state within reach once $ holds.
  bool accepts(const std::vector<uint32_t>& set, bool at_start) {
    const std::vector<uint32_t> reach = closure(set, at_start, /*at_end=*/true);
    return std::binary_search(reach.begin(), reach.end(), nfa_.accept);
  }

  uint32_t state_of(std::vector<uint32_t> set) {
    const auto [it, added] = ids_.try_emplace(std::move(set), static_cast<uint32_t>(sets_.size()));
    if (added) {
      if (sets_.size() >= max_states_) fail(pattern_, 0, "an automaton over " + std::to_string(max_states_) + " states");
      sets_.push_back(&it->first);
      dfa_.edges.emplace_back();
    }
    return it->second;
  }

  void add_edges(uint32_t id) {
    // the elementary ranges: [bounds[i], bounds[i + 1] - 1], each wholly inside or outside every edge
    std::vector<uint32_t> bounds;
    for (const uint32_t s : *sets_[id])
      for (const Nfa::Edge& e : nfa_.states[s].edges) bounds.insert(bounds.end(), {e.first, e.last + 1});
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    if (bounds.empty()) return;
    std::vector<std::vector<uint32_t>> targets(bounds.size() - 1);
    for (const uint32_t s : *sets_[id])
      for (const Nfa::Edge& e : nfa_.states[s].edges)
        for (auto i = static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), e.first) - bounds.begin()); bounds[i] <= e.last; ++i) {
          targets[i].push_back(e.target);
          step(1);
        }
    for (size_t i = 0; i < targets.size(); ++i) {
      if (targets[i].empty()) continue;
      const uint32_t target = state_of(closure(std::move(targets[i]), false));
      std::vector<Dfa::Edge>& edges = dfa_.edges[id];  // after state_of, which may grow dfa_.edges
      if (!edges.empty() && edges.back().target == target && edges.back().last + 1 == bounds[i]) edges.back().last = bounds[i + 1] - 1;
      else edges.push_back({bounds[i], bounds[i + 1] - 1, target});
    }
  }

  void step(size_t count) {
    steps_ += count;
    if (steps_ > kMaxSteps) fail(pattern_, 0, "an automaton over " + std::to_string(kMaxSteps) + " steps to build");
  }

  const Nfa& nfa_;
  std::string_view pattern_;
  size_t steps_ = 0;
  size_t max_states_;
  std::vector<uint32_t> seen_;  // closure()'s marks: seen in the closure stamped so
  uint32_t stamp_ = 0;
  std::vector<uint32_t> start_;                         // the start's automaton states
  std::vector<const std::vector<uint32_t>*> sets_;  // per deterministic state, its automaton states (ids_'s keys but the start's)
  std::map<std::vector<uint32_t>, uint32_t> ids_;
  Dfa dfa_;
};

}  // namespace

Dfa subset_construction(const Nfa& nfa, std::string_view pattern, size_t max_states) {
  return SubsetConstruction(nfa, pattern, max_states).run();
}

}  // namespace nf::grammar::regex_detail
