// Automaton (grammar/regex.h): construction, minimization, intersection, complement and queries.
#include <algorithm>
#include <deque>
#include <map>
#include <unordered_map>

#include "nanoformer/core/error.h"
#include "nanoformer/grammar/regex.h"
#include "regex_internal.h"

namespace nf::grammar {

using regex_detail::CodeRange;
using regex_detail::CodeSet;
using regex_detail::Dfa;

Automaton Automaton::regex(std::string_view pattern) {
  if (pattern.size() > kMaxPatternBytes)
    regex_detail::fail(pattern, kMaxPatternBytes, "a pattern over " + std::to_string(kMaxPatternBytes) + " bytes");
  return minimal(regex_detail::subset_construction(regex_detail::parse_pattern(pattern), pattern, kMaxStates));
}

Automaton Automaton::any_string() {
  Dfa dfa{{{}}, {true}};
  for (const CodeRange& r : regex_detail::complemented({})) dfa.edges[0].push_back({r.first, r.second, 0});
  return minimal(dfa);
}

Automaton Automaton::literal(std::string_view utf8) {
  Dfa dfa{{{}}, {false}};
  for (size_t pos = 0; pos < utf8.size();) {
    const size_t at = pos;
    const int32_t c = regex_detail::decode_utf8(utf8, pos);
    NF_CHECK(c >= 0, "regex: a literal with invalid UTF-8 at byte ", at);
    NF_CHECK(dfa.edges.size() < kMaxStates, "regex: a literal of more than ", kMaxStates - 1, " code points");
    const auto next = static_cast<uint32_t>(dfa.edges.size());
    dfa.edges.back().push_back({static_cast<uint32_t>(c), static_cast<uint32_t>(c), next});
    dfa.edges.emplace_back();
    dfa.accepting.push_back(false);
  }
  dfa.accepting.back() = true;
  return minimal(dfa);
}

Automaton Automaton::length(int64_t min, int64_t max) {
  NF_CHECK(min >= 0 && (max < 0 || max >= min), "regex: a bad length range ", min, "..", max);
  // a chain of states counting code points: 0..max, or 0..min with a loop on the last
  const int64_t last = max < 0 ? min : max;
  NF_CHECK(last < static_cast<int64_t>(kMaxStates), "regex: length ", min, "..", max, " needs more than ", kMaxStates, " states");
  Dfa dfa;
  const CodeSet every = regex_detail::complemented({});
  for (int64_t i = 0; i <= last; ++i) {
    dfa.accepting.push_back(i >= min);
    dfa.edges.emplace_back();
    const auto target = static_cast<uint32_t>(i < last ? i + 1 : i);
    if (i < last || max < 0)
      for (const CodeRange& r : every) dfa.edges.back().push_back({r.first, r.second, target});
  }
  return minimal(dfa);
}

Automaton Automaton::intersect(const Automaton& other) const {
  // the product automaton, built breadth-first from the pair of starts
  std::unordered_map<uint64_t, uint32_t> ids;
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  Dfa dfa;
  const auto id_of = [&](uint32_t a, uint32_t b) {
    const auto [it, added] = ids.try_emplace((uint64_t{a} << 32) | b, static_cast<uint32_t>(pairs.size()));
    if (added) {
      NF_CHECK(pairs.size() < kMaxStates, "regex: the intersection of automata of ", states(), " and ", other.states(),
               " states has more than ", kMaxStates, " states");
      pairs.emplace_back(a, b);
      dfa.edges.emplace_back();
      dfa.accepting.push_back(accepting_[a] && other.accepting_[b]);
    }
    return it->second;
  };
  id_of(0, 0);
  for (size_t id = 0; id < pairs.size(); ++id) {
    const auto& mine = transitions_[pairs[id].first];
    const auto& theirs = other.transitions_[pairs[id].second];
    for (size_t i = 0, j = 0; i < mine.size() && j < theirs.size();) {
      const uint32_t first = std::max(mine[i].first, theirs[j].first), last = std::min(mine[i].last, theirs[j].last);
      if (first <= last) {
        const uint32_t target = id_of(mine[i].target, theirs[j].target);
        dfa.edges[id].push_back({first, last, target});
      }
      (mine[i].last < theirs[j].last) ? ++i : ++j;
    }
  }
  return minimal(dfa);
}

Automaton Automaton::complement() const {
  // complete the automaton with a dead state taking every missing code point, then swap accepting
  Dfa dfa;
  const auto dead = static_cast<uint32_t>(states());
  for (size_t s = 0; s <= dead; ++s) {
    dfa.edges.emplace_back();
    CodeSet present;
    if (s < dead)
      for (const Transition& t : transitions_[s]) {
        dfa.edges.back().push_back({t.first, t.last, t.target});
        present.emplace_back(t.first, t.last);
      }
    for (const CodeRange& r : regex_detail::complemented(present)) dfa.edges.back().push_back({r.first, r.second, dead});
    std::sort(dfa.edges.back().begin(), dfa.edges.back().end(), [](const Dfa::Edge& a, const Dfa::Edge& b) { return a.first < b.first; });
    dfa.accepting.push_back(s == dead || !accepting_[s]);
  }
  Automaton out = minimal(dfa);
  NF_CHECK(out.states() <= kMaxStates, "regex: the complement of an automaton of ", states(), " states has more than ", kMaxStates, " states");
  return out;
}

bool Automaton::empty() const { return states() == 1 && !accepting_[0] && transitions_[0].empty(); }

bool Automaton::matches(std::string_view utf8) const {
  uint32_t state = 0;
  for (size_t pos = 0; pos < utf8.size();) {
    const int32_t c = regex_detail::decode_utf8(utf8, pos);
    if (c < 0) return false;
    const auto& ts = transitions_[state];
    // the last transition starting at or before c
    const auto it = std::upper_bound(ts.begin(), ts.end(), static_cast<uint32_t>(c), [](uint32_t v, const Transition& t) { return v < t.first; });
    if (it == ts.begin() || std::prev(it)->last < static_cast<uint32_t>(c)) return false;
    state = std::prev(it)->target;
  }
  return accepting_[state];
}

int64_t Automaton::min_length() const {
  if (empty()) return -1;
  // breadth-first distances from the start; the first accepting state reached is the nearest
  std::vector<int64_t> distance(states(), -1);
  std::deque<uint32_t> queue{0};
  distance[0] = 0;
  while (!queue.empty()) {
    const uint32_t s = queue.front();
    queue.pop_front();
    if (accepting_[s]) return distance[s];
    for (const Transition& t : transitions_[s])
      if (distance[t.target] < 0) distance[t.target] = distance[s] + 1, queue.push_back(t.target);
  }
  return -1;
}

int64_t Automaton::max_length() const {
  if (empty()) return -1;
  // every state reaches an accepting one (minimal() trims), so a cycle means no bound; else the
  // longest path in topological order (Kahn): longest[t] = max(longest[s] + 1) over edges s -> t
  std::vector<uint32_t> indegree(states(), 0);
  for (const auto& ts : transitions_)
    for (const Transition& t : ts) ++indegree[t.target];
  std::vector<uint32_t> ready{0};
  std::vector<int64_t> longest(states(), 0);
  int64_t most = -1;
  size_t done = 0;
  while (!ready.empty()) {
    const uint32_t s = ready.back();
    ready.pop_back();
    ++done;
    if (accepting_[s]) most = std::max(most, longest[s]);
    for (const Transition& t : transitions_[s]) {
      longest[t.target] = std::max(longest[t.target], longest[s] + 1);
      if (--indegree[t.target] == 0) ready.push_back(t.target);
    }
  }
  return done == states() ? most : -1;
}

Automaton Automaton::minimal(const Dfa& dfa) {
  const size_t n = dfa.edges.size();
  // keep: reachable from the start and able to reach an accepting state
  std::vector<std::vector<uint32_t>> sources(n);
  for (size_t s = 0; s < n; ++s)
    for (const Dfa::Edge& e : dfa.edges[s]) sources[e.target].push_back(static_cast<uint32_t>(s));
  std::vector<bool> live(n, false), keep(n, false);
  std::vector<uint32_t> stack;
  for (size_t s = 0; s < n; ++s)
    if (dfa.accepting[s]) live[s] = true, stack.push_back(static_cast<uint32_t>(s));
  while (!stack.empty()) {
    const uint32_t s = stack.back();
    stack.pop_back();
    for (const uint32_t from : sources[s])
      if (!live[from]) live[from] = true, stack.push_back(from);
  }
  if (!live[0]) return Automaton();  // the empty language: one dead state
  keep[0] = true;
  stack.push_back(0);
  while (!stack.empty()) {
    const uint32_t s = stack.back();
    stack.pop_back();
    for (const Dfa::Edge& e : dfa.edges[s])
      if (live[e.target] && !keep[e.target]) keep[e.target] = true, stack.push_back(e.target);
  }
  // Hopcroft's refinement (Hopcroft 1971; over code point ranges as in Veanes et al., "Minimization
  // of Symbolic Automata", POPL 2014): start from {accepting, the rest} (the missing dead state is
  // a class of its own); a splitter class B splits every class X whose states differ in the code
  // points leading into B. Of a split class, the new parts become splitters (the largest keeps X's
  // place), so each state is in O(log n) splitters.
  std::vector<uint32_t> cls(n, 0);
  std::vector<std::vector<uint32_t>> members(2);
  for (size_t s = 0; s < n; ++s)
    if (keep[s]) cls[s] = dfa.accepting[s] ? 1 : 0, members[cls[s]].push_back(static_cast<uint32_t>(s));
  if (members[0].empty()) std::swap(members[0], members[1]), std::fill(cls.begin(), cls.end(), 0);
  if (members[1].empty()) members.pop_back();
  std::vector<uint32_t> splitters;
  for (uint32_t b = 0; b < members.size(); ++b) splitters.push_back(b);
  std::vector<uint32_t> in_splitter(n, 0), view_stamp(n, 0);  // marks, stamped per splitter
  std::vector<std::vector<uint32_t>> views(n);  // per predecessor: the ranges leading into the splitter
  for (uint32_t stamp = 1; !splitters.empty(); ++stamp) {
    const uint32_t b = splitters.back();
    splitters.pop_back();
    for (const uint32_t t : members[b]) in_splitter[t] = stamp;
    std::map<uint32_t, std::vector<uint32_t>> touched;  // class -> its predecessors of B
    for (const uint32_t t : members[b])
      for (const uint32_t s : sources[t]) {
        if (!keep[s] || view_stamp[s] == stamp) continue;
        view_stamp[s] = stamp;
        std::vector<uint32_t>& view = views[s];
        view.clear();
        for (const Dfa::Edge& e : dfa.edges[s]) {
          if (in_splitter[e.target] != stamp) continue;
          if (!view.empty() && regex_detail::next_code_point(view.back()) == e.first) view.back() = e.last;
          else view.insert(view.end(), {e.first, e.last});
        }
        touched[cls[s]].push_back(s);
      }
    for (auto& [x, predecessors] : touched) {
      std::map<std::vector<uint32_t>, std::vector<uint32_t>> parts;  // by view; states outside: the empty view
      for (const uint32_t s : predecessors) parts[views[s]].push_back(s);
      if (predecessors.size() < members[x].size())
        for (const uint32_t s : members[x])
          if (view_stamp[s] != stamp) parts[{}].push_back(s);
      if (parts.size() == 1) continue;
      auto largest = parts.begin();
      for (auto it = parts.begin(); it != parts.end(); ++it)
        if (it->second.size() > largest->second.size()) largest = it;
      members[x] = std::move(largest->second);
      for (auto it = parts.begin(); it != parts.end(); ++it) {
        if (it == largest) continue;
        const auto id = static_cast<uint32_t>(members.size());
        for (const uint32_t s : it->second) cls[s] = id;
        members.push_back(std::move(it->second));
        splitters.push_back(id);
      }
    }
  }
  const size_t classes = members.size();
  // a state's moves as (first, last, class) runs, adjacent ranges to one class merged
  const auto runs = [&](size_t s, std::vector<uint32_t>& sig) {
    for (const Dfa::Edge& e : dfa.edges[s]) {
      if (!keep[e.target]) continue;
      const size_t k = sig.size();
      if (k >= 3 && sig[k - 1] == cls[e.target] && regex_detail::next_code_point(sig[k - 2]) == e.first) sig[k - 2] = e.last;
      else sig.insert(sig.end(), {e.first, e.last, cls[e.target]});
    }
  };
  // one state per class, numbered breadth-first from the start's
  Automaton out;
  out.transitions_.clear();
  out.accepting_.clear();
  std::vector<int64_t> number(classes, -1);
  std::vector<uint32_t> representative;
  number[cls[0]] = 0;
  representative.push_back(0);
  for (size_t i = 0; i < representative.size(); ++i) {
    const uint32_t s = representative[i];
    std::vector<uint32_t> sig;
    runs(s, sig);
    out.transitions_.emplace_back();
    out.accepting_.push_back(dfa.accepting[s]);
    for (size_t k = 0; k < sig.size(); k += 3) {
      const uint32_t c = sig[k + 2];
      if (number[c] < 0) {
        number[c] = static_cast<int64_t>(representative.size());
        representative.push_back(members[c][0]);
      }
      out.transitions_.back().push_back({sig[k], sig[k + 1], static_cast<uint32_t>(number[c])});
    }
  }
  return out;
}

}  // namespace nf::grammar
