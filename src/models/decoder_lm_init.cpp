// The initialisation schemes of DecoderLM (InitScheme): GPT-2/MiniMind's normal(0, 0.02),
// nanochat's fan-scaled normal with zeroed output projections (003), DeepNet's scaled xavier.
#include <cmath>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/ops/view.h"

namespace nf::models {
namespace {

void draw_normal(const Tensor& weight, double std, Generator& gen) {
  normal_(weight, 0.0, std, gen);  // in place: no temporary of the weight's size
}

// Every Linear under `root` (registration order), including MoE gates and experts.
std::vector<const nn::Linear*> linears(const nn::Module& root) {
  std::vector<const nn::Linear*> out;
  for (const auto& [name, m] : root.named_modules())
    if (auto* fc = dynamic_cast<const nn::Linear*>(m)) out.push_back(fc);
  return out;
}

// The Linears that write back into the residual stream: attention's o_proj and each MLP's (or
// expert's) last Linear.
std::vector<const nn::Linear*> output_projections(const nn::TransformerBlock& block) {
  std::vector<const nn::Linear*> out{block.attn->o_proj.get()};
  for (const auto& [name, m] : block.mlp->named_modules()) {
    if (auto* two_layer = dynamic_cast<const nn::TwoLayerMLP*>(m)) out.push_back(two_layer->proj.get());
    if (auto* swiglu = dynamic_cast<const nn::SwiGLU*>(m)) out.push_back(swiglu->w2.get());
  }
  return out;
}

// normal(0, std) for the embeddings (and learned positions, T5's bias table); the head too when untied.
void init_embeddings(DecoderLM& model, double std, Generator& gen) {
  draw_normal(model.tok_embeddings->weight, std, gen);
  if (auto* learned = dynamic_cast<nn::LearnedPosition*>(model.pos_embeddings.get())) draw_normal(learned->weight, std, gen);
  if (auto* t5 = dynamic_cast<nn::T5RelativeBias*>(model.attention_position.get()))
    draw_normal(t5->relative_attention_bias->weight, std, gen);
  if (model.output) draw_normal(model.output->weight, std, gen);
}

}  // namespace

void init_weights(DecoderLM& model, InitScheme scheme, Generator& gen) {
  autograd::NoGradGuard no_grad;
  const DecoderLMConfig& c = model.config();
  switch (scheme) {
    case InitScheme::normal:
      init_embeddings(model, c.init_std, gen);
      for (const auto* fc : linears(*model.layers)) {
        draw_normal(fc->weight, c.init_std, gen);  // w ~ normal(0, init_std), b = 0
        if (fc->bias.defined()) fill_(fc->bias, 0.0);
      }
      return;
    case InitScheme::nanochat:
      draw_normal(model.tok_embeddings->weight, 1.0, gen);
      for (const auto* fc : linears(model)) {
        const double fan_in = static_cast<double>(fc->in_features()), fan_out = static_cast<double>(fc->out_features());
        // std = 1/sqrt(fan_in) * min(1, sqrt(fan_out / fan_in))
        draw_normal(fc->weight, 1.0 / std::sqrt(fan_in) * std::min(1.0, std::sqrt(fan_out / fan_in)), gen);
        if (fc->bias.defined()) fill_(fc->bias, 0.0);
      }
      if (model.output) fill_(model.output->weight, 0.0);
      for (const auto& layer : *model.layers)
        for (const auto* fc : output_projections(*layer)) fill_(fc->weight, 0.0);
      return;
    case InitScheme::deepnet: {
      init_embeddings(model, c.init_std, gen);
      const double beta = nn::deepnorm_constants(0, c.n_layers).decoder_beta;
      for (const auto& layer : *model.layers) nn::deepnorm_init(*layer, beta, gen);
      return;
    }
  }
}

}  // namespace nf::models
