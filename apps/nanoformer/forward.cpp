// `nanoformer forward --model MODEL --ids "1 2 3" --out FILE.safetensors [--hidden]`: one sequence
// through a model, its outputs (a language model's logits, an encoder's last_hidden_state, an
// encoder-decoder's logits, an image classifier's logits from --input FILE.safetensors) and every
// block's hidden state written for comparison with another implementation.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/infer/prompt_ids.h"
#include "nanoformer/io/safetensors.h"
#include "nanoformer/models/encoder_decoder.h"
#include "nanoformer/models/encoder_model.h"
#include "nanoformer/models/vit.h"
#include "nanoformer/ops/view.h"

namespace nf::cli {
namespace {

// "1 2 3" or "1,2,3" -> {1, 2, 3}; every id must lie in [0, vocab_size), and there must be one.
std::vector<int64_t> parse_ids(const std::string& text, int64_t vocab_size, const char* flag = "--ids") {
  std::vector<int64_t> ids = infer::parse_prompt_ids(text, vocab_size, flag);
  NF_CHECK(!ids.empty(), flag, ": no token ids given (example: ", flag, " \"1 2 3\")");
  return ids;
}

struct ForwardArgs {
  std::string model, ids, target_ids, input, out, token_type_ids;
  bool hidden = false;
};

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// A language model: logits (T, vocab) and, with --hidden, hidden.N (T, dim).
NamedTensors forward_decoder_lm(models::DecoderLM& model, const ForwardArgs& a) {
  NF_CHECK(a.input.empty() && a.target_ids.empty() && a.token_type_ids.empty(),
           "--input, --target-ids and --token-type-ids are not for a language model; give --ids");
  const std::vector<int64_t> ids = parse_ids(a.ids, model.config().vocab_size);
  const int64_t T = static_cast<int64_t>(ids.size());
  const models::LMOutput out = model.forward(Tensor::from_vector(ids, {1, T}), {}, a.hidden);
  NamedTensors tensors = {{"logits", reshape(out.logits, {T, model.config().vocab_size}).contiguous()}};
  for (size_t i = 0; i < out.hidden.size(); ++i)
    tensors.emplace_back("hidden." + std::to_string(i), reshape(out.hidden[i], {T, model.config().dim}).contiguous());
  return tensors;
}

// An encoder-decoder: --ids the source, --target-ids the decoder input; logits (T, tgt_vocab).
NamedTensors forward_encoder_decoder(models::EncoderDecoder& model, const ForwardArgs& a) {
  NF_CHECK(a.input.empty() && !a.hidden && a.token_type_ids.empty(),
           "--input, --hidden and --token-type-ids are not for an encoder-decoder model");
  NF_CHECK(!a.target_ids.empty(), "--target-ids: an encoder-decoder model needs the decoder's input ids "
           "(example: --ids \"5 6 7\" --target-ids \"1 5\")");
  const std::vector<int64_t> src = parse_ids(a.ids, model.config().src_vocab_size, "--ids");
  const std::vector<int64_t> tgt = parse_ids(a.target_ids, model.config().tgt_vocab_size, "--target-ids");
  const int64_t S = static_cast<int64_t>(src.size()), T = static_cast<int64_t>(tgt.size());
  const Tensor logits = model.forward(Tensor::from_vector(src, {1, S}), Tensor::from_vector(tgt, {1, T})).logits;
  return {{"logits", reshape(logits, {T, model.config().tgt_vocab_size}).contiguous()}};
}

// --input's tensor pixel_values (C, S, S), any float dtype, as f32 (1, C, S, S) for the model's config.
Tensor read_pixel_values(const std::string& path, const models::ViTConfig& c) {
  const auto tensors = io::load_safetensors(path);
  const auto it = tensors.find("pixel_values");
  NF_CHECK(it != tensors.end(), "--input ", path, ": no tensor 'pixel_values'");
  const Tensor& x = it->second;
  NF_CHECK(is_floating(x.dtype()), "--input ", path, ": tensor 'pixel_values' is ", dtype_name(x.dtype()),
           ", expected a float type");
  NF_CHECK(x.shape() == Shape({c.in_channels, c.image_size, c.image_size}), "--input ", path,
           ": tensor 'pixel_values' is ", shape_str(x.shape()), ", the model takes (", c.in_channels, ", ",
           c.image_size, ", ", c.image_size, ")");
  return reshape(x.to(DType::f32), {1, c.in_channels, c.image_size, c.image_size});
}

// An image classifier: logits (n_classes) and, with --hidden, hidden.N (num_patches + 1, dim).
NamedTensors forward_vit(models::ViTClassifier& model, const ForwardArgs& a) {
  NF_CHECK(a.ids.empty() && a.target_ids.empty() && a.token_type_ids.empty(),
           "--ids, --target-ids and --token-type-ids are not for an image classifier; give --input");
  NF_CHECK(!a.input.empty(), "--input FILE.safetensors (tensor pixel_values (C, H, W)) is needed for an image classifier");
  const models::ViTOutput out = model.forward(read_pixel_values(a.input, model.config()), {}, a.hidden);
  NamedTensors tensors = {{"logits", reshape(out.logits, {model.config().n_classes}).contiguous()}};
  for (size_t i = 0; i < out.hidden.size(); ++i)
    tensors.emplace_back("hidden." + std::to_string(i), select(out.hidden[i], 0, 0).contiguous());
  return tensors;
}

// An encoder: last_hidden_state (T, dim), pooler_output (dim) with a pooler and, with --hidden,
// hidden.N (T, dim).
NamedTensors forward_encoder(models::EncoderModel& model, const ForwardArgs& a) {
  NF_CHECK(a.input.empty() && a.target_ids.empty(), "--input and --target-ids are not for an encoder; give --ids");
  const models::EncoderConfig& c = model.config();
  const std::vector<int64_t> ids = parse_ids(a.ids, c.vocab_size);
  const int64_t T = static_cast<int64_t>(ids.size());
  Tensor types;
  if (!a.token_type_ids.empty()) {
    NF_CHECK(c.type_vocab_size > 0, "--token-type-ids: the model has no token types");
    const std::vector<int64_t> values = parse_ids(a.token_type_ids, c.type_vocab_size, "--token-type-ids");
    NF_CHECK(static_cast<int64_t>(values.size()) == T, "--token-type-ids: ", values.size(), " values for ", T, " ids");
    types = Tensor::from_vector(values, {1, T});
  }
  const models::EncoderOutput out = model.forward(Tensor::from_vector(ids, {1, T}), types, {}, a.hidden);
  NamedTensors tensors = {{"last_hidden_state", reshape(out.last_hidden_state, {T, c.dim}).contiguous()}};
  if (out.pooler_output.defined()) tensors.emplace_back("pooler_output", reshape(out.pooler_output, {c.dim}).contiguous());
  for (size_t i = 0; i < out.hidden.size(); ++i)
    tensors.emplace_back("hidden." + std::to_string(i), reshape(out.hidden[i], {T, c.dim}).contiguous());
  return tensors;
}

// "logits (5, 64), hidden.0 (5, 32), ..."
std::string described(const NamedTensors& tensors) {
  std::string out;
  for (const auto& [name, t] : tensors) out += (out.empty() ? "" : ", ") + name + " " + shape_str(t.shape());
  return out;
}

}  // namespace

void add_forward_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "forward",
      "Run one input (batch 1) through a model in eval mode and write fp32 tensors to a safetensors\n"
      "file, to compare with another implementation. What it writes depends on the architecture:\n"
      "  language model (--ids)   'logits' (T, vocab)\n"
      "  encoder-decoder (--ids the source, --target-ids the decoder input)   'logits' (T, tgt_vocab)\n"
      "  image classifier (--input FILE.safetensors holding 'pixel_values' (C, H, W))\n"
      "                           'logits' (n_classes)\n"
      "  encoder (--ids, optional --token-type-ids)\n"
      "                           'last_hidden_state' (T, dim), with a pooler 'pooler_output' (dim)\n"
      "--hidden also writes 'hidden.0' .. 'hidden.{L-1}', each (T, dim): the output of every block,\n"
      "before the final norm (Hugging Face's output_hidden_states[1..L], except that GPT-2 and LLaMA\n"
      "take its last entry after the final norm); T = patches + 1 for an image classifier, the class\n"
      "token first.\n"
      "Example: nanoformer forward --model gpt-mini --ids \"464 2068 7586\" --out logits.safetensors\n"
      "Example: nanoformer forward --model transformer-base --ids \"17 42 9\" --target-ids \"1 17\" --out logits.safetensors");
  auto a = std::make_shared<ForwardArgs>();
  cmd->add_option("--model", a->model, "a preset name, a config JSON file (seed-0 weights), or a checkpoint")->required();
  cmd->add_option("--ids", a->ids, "the token ids, separated by spaces or commas: \"1 2 3\"");
  cmd->add_option("--target-ids", a->target_ids, "an encoder-decoder's decoder input ids: \"1 5 9\"");
  cmd->add_option("--input", a->input, "an image classifier's input: a safetensors file with tensor pixel_values (C, H, W)");
  cmd->add_option("--out", a->out, "the safetensors file to write")->required();
  cmd->add_option("--token-type-ids", a->token_type_ids, "an encoder's token types (segments), one per id: \"0 0 1\"");
  cmd->add_flag("--hidden", a->hidden, "also write every block's output as hidden.N");
  cmd->callback([a] {
    auto model = formats::load_model(a->model);
    model->eval();
    NoGradGuard no_grad;
    NamedTensors tensors;
    if (auto lm = std::dynamic_pointer_cast<models::DecoderLM>(model))
      tensors = forward_decoder_lm(*lm, *a);
    else if (auto seq2seq = std::dynamic_pointer_cast<models::EncoderDecoder>(model))
      tensors = forward_encoder_decoder(*seq2seq, *a);
    else if (auto vit = std::dynamic_pointer_cast<models::ViTClassifier>(model))
      tensors = forward_vit(*vit, *a);
    else if (auto encoder = std::dynamic_pointer_cast<models::EncoderModel>(model))
      tensors = forward_encoder(*encoder, *a);
    else
      NF_FAIL("forward: architecture '", model->architecture(), "' is not supported");
    io::save_safetensors(a->out, tensors);
    std::printf("wrote %s: %s\n", a->out.c_str(), described(tensors).c_str());
  });
}

}  // namespace nf::cli
