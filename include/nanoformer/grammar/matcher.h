#pragma once
// A pushdown matcher of a Grammar over bytes: the set of parse stacks that the bytes so far leave
// alive (llama.cpp's grammar stacks), each stack's top a byte-set element. A byte keeps a stack
// whose top matches it; that stack then moves past the element, returning from every rule that
// ends and expanding every rule that begins, until each new top is a byte set again (or the stack
// is empty: the grammar can end there). Stacks are interned frames (element, parent frame), so a
// stack is one integer, a state is a sorted set of them, and the stacks a stack becomes after its
// byte are computed once per matcher and remembered. A rule called last in an alternative
// returns straight to its caller's caller (a tail call): repetitions (r ::= x r |) keep the stack's
// depth constant, so the states inside a long string or list repeat, and masks cached per state
// (grammar_constraint.h) are reused.
#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "nanoformer/grammar/grammar.h"

namespace nf::grammar {

class GrammarMatcher {
 public:
  using State = std::vector<uint32_t>;  // sorted stack ids; kEnd among them: the grammar can end here
  static constexpr uint32_t kEnd = 0;   // the empty stack

  // Starts at the grammar's root. Throws nf::Error (one line, "grammar: ...") when a step of the
  // grammar reaches more than 2^16 rule positions, a state more than 2^16 stacks, or all stacks
  // together more than 2^20 frames: a budget that bounds the work and memory of every byte.
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

  const State& state() const { return state_; }
  // Back to a state this matcher was in before (its stack ids stay valid: they are never freed).
  void restore(State state) { state_ = std::move(state); }
  // The stacks of `from` after `byte` into `to` (empty: the byte is not allowed there).
  void advance(const State& from, uint8_t byte, State& to);
  // Moves the state past `bytes`; false (the state unchanged) when they leave no stack alive.
  bool accept(std::string_view bytes);
  static bool can_end(const State& s) { return !s.empty() && s.front() == kEnd; }
  // Nothing but the end can follow.
  static bool must_end(const State& s) { return s.size() == 1 && s.front() == kEnd; }
  const Grammar& grammar() const { return *grammar_; }

 private:
  struct Frame {
    uint32_t element;  // a byte set (a stack's top) or, below the top, where to go on after a return
    uint32_t parent;   // the frame below (kEnd: none)
  };
  uint32_t intern(uint32_t element, uint32_t parent);
  // Queues `element` with `parent` below it for expand(), once per expansion (a pair always
  // expands to the same stacks); throws nf::Error past the expansion's budget.
  void visit(uint32_t element, uint32_t parent);
  // Every stack reached from the queued pairs, into out (sorted): iterative, so a grammar's depth
  // never reaches the C++ stack.
  void expand(State& out);
  const State& after(uint32_t stack);  // the stacks `stack` becomes once its top byte is matched

  std::shared_ptr<const Grammar> grammar_;
  std::vector<Frame> frames_;
  std::unordered_map<uint64_t, uint32_t> frame_ids_;
  std::vector<State> after_;
  std::vector<bool> after_known_;
  std::vector<Frame> pending_;             // expand()'s work list
  std::unordered_set<uint64_t> visited_;   // the pairs it has queued
  State state_, scratch_;
};

}  // namespace nf::grammar
