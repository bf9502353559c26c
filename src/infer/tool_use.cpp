// nanochat's calculator in decoding (infer/tool_use.h): engine.py's RowState machine for one stream.
#include "nanoformer/infer/tool_use.h"

#include <string>

#include "nanoformer/core/error.h"
#include "nanoformer/infer/nanochat_calculator.h"

namespace nf::infer {
namespace {

int64_t special(const tokenizer::Tokenizer& t, const char* name) {
  const std::optional<tokenizer::TokenId> id = t.token_id(name);
  NF_CHECK(id.has_value(), "nanochat's calculator: the tokenizer has no ", name, " token");
  return static_cast<int64_t>(*id);
}

}  // namespace

NanochatCalculatorUse::NanochatCalculatorUse(const tokenizer::Tokenizer& tokenizer)
    : tokenizer_(tokenizer),
      python_start_(special(tokenizer, "<|python_start|>")),
      python_end_(special(tokenizer, "<|python_end|>")),
      output_start_(special(tokenizer, "<|output_start|>")),
      output_end_(special(tokenizer, "<|output_end|>")) {}

std::vector<int64_t> NanochatCalculatorUse::after(int64_t id) {
  if (id == python_start_) {
    in_expression_ = true;
    expression_.clear();
    return {};
  }
  if (id == python_end_ && in_expression_) {
    in_expression_ = false;
    std::vector<int64_t> forced;
    if (!expression_.empty()) {
      const std::vector<tokenizer::TokenId> ids(expression_.begin(), expression_.end());
      if (const std::optional<std::string> answer = nanochat_calculator(tokenizer_.decode(ids))) {
        forced.push_back(output_start_);
        std::vector<tokenizer::TokenId> answer_ids;  // nanochat's encode: tiktoken's encode_ordinary
        tokenizer_.encode_ordinary(*answer, answer_ids);
        for (const tokenizer::TokenId t : answer_ids) forced.push_back(static_cast<int64_t>(t));
        forced.push_back(output_end_);
      }
    }
    expression_.clear();
    return forced;
  }
  if (in_expression_) expression_.push_back(id);
  return {};
}

std::unique_ptr<ToolUse> NanochatCalculatorUse::clone() const {
  return std::make_unique<NanochatCalculatorUse>(tokenizer_);
}

}  // namespace nf::infer
