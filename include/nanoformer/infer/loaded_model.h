#pragma once
// A decoder language model with the tokenizer it comes with, as `generate`, `chat`, `serve` and
// the C API load them: the model from any form nanoformer reads, the tokenizer given or found
// beside it, and what a GGUF tokenizer says of generation (its end ids, the BOS put before prompts).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/tokenizer/tokenizer.h"

namespace nf::infer {

struct LoadedModel {
  std::shared_ptr<models::DecoderLM> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;  // null when none was given or found
  std::string tokenizer_path;
  std::vector<int64_t> end_ids = {};       // the ids a GGUF tokenizer says end generation (eos, eot); else empty
  std::optional<int64_t> prompt_bos = {};  // the id a GGUF tokenizer puts before prompts (add_bos_token)
};

// The tokenizer a model brings: the model itself when it is a GGUF file holding one; else the
// tokenizer.json in the model's folder or in the folder of the model's file; "" when none.
std::string tokenizer_beside(const std::string& model);

// `model` (any checkpoint, model folder, GGUF, llama2c file or preset, already loaded from
// `model_path`), with `tokenizer_path`, or else tokenizer_beside(model_path); `required`: an error
// when there is none. Throws nf::Error when the model is no DecoderLM or the tokenizer has ids the
// model has not.
LoadedModel with_tokenizer(const std::shared_ptr<models::Model>& model, const std::string& model_path,
                           const std::string& tokenizer_path, bool required);

// Where generation stops by default: the tokenizer's own end ids and its <|endoftext|>.
std::vector<int64_t> default_end_ids(const LoadedModel& loaded);

}  // namespace nf::infer
