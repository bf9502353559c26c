// Pooled sentence embeddings from an encoder's or a decoder's last hidden states (models/sentence_embedding.h).
#include "nanoformer/models/sentence_embedding.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/models/encoder_model.h"

namespace nf::models {
namespace {

// Pools rows [0, n) of one input's hidden states h (n x width, row-major) into e, then normalises.
std::vector<float> pool(const float* h, int64_t n, int64_t width, const SentenceEmbedding& o) {
  std::vector<double> e(static_cast<size_t>(width), 0.0);
  const auto row = [&](int64_t t) { return h + t * width; };
  switch (o.pooling) {
    case Pooling::mean:  // sum_t h_t / max(n, 1e-9)
      for (int64_t t = 0; t < n; ++t)
        for (int64_t d = 0; d < width; ++d) e[static_cast<size_t>(d)] += row(t)[d];
      for (double& x : e) x /= std::max(static_cast<double>(n), 1e-9);
      break;
    case Pooling::cls:  // h_0
      std::copy(row(0), row(0) + width, e.begin());
      break;
    case Pooling::last:  // h_{n-1}
      std::copy(row(n - 1), row(n - 1) + width, e.begin());
      break;
    case Pooling::max:  // max_t h_{t,d}
      std::fill(e.begin(), e.end(), -std::numeric_limits<double>::infinity());
      for (int64_t t = 0; t < n; ++t)
        for (int64_t d = 0; d < width; ++d) e[static_cast<size_t>(d)] = std::max<double>(e[static_cast<size_t>(d)], row(t)[d]);
      break;
  }
  double scale = 1.0;
  if (o.normalize) {
    double squares = 0;
    for (double x : e) squares += x * x;
    scale = 1.0 / std::max(std::sqrt(squares), 1e-12);  // e / max(||e||_2, 1e-12)
  }
  std::vector<float> out(e.size());
  for (size_t d = 0; d < e.size(); ++d) out[d] = static_cast<float>(e[d] * scale);
  return out;
}

std::vector<std::vector<float>> embed_encoder(EncoderModel& model, std::span<const std::vector<int64_t>> inputs,
                                              const SentenceEmbedding& o) {
  const EncoderConfig& c = model.config();
  int64_t longest = 0;
  for (const auto& ids : inputs) longest = std::max(longest, static_cast<int64_t>(ids.size()));
  const auto batch = static_cast<int64_t>(inputs.size());
  const int64_t pad = std::max<int64_t>(c.pad_token_id, 0);
  std::vector<int64_t> ids(static_cast<size_t>(batch * longest), pad), mask(ids.size(), 0);
  for (int64_t b = 0; b < batch; ++b) {
    const auto& row = inputs[static_cast<size_t>(b)];
    std::copy(row.begin(), row.end(), ids.begin() + b * longest);
    std::fill_n(mask.begin() + b * longest, row.size(), 1);
  }
  const Tensor hidden = model.forward(Tensor::from_vector(ids, {batch, longest}), {},
                                      Tensor::from_vector(mask, {batch, longest}))
                            .last_hidden_state.to(DType::f32)
                            .contiguous();
  std::vector<std::vector<float>> out;
  for (int64_t b = 0; b < batch; ++b)
    out.push_back(pool(hidden.data<float>() + b * longest * c.dim, static_cast<int64_t>(inputs[static_cast<size_t>(b)].size()),
                       c.dim, o));
  return out;
}

std::vector<std::vector<float>> embed_decoder(DecoderLM& model, std::span<const std::vector<int64_t>> inputs,
                                              const SentenceEmbedding& o) {
  std::vector<std::vector<float>> out;
  for (const auto& ids : inputs) {
    const auto n = static_cast<int64_t>(ids.size());
    const LMOutput lm = model.forward(Tensor::from_vector(ids, {1, n}), {}, /*return_hidden=*/true);
    const Tensor hidden = model.norm->forward(lm.hidden.back()).to(DType::f32).contiguous();  // the last hidden state
    out.push_back(pool(hidden.data<float>(), n, model.config().dim, o));
  }
  return out;
}

}  // namespace

Pooling pooling_from_name(std::string_view name, std::string_view what) {
  if (name == "mean") return Pooling::mean;
  if (name == "cls") return Pooling::cls;
  if (name == "last") return Pooling::last;
  if (name == "max") return Pooling::max;
  throw Error(std::string(what) + " '" + std::string(name) + "': the poolings are mean, cls, last and max");
}

const char* pooling_name(Pooling pooling) {
  switch (pooling) {
    case Pooling::mean: return "mean";
    case Pooling::cls: return "cls";
    case Pooling::last: return "last";
    case Pooling::max: return "max";
  }
  return "?";
}

int64_t embedding_width(const Model& model) {
  if (const auto* encoder = dynamic_cast<const EncoderModel*>(&model)) return encoder->config().dim;
  if (const auto* decoder = dynamic_cast<const DecoderLM*>(&model)) return decoder->config().dim;
  throw Error("embeddings: a " + model.architecture() + " model has no sentence embedding (an encoder or a decoder LM has)");
}

std::vector<std::vector<float>> embed(Model& model, std::span<const std::vector<int64_t>> inputs,
                                      const SentenceEmbedding& options) {
  embedding_width(model);  // refuses other architectures
  const int64_t vocab = dynamic_cast<EncoderModel*>(&model) ? dynamic_cast<EncoderModel&>(model).config().vocab_size
                                                            : dynamic_cast<DecoderLM&>(model).config().vocab_size;
  const int64_t limit = options.max_tokens > 0 ? std::min(options.max_tokens, model.max_context()) : model.max_context();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& ids = inputs[i];
    NF_CHECK(!ids.empty(), "embeddings: input ", i, " has no tokens");
    NF_CHECK(static_cast<int64_t>(ids.size()) <= limit, "embeddings: input ", i, " is ", ids.size(),
             " tokens, over the model's limit of ", limit);
    for (const int64_t id : ids)
      NF_CHECK(id >= 0 && id < vocab, "embeddings: input ", i, " holds token id ", id, ", outside the vocabulary of ", vocab);
  }
  if (inputs.empty()) return {};
  NoGradGuard no_grad;
  model.eval();
  if (auto* encoder = dynamic_cast<EncoderModel*>(&model)) return embed_encoder(*encoder, inputs, options);
  return embed_decoder(dynamic_cast<DecoderLM&>(model), inputs, options);
}

}  // namespace nf::models
