// Interned parse stacks of a byte grammar (grammar/matcher.h).
#include "nanoformer/grammar/matcher.h"

#include <algorithm>

#include "nanoformer/core/error.h"

namespace nf::grammar {
namespace {

constexpr size_t kMaxFrames = size_t{1} << 20;     // a grammar whose stacks keep growing is refused here
constexpr size_t kMaxExpansion = size_t{1} << 16;  // (element, parent) pairs one expansion may visit
constexpr size_t kMaxStacks = size_t{1} << 16;     // stacks one state may hold

void sort_unique(GrammarMatcher::State& s) {
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  frames_.push_back({0, kEnd});  // id 0: the empty stack
  after_.emplace_back();
  after_known_.push_back(true);
  for (const uint32_t start : grammar_->alternatives[grammar_->root]) visit(start, kEnd);
  expand(state_);
}

uint32_t GrammarMatcher::intern(uint32_t element, uint32_t parent) {
  const uint64_t key = (static_cast<uint64_t>(element) << 32) | parent;
  const auto [it, added] = frame_ids_.try_emplace(key, static_cast<uint32_t>(frames_.size()));
  if (added) {
    NF_CHECK(frames_.size() < kMaxFrames, "grammar: the parse stacks exceed ", kMaxFrames,
             " frames (the grammar nests too deeply or is too ambiguous)");
    frames_.push_back({element, parent});
    after_.emplace_back();
    after_known_.push_back(false);
  }
  return it->second;
}

void GrammarMatcher::visit(uint32_t element, uint32_t parent) {
  if (!visited_.insert((static_cast<uint64_t>(element) << 32) | parent).second) return;
  if (visited_.size() > kMaxExpansion) {  // the matcher stays usable: the next expansion starts clean
    visited_.clear();
    pending_.clear();
    NF_FAIL("grammar: one step of the grammar reaches more than ", kMaxExpansion,
            " rule positions (it nests too deeply or is too ambiguous)");
  }
  pending_.push_back({element, parent});
}

void GrammarMatcher::expand(State& out) {
  while (!pending_.empty()) {
    const Frame at = pending_.back();
    pending_.pop_back();
    const Grammar::Element& e = grammar_->elements[at.element];
    switch (e.kind) {
      case Grammar::Kind::bytes:
        out.push_back(intern(at.element, at.parent));
        break;
      case Grammar::Kind::end:  // the rule is done: go on in the caller
        if (at.parent == kEnd) {
          out.push_back(kEnd);
        } else {
          const Frame caller = frames_[at.parent];
          visit(caller.element, caller.parent);
        }
        break;
      case Grammar::Kind::rule: {
        // where to go on after it; a call last in its alternative returns straight to the caller's caller
        const bool tail = grammar_->elements[at.element + 1].kind == Grammar::Kind::end;
        const uint32_t back = tail ? at.parent : intern(at.element + 1, at.parent);
        for (const uint32_t start : grammar_->alternatives[e.value]) visit(start, back);
        break;
      }
    }
  }
  visited_.clear();
  sort_unique(out);
}

const GrammarMatcher::State& GrammarMatcher::after(uint32_t stack) {
  if (!after_known_[stack]) {
    State next;
    const Frame top = frames_[stack];
    visit(top.element + 1, top.parent);
    expand(next);
    after_[stack] = std::move(next);  // frames_ and after_ may have grown: index afresh
    after_known_[stack] = true;
  }
  return after_[stack];
}

void GrammarMatcher::advance(const State& from, uint8_t byte, State& to) {
  to.clear();
  for (const uint32_t stack : from) {
    if (stack == kEnd) continue;
    const Grammar::Element& top = grammar_->elements[frames_[stack].element];
    if (!grammar_->byte_sets[top.value].test(byte)) continue;
    const State& next = after(stack);
    to.insert(to.end(), next.begin(), next.end());
  }
  if (to.size() > 1) sort_unique(to);
  NF_CHECK(to.size() <= kMaxStacks, "grammar: a state holds more than ", kMaxStacks,
           " parse stacks (the grammar is too ambiguous)");
}

bool GrammarMatcher::accept(std::string_view bytes) {
  State current = state_;
  for (const char b : bytes) {
    advance(current, static_cast<uint8_t>(b), scratch_);
    if (scratch_.empty()) return false;
    current.swap(scratch_);
  }
  state_ = std::move(current);
  return true;
}

}  // namespace nf::grammar
