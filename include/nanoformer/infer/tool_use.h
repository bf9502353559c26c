#pragma once
// Tools a model calls while it decodes, token by token: after each token a stream takes, its tool
// use sees it and may hand back tokens the stream must take next instead of sampling (forced
// tokens: fed to the model as if it had written them, never sampled, never drafted).
//
// nanochat's calculator (NanochatCalculatorUse), as nanochat's Engine.generate runs it
// (karpathy/nanochat@92d63d4, nanochat/engine.py, RowState and the loop over its rows):
//   <|python_start|>   opens an expression (what came before it of an unclosed one is dropped)
//   any other token    inside one: part of the expression
//   <|python_end|>     closes it: the tokens decoded, evaluated (infer/nanochat_calculator.h), and
//                      when there is an answer, <|output_start|>, encode(answer), <|output_end|>
//                      are forced; an empty expression or no answer forces nothing
// Forced tokens pass through the same state machine: an <|output_start|> ... is not inside an
// expression, so nothing in it is collected (as in engine.py, where a forced token updates the row's
// state like a sampled one).
//
// Tools whose answers are not the model's own text (infer/hermes_tools.h: a `tool` message of the
// chat template) report each turn to on_turn, from inside after(): the calls, their answers, and
// how many forced tokens follow, so that a caller (the CLI, the server) can show the calls and
// answers and leave those tokens out of the model's text. nanochat's calculator reports none: its
// answer is part of the text the model reads and writes.
//
// Answers off the decoding thread (answer_off_thread; off by default). A tool may take seconds (the
// command tool, up to its time limit); the server's scheduler decodes many streams on one thread,
// so it turns this on for each of its streams: a call then runs on a thread of its own, after()
// forces nothing, and the stream waits (answering(): infer/decode_step.h leaves it out of the
// steps while the other streams go on) until take_answer() hands over the tokens to force, which
// are taken as after()'s would have been (one a step). Everything else (generate, chat, eval, GRPO's
// rollouts) keeps the default, calls answered inside after(): their tokens and the order of their
// sampler's draws stay what they were, so seeded runs are reproducible as before. on_turn is told
// on the decoding thread either way (from take_answer(), before its tokens are taken).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nanoformer/infer/tool_answer_bell.h"
#include "nanoformer/infer/tool_call_parser.h"
#include "nanoformer/tokenizer/tokenizer.h"

namespace nf::infer {

struct ToolTurn {
  std::vector<ToolCall> calls;
  std::vector<std::string> answers;  // calls[i]'s; empty when not run (past the turn limit)
  bool ran = true;                   // false: past the turn limit, nothing answered or forced
  int64_t forced = 0;                // tokens forced after this turn (the next ones the stream takes)
};

class ToolUse {
 public:
  virtual ~ToolUse() = default;
  // After the stream took `id` (sampled or forced): the tokens to force next, in order (usually none).
  virtual std::vector<int64_t> after(int64_t id) = 0;
  // A fresh copy for another stream (each stream has its own state; on_turn is not copied, and the
  // copy answers inside after()).
  virtual std::unique_ptr<ToolUse> clone() const = 0;
  // The tools a chat template's prompt offers the model (its `tools`: OpenAI's list of functions,
  // JSON text); empty when the model is not told of them in its prompt (nanochat's calculator).
  virtual std::string offered_tools() const { return {}; }
  // Told of each tool turn (above), on the decoding thread, before its forced tokens are taken.
  std::function<void(const ToolTurn&)> on_turn;

  // From now on, a call runs on a thread of its own that rings `bell` once its answer is ready
  // (above; the bell counts it in flight until then). The thread keeps what it needs (the call, the
  // tools, the bell) alive by itself: a tool use destroyed while its call runs (a client gone)
  // leaves the call to finish within its own limits and its answer unread. A tool use whose
  // answers take no time (nanochat's calculator, this default) keeps answering inside after().
  virtual void answer_off_thread(std::shared_ptr<ToolAnswerBell> /*bell*/) {}
  // A call after() started runs, or its answer is not taken yet: the stream takes no token.
  virtual bool answering() const { return false; }
  // When the call is answered: on_turn told (on the caller's thread) and the tokens to force
  // next, the call's answering over; nullopt while it runs. Rethrows what the call's thread threw.
  virtual std::optional<std::vector<int64_t>> take_answer() { return std::nullopt; }
  // Blocks until the running call is answered (take_answer() then has it); at once when none runs.
  virtual void wait_for_answer() {}
};

class NanochatCalculatorUse : public ToolUse {
 public:
  // The tokenizer must know nanochat's special tokens <|python_start|>, <|python_end|>,
  // <|output_start|> and <|output_end|> (an nf::Error naming the missing one otherwise); it must
  // outlive the tool use.
  explicit NanochatCalculatorUse(const tokenizer::Tokenizer& tokenizer);

  std::vector<int64_t> after(int64_t id) override;
  std::unique_ptr<ToolUse> clone() const override;

 private:
  const tokenizer::Tokenizer& tokenizer_;
  int64_t python_start_, python_end_, output_start_, output_end_;
  bool in_expression_ = false;
  std::vector<int64_t> expression_;
};

}  // namespace nf::infer
