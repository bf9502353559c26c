#pragma once
// A reasoning model's answer split into its reasoning and its reply, as `reasoning_content` and
// `content` (DeepSeek's and Qwen3's API, llama.cpp's --reasoning-format deepseek): the text between
// <think> and </think> is the reasoning, the text after </think> the reply. The answer is in its
// reasoning from the start when it opens with <think> (leading white space aside) or when the
// prompt ended with an opened <think> (a template that forces thinking); without a <think> it is
// all reply. White space right after each tag is dropped; a reasoning never closed stays reasoning.
// Text arrives piece by piece (streamed): a piece that may be the start of a tag is held back until
// it is known, so no part of a tag ever shows.
#include <string>
#include <string_view>

namespace nf::serve {

struct AnswerParts {
  std::string reasoning, content;
};

class ReasoningSplitter {
 public:
  // `opened`: the prompt ended inside a <think> the template opened.
  explicit ReasoningSplitter(bool opened = false);
  // The parts that became final with `text`.
  AnswerParts push(std::string_view text);
  // What was held back, at the end of the answer.
  AnswerParts finish();

 private:
  enum class State { start, reasoning, content };
  AnswerParts drain(bool end);

  State state_;
  bool skip_space_;     // dropping white space after a tag (or before the answer's first text)
  std::string held_;    // not yet given: may be the start of a tag
};

}  // namespace nf::serve
