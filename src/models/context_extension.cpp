// A trained decoder LM rebuilt with longer position tables and an evaluation-time RoPE scaling.
#include "nanoformer/models/context_extension.h"

#include "nanoformer/core/error.h"

namespace nf::models {

void check_context_extension(const DecoderLM& model, const ContextExtension& e) {
  const DecoderLMConfig& c = model.config();
  NF_CHECK(c.position != nn::PositionKind::learned || e.max_seq_len <= c.max_seq_len, "context ", e.max_seq_len,
           " is longer than the model's learned position table (max_seq_len ", c.max_seq_len,
           "): positions past it have no embedding, so a learned-position model is evaluated up to ",
           c.max_seq_len, " tokens only");
  if (!e.rope_scaling) return;
  NF_CHECK(c.position == nn::PositionKind::rope, "RoPE scaling needs a RoPE model; this model's positions are ",
           nn::position_kind_name(c.position));
  NF_CHECK(e.rope_factor >= 1.0, "RoPE scale factor ", e.rope_factor, " must be >= 1");
}

std::shared_ptr<DecoderLM> extend_context(const std::shared_ptr<DecoderLM>& model, const ContextExtension& e) {
  check_context_extension(*model, e);
  DecoderLMConfig c = model->config();
  bool changed = false;
  if (e.max_seq_len > c.max_seq_len) {
    c.max_seq_len = e.max_seq_len;
    changed = true;
  }
  if (e.rope_scaling && (*e.rope_scaling != c.rope_scaling || e.rope_factor != c.rope_scale_factor)) {
    // YaRN's ramp is set by the context the model was trained at: its own max_seq_len unless it names one
    if (*e.rope_scaling == nn::RopeScaling::yarn && c.rope_original_max_seq_len == 0)
      c.rope_original_max_seq_len = model->config().max_seq_len;
    c.rope_scaling = *e.rope_scaling;
    c.rope_scale_factor = e.rope_factor;
    changed = true;
  }
  if (!changed) return model;
  Generator gen(0);  // every parameter is overwritten by the trained model's below
  auto extended = std::make_shared<DecoderLM>(c, gen);
  nn::StateDict state = model->state_dict();
  // the sinusoidal table is a persistent buffer sized max_seq_len: take the longer one just built
  if (auto sinusoidal = std::dynamic_pointer_cast<nn::SinusoidalPosition>(extended->pos_embeddings))
    state.at("pos_embeddings.pe") = sinusoidal->pe;
  extended->load_state_dict(state);
  extended->eval();
  return extended;
}

}  // namespace nf::models
