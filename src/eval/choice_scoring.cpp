// Multiple choice by log-likelihood over a shared context (eval/choice_scoring.h).
#include "nanoformer/eval/choice_scoring.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"

namespace nf::eval {

EncodedChoices encode_choices(const tokenizer::Tokenizer& tokenizer, const std::string& context,
                              const std::vector<std::string>& continuations) {
  size_t kept = context.size();
  while (kept > 0 && std::isspace(static_cast<unsigned char>(context[kept - 1]))) --kept;  // context.rstrip()
  const std::string head = context.substr(0, kept), moved = context.substr(kept);
  EncodedChoices out;
  for (tokenizer::TokenId id : tokenizer.encode(head)) out.context.push_back(static_cast<int64_t>(id));
  NF_CHECK(!out.context.empty(), "choice scoring: the context encodes to no token");
  for (const std::string& continuation : continuations) {
    const std::vector<tokenizer::TokenId> whole = tokenizer.encode(head + moved + continuation);
    NF_CHECK(whole.size() > out.context.size(), "choice scoring: the continuation '", continuation,
             "' encodes to no token");
    out.continuations.emplace_back(whole.begin() + static_cast<std::ptrdiff_t>(out.context.size()), whole.end());
  }
  return out;
}

namespace {

// One forward of `continuations` (distinct) after `context`: their summed log-probs.
std::vector<double> score_distinct(models::DecoderLM& model, const std::vector<int64_t>& context,
                                   const std::vector<const std::vector<int64_t>*>& continuations, int64_t longest) {
  const int64_t V = model.config().vocab_size, C = static_cast<int64_t>(continuations.size());
  const auto kept = static_cast<int64_t>(context.size());
  nn::KVCache cache = model.make_cache(C, kept - 1 + longest);
  if (kept > 1) {
    model.forward_cached(Tensor::from_vector(std::vector<int64_t>(context.begin(), context.end() - 1), {1, kept - 1}), cache);
    cache.select_rows(std::vector<int64_t>(static_cast<size_t>(C), 0));  // the context's keys in every row
  }
  std::vector<int64_t> ids(static_cast<size_t>(C * longest), 0);  // [last context id, continuation[:-1]], padded with 0
  for (int64_t c = 0; c < C; ++c) {
    const std::vector<int64_t>& cont = *continuations[static_cast<size_t>(c)];
    ids[static_cast<size_t>(c * longest)] = context.back();
    std::copy(cont.begin(), cont.end() - 1, ids.begin() + c * longest + 1);
  }
  const Tensor logits = model.forward_cached(Tensor::from_vector(ids, {C, longest}), cache).to(DType::f32).contiguous();
  const float* z = logits.data<float>();
  std::vector<double> sums(static_cast<size_t>(C), 0.0);
  for (int64_t c = 0; c < C; ++c) {
    const std::vector<int64_t>& cont = *continuations[static_cast<size_t>(c)];
    for (size_t t = 0; t < cont.size(); ++t) {
      const float* row = z + (c * longest + static_cast<int64_t>(t)) * V;
      double max = row[0];
      for (int64_t v = 1; v < V; ++v) max = std::max(max, static_cast<double>(row[v]));
      double total = 0.0;
      for (int64_t v = 0; v < V; ++v) total += std::exp(static_cast<double>(row[v]) - max);
      sums[static_cast<size_t>(c)] += static_cast<double>(row[cont[t]]) - max - std::log(total);  // log softmax(z)[token]
    }
  }
  return sums;
}

}  // namespace

std::vector<double> continuation_logprobs(models::DecoderLM& model, const EncodedChoices& choices) {
  const int64_t V = model.config().vocab_size, window = model.config().max_seq_len;
  // identical continuations are scored once, so that they tie exactly (rows of one batch may round differently)
  std::vector<const std::vector<int64_t>*> distinct;
  std::vector<size_t> slot;  // continuation -> its entry in distinct
  int64_t longest = 0;
  for (const auto& c : choices.continuations) {
    const auto same = std::find_if(distinct.begin(), distinct.end(), [&](const auto* d) { return *d == c; });
    slot.push_back(static_cast<size_t>(same - distinct.begin()));
    if (same == distinct.end()) distinct.push_back(&c);
    longest = std::max<int64_t>(longest, static_cast<int64_t>(c.size()));
    for (int64_t id : c) NF_CHECK(id >= 0 && id < V, "choice scoring: id ", id, " is not below the vocabulary size ", V);
  }
  NF_CHECK(longest <= window, "choice scoring: a continuation of ", longest, " tokens exceeds max_seq_len ", window);
  // keep the last `kept` context ids: kept + longest - 1 positions fit the window
  const auto kept = std::min<int64_t>(static_cast<int64_t>(choices.context.size()), window + 1 - longest);
  const std::vector<int64_t> context(choices.context.end() - kept, choices.context.end());
  for (int64_t id : context) NF_CHECK(id >= 0 && id < V, "choice scoring: id ", id, " is not below the vocabulary size ", V);

  const bool was_training = model.is_training();
  model.eval();
  NoGradGuard no_grad;
  const std::vector<double> scores = score_distinct(model, context, distinct, longest);
  model.train(was_training);
  std::vector<double> sums;
  for (size_t s : slot) sums.push_back(scores[s]);
  return sums;
}

size_t argmax(const std::vector<double>& scores) {
  return static_cast<size_t>(std::max_element(scores.begin(), scores.end()) - scores.begin());
}

}  // namespace nf::eval
