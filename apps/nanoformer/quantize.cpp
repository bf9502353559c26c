// `nanoformer quantize MODEL OUT.gguf --type q8_0`: a decoder LM from whatever it is stored as, its
// weights quantised with llama.cpp's choices (models/quantize.h), written as GGUF with its tokenizer.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "generation_options.h"
#include "nanoformer/core/error.h"
#include "nanoformer/formats/gguf_checkpoint.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/io/gguf.h"
#include "nanoformer/models/model_stats.h"
#include "nanoformer/models/quantize.h"
#include "number_text.h"
#include "quantize_spec.h"
#include "weight_table.h"

namespace nf::cli {
namespace {

// `name` as a weight type llama.cpp computes with (Q8_1 and Q8_K are its activation types, F64 one
// that only a KV cache stores here); throws naming `flag` otherwise.
QuantType weight_type(const std::string& name, const std::string& flag) {
  QuantType type{};
  try {
    type = quant_type_from_name(name);
  } catch (const Error& e) {
    NF_FAIL(flag, ": ", e.what());
  }
  NF_CHECK(type != QuantType::q8_1 && type != QuantType::q8_k, flag, " ", name,
           ": an activation type, which llama.cpp does not multiply weights in");
  NF_CHECK(type != QuantType::f64, flag, " f64: weights are f32, f16, bf16 or a quantised type");
  return type;
}

// What a GGUF file holds, by tensor type.
std::vector<models::WeightTypeStats> file_weight_stats(const std::string& path) {
  std::vector<models::WeightTypeStats> out;
  const io::GGUFFile file = io::GGUFFile::open(path);
  for (const io::GGUFTensorInfo& t : file.tensors()) {
    const std::string type = quant_type_name(t.type);
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& s) { return s.type == type; });
    if (it == out.end()) it = out.insert(out.end(), models::WeightTypeStats{.type = type});
    it->tensors += 1;
    it->parameters += shape_numel(t.shape);
    it->bytes += static_cast<int64_t>(t.nbytes);
  }
  return out;
}

}  // namespace

models::QuantizeSpec quantize_spec(const std::string& type, const std::string& output_type,
                                   const std::string& embedding_type) {
  models::QuantizeSpec spec;
  try {
    spec = models::quantize_spec(type);  // a mix (q4_k_m, ...) or a pure type
  } catch (const Error& e) {
    bool known_type = true;  // a weight type refused: weight_type says why, naming the flag
    try {
      quant_type_from_name(type);
    } catch (const Error&) {
      known_type = false;
    }
    if (known_type) weight_type(type, "--type");
    NF_FAIL("--type: ", e.what());
  }
  if (!output_type.empty()) spec.output_type = weight_type(output_type, "--output-type");
  if (!embedding_type.empty()) spec.embedding_type = weight_type(embedding_type, "--embedding-type");
  return spec;
}

void requantize(models::DecoderLM& model, const models::QuantizeSpec& spec) {
  if (const auto held = model.named_quantized(); !held.empty()) {
    std::fprintf(stderr, "requantising: %zu weights are held quantised (%s, ...); dequantised first\n", held.size(),
                 quant_type_name(held.front().second.type()));
    models::dequantize_weights(model);
  }
  models::quantize_weights(model, spec);
}

namespace {

struct QuantizeArgs {
  std::string model, out, type, output_type, embedding_type, tokenizer;
};

void run_quantize(const QuantizeArgs& a) {
  const models::QuantizeSpec spec = quantize_spec(a.type, a.output_type, a.embedding_type);
  const std::string tokenizer = a.tokenizer.empty() ? tokenizer_beside(a.model) : a.tokenizer;
  if (!tokenizer.empty()) formats::check_gguf_tokenizer(tokenizer);
  const std::shared_ptr<models::DecoderLM> model = formats::load_decoder_lm(a.model);
  NF_CHECK(!model->config().moe, "quantize: ", a.model, " is a mixture-of-experts model, and the GGUF files quantize "
           "writes hold dense models only (llama.cpp's llama architecture); MoE models are quantised in memory as a "
           "QLoRA base (train --lora-base-type)");
  const auto before = models::weight_type_stats(*model);
  requantize(*model, spec);
  formats::save_model(*model, a.out, "gguf", {.tokenizer = tokenizer, .gguf_file_type = models::llama_file_type(spec)});
  const auto after = file_weight_stats(a.out);
  std::printf("%s -> %s (%s)\nweights before\n%sweights in %s\n%s", a.model.c_str(), a.out.c_str(),
              models::quantize_spec_name(spec).c_str(), weight_table(before).c_str(), a.out.c_str(), weight_table(after).c_str());
  const double ratio = static_cast<double>(total_bytes(before)) / static_cast<double>(total_bytes(after));
  std::printf("weights %s -> %s (%.2fx smaller)%s\n", byte_size(total_bytes(before)).c_str(),
              byte_size(total_bytes(after)).c_str(), ratio,
              tokenizer.empty() ? "; no tokenizer beside the model: none embedded (give --tokenizer FILE)" : "");
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "quantize",
      "Quantise a decoder language model's weights and write it as a GGUF file (llama.cpp's format):\n"
      "every Linear weight of the blocks in --type, the head in Q6_K (Q8_0 for --type q8_0) unless\n"
      "--output-type says, the token embedding in --type (or --embedding-type; a tied embedding is the\n"
      "head); norms, biases and position tables stay f32. A mix (q4_k_m, q5_k_m, q3_k_m, q4_k_s,\n"
      "q5_k_s, q3_k_s) gives attn_v, ffn_down (and attn_output for q3_k_m) more bits on some layers,\n"
      "as llama-quantize does. A weight whose rows are not whole blocks falls back as llama.cpp does\n"
      "(Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q3_K -> Q4_0, then F16; models/quantize.h). MODEL is anything\n"
      "nanoformer loads: a checkpoint, a Hugging Face, MiniMind or nanochat folder, a llama2.c .bin,\n"
      "a GGUF file. The tokenizer (--tokenizer, else the model's own or the tokenizer.json beside it)\n"
      "is embedded, so generate / chat / serve / eval and llama.cpp take OUT.gguf alone.\n"
      "Types: q8_0, q6_k, q5_k, q5_1, q5_0, q4_k, q4_1, q4_0, q3_k, bf16, f16, f32; mixes: q5_k_m, q5_k_s,\n"
      "q4_k_m, q4_k_s, q3_k_m, q3_k_s.\n"
      "Example: nanoformer quantize runs/sft/model.safetensors mm2-q8_0.gguf --type q8_0\n"
      "Example: nanoformer quantize mm2.gguf mm2-q4_0.gguf --type q4_0 --output-type q8_0");
  auto a = std::make_shared<QuantizeArgs>();
  cmd->add_option("MODEL", a->model, "the model to quantise")->required();
  cmd->add_option("OUT", a->out, "the GGUF file to write")->required();
  cmd->add_option("--type", a->type, "the weight type of the blocks' Linear layers (q8_0, q4_0, ...), or a mix (q4_k_m, ...)")->required();
  cmd->add_option("--output-type", a->output_type, "the head's type (f32 keeps it unquantised)");
  cmd->add_option("--embedding-type", a->embedding_type, "an untied token embedding's type (default: --type)");
  cmd->add_option("--tokenizer,-t", a->tokenizer,
                  "the tokenizer to embed (default: the model's own, or tokenizer.json beside it)");
  cmd->callback([a] { run_quantize(*a); });
}

}  // namespace nf::cli
