// `nanoformer convert MODEL OUT --to FORMAT [--type T]`: load a model from whatever it is stored as
// and save it in another format (model_io.h says which formats this build reads and writes); GGUF
// with its tokenizer and, with --type, quantised weights.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "command.h"
#include "generation_options.h"
#include "nanoformer/core/error.h"
#include "nanoformer/formats/gguf_checkpoint.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/models/quantize.h"
#include "quantize_spec.h"

namespace nf::cli {

void add_convert_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "convert",
      "Load MODEL (a preset name or config JSON, giving seed-0 weights, or a checkpoint) and save it\n"
      "to OUT in the format --to names:\n"
      "  nanoformer  one .safetensors file with the config in its header (every architecture)\n"
      "  hf          a Hugging Face folder: config.json + model.safetensors (GPT2LMHeadModel, or\n"
      "              LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM or Qwen3ForCausalLM as\n"
      "              its options need, for a language model, BertModel for an encoder,\n"
      "              ViTForImageClassification for a ViT)\n"
      "  minimind    a MiniMind2 folder in 002's form (LMConfig keys dim, n_layers, ...; names\n"
      "              layers.N.attention.wq, ...)\n"
      "  minimind-hf a MiniMind2 folder in its Hugging Face form (MiniMindConfig keys hidden_size, ...;\n"
      "              names model.layers.N.self_attn.q_proj, ...), as MiniMind's save_pretrained writes\n"
      "  nanochat    a nanochat folder (meta_<step>.json + model_<step>.safetensors)\n"
      "  llama2c     a llama2.c .bin file\n"
      "  gguf        a GGUF file, llama.cpp's (architecture llama for LLaMA-style models, gpt2 for\n"
      "              GPT-2-style ones), with the tokenizer embedded (--tokenizer, else the model's own\n"
      "              or the tokenizer.json beside it); --type quantises the weights first, as\n"
      "              `nanoformer quantize` does (default: the weights as held, f32 when dense)\n"
      "Either MiniMind form is read (told apart by its config keys). --max-shard-size splits the\n"
      "weights of an hf, minimind or minimind-hf folder into model-0000K-of-0000N.safetensors +\n"
      "model.safetensors.index.json, as transformers' save_pretrained(max_shard_size=...).\n"
      "Example: nanoformer convert minimind2-small mm2.safetensors --to nanoformer\n"
      "Example: nanoformer convert gpt2-124m gpt2_hf --to hf --max-shard-size 200MB\n"
      "A model holding quantised weights (a GGUF) is dequantised to f32 for the other formats.\n"
      "Example: nanoformer convert runs/sft/model.safetensors mm2.gguf --to gguf --type q8_0");
  struct Args {
    std::string model, out, to, type, tokenizer;
    int64_t max_shard_bytes = 0;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("MODEL", a->model, "a preset name, a config JSON file, or a checkpoint")->required();
  cmd->add_option("OUT", a->out, "where to write the converted model")->required();
  cmd->add_option("--to", a->to, "the output format")->required()->check(CLI::IsMember(formats::model_formats()));
  cmd->add_option("--max-shard-size", a->max_shard_bytes,
                  "hf / minimind / minimind-hf: shards of at most SIZE (2GB = 2e9 bytes, 2GiB = 2^31, "
                  "plain = bytes); 0 (default) = one model.safetensors")
      ->transform(CLI::AsSizeValue(true));
  cmd->add_option("--type", a->type, "gguf: quantise the weights to this type first (q8_0, q4_0, f16, ...)");
  cmd->add_option("--tokenizer,-t", a->tokenizer,
                  "gguf: the tokenizer to embed (default: the model's own, or tokenizer.json beside it)");
  cmd->callback([a] {
    for (const auto* flag : {&a->type, &a->tokenizer})
      NF_CHECK(flag->empty() || a->to == "gguf", flag == &a->type ? "--type" : "--tokenizer",
               " is for --to gguf (a GGUF file holds quantised weights and its tokenizer)");
    const std::optional<models::QuantizeSpec> spec =
        a->type.empty() ? std::nullopt : std::optional(quantize_spec(a->type));
    const std::string tokenizer = a->to != "gguf" || !a->tokenizer.empty() ? a->tokenizer : tokenizer_beside(a->model);
    if (!tokenizer.empty()) formats::check_gguf_tokenizer(tokenizer);
    auto model = formats::load_model(a->model);
    if (spec) requantize(*models::model_as<models::DecoderLM>(model, a->model), *spec);
    if (a->to != "gguf" && !model->named_quantized().empty()) {  // a dense format: the blocks dequantised
      std::fprintf(stderr, "convert: %zu quantised weights dequantised to f32 for %s\n", model->named_quantized().size(),
                   a->to.c_str());
      models::dequantize_weights(*model);
    }
    formats::save_model(*model, a->out, a->to,
                        {.max_shard_bytes = a->max_shard_bytes,
                         .tokenizer = tokenizer,
                         .gguf_file_type = spec ? std::optional(models::llama_file_type(*spec)) : std::nullopt});
    std::printf("wrote %s (%s, %lld parameters)\n", a->out.c_str(), a->to.c_str(),
                static_cast<long long>(model->num_parameters()));
  });
}

}  // namespace nf::cli
