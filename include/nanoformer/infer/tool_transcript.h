#pragma once
// What a model wrote while it called tools, turn by turn: its own text, a tool's forced answer (the
// chat template's end of the assistant's turn, the tool message, the next assistant turn's opening;
// infer/hermes_tools.h) ending a turn and being no part of any; stop strings matched in its own
// text only. The final answer is the last turn's text after its last </tool_call> (all of it when
// it has none), and empty when the answer was unfinished: it made a call past the turn limit
// (MiniMind's train_agent.py: still calling at its last turn). GRPO's rollouts and the eval
// harness's generations keep one per stream.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nanoformer/infer/stop_criteria.h"
#include "nanoformer/infer/tool_use.h"

namespace nf::infer {

class ToolTranscript {
 public:
  explicit ToolTranscript(std::vector<std::string> stop_strings);

  // The text of a token the stream took: sampled (its own text) or forced (a tool's answer).
  // False once a stop string is complete in the model's own text.
  bool push(std::string_view text, bool forced);
  // A tool turn, as the tool use reports it (before its forced tokens come).
  void record(const ToolTurn& turn);
  // The decoding ended: what the stop strings held back joins the last turn.
  void finish();

  const std::vector<std::string>& turns() const { return turns_; }
  int64_t calls() const { return calls_; }
  // Calls answered with an error (an unknown name, a block that is no call, arguments the tool
  // refuses); calls past the turn limit are not run, and count as neither valid nor invalid.
  int64_t invalid_calls() const { return invalid_; }
  bool unfinished() const { return unfinished_; }
  std::string final_answer() const;

 private:
  std::vector<std::string> stop_strings_;
  StopStringMatcher matcher_;
  std::vector<std::string> turns_{std::string()};
  bool in_answer_ = false;  // inside a tool's forced answer
  int64_t calls_ = 0, invalid_ = 0;
  bool unfinished_ = false;
};

// Whether a tool's answer is an error ({"error": ...}, infer/hermes_tools.h's tool_error).
bool is_tool_error(std::string_view answer);

}  // namespace nf::infer
