#pragma once
// One vector per input text, pooled from a model's last hidden states, as sentence-transformers'
// Transformer -> Pooling (-> Normalize) modules compute it:
//   mean:  e = sum_t m_t h_t / max(sum_t m_t, 1e-9)        (m_t = 1 for the input's tokens)
//   cls:   e = h_0                                         (the first token)
//   last:  e = h_{n-1}                                     (the last token; decoder embedding models)
//   max:   e_d = max_t h_{t,d}                             (over the input's tokens)
//   normalize:  e <- e / max(||e||_2, 1e-12)               (torch.nn.functional.normalize)
// h is an EncoderModel's last_hidden_state, or a DecoderLM's last block output after its final
// norm (transformers' last_hidden_state of the base model, without the head). Encoder inputs run
// as one batch padded on the right with an attention mask; decoder inputs (causal: padding on the
// right changes nothing before it, but the model has no mask) one by one.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "nanoformer/models/model.h"

namespace nf::models {

enum class Pooling { mean, cls, last, max };

// "mean", "cls", "last", "max"; throws nf::Error naming `what` and the value.
Pooling pooling_from_name(std::string_view name, std::string_view what = "--pooling");
const char* pooling_name(Pooling pooling);

struct SentenceEmbedding {
  Pooling pooling = Pooling::mean;
  bool normalize = true;
  int64_t max_tokens = 0;  // the most tokens an input may hold (sentence-transformers' max_seq_length); 0: the model's
};

// The width of the vectors embed() returns: the model's dim. Throws nf::Error naming the
// architecture when the model is neither an EncoderModel nor a DecoderLM.
int64_t embedding_width(const Model& model);

// One vector of embedding_width(model) floats per input (token ids, each non-empty, within the
// model's vocabulary and max_context). The model runs in eval mode without gradients.
std::vector<std::vector<float>> embed(Model& model, std::span<const std::vector<int64_t>> inputs,
                                      const SentenceEmbedding& options);

}  // namespace nf::models
