#pragma once
// What `nanoformer generate` and `nanoformer chat` share: the model and its tokenizer, and the
// sampling and stopping flags.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nanoformer/infer/loaded_model.h"
#include "nanoformer/infer/prompt_lookup.h"
#include "nanoformer/infer/sampler.h"
#include "nanoformer/infer/stop_criteria.h"
#include "nanoformer/infer/tool_choice.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/tokenizer/chat_template.h"
#include "nanoformer/tokenizer/tokenizer.h"

namespace nf::cli {

struct GenerationFlags {
  std::string model, tokenizer;
  int64_t context = 0;  // the cache's length; 0 = the model's max_seq_len
  int64_t keep = 0;     // past the context: tokens at its start never dropped (infer::ContextShift)
  std::string cache_type = "f32";  // how the KV cache stores keys and values (nn/kv_cache.h)
  bool greedy = false;
  infer::SamplerConfig sampler{.temperature = 0.8, .top_k = 0, .top_p = 0.9, .min_p = 0.0, .repetition_penalty = 1.0,
                               .seed = 0};
  infer::StopCriteria stop;
  infer::SpeculativeConfig speculative;  // --lookup-ngram, --draft-max, --draft-min
  std::string draft;                     // --draft MODEL: the draft model's file (speculative.draft_model once loaded)
  infer::ToolOptions tools;              // tools the model calls while it decodes: --tools, --tool-command, ...
};

// --model, --tokenizer, --context, --cache-type, the sampling and stopping flags and speculative decoding's.
void add_generation_flags(CLI::App& cmd, GenerationFlags& flags);
// --draft, --draft-max, --draft-min (generate, chat, serve).
void add_draft_flags(CLI::App& cmd, std::string& draft, infer::SpeculativeConfig& speculative);
// --cache-type (generate, chat, serve, eval), read with nn::kv_cache_type_from_name.
void add_cache_type_flag(CLI::App& cmd, std::string& cache_type);
// --tools, --tool-command and the command tool's limits (generate, chat, serve).
void add_tool_flags(CLI::App& cmd, infer::ToolOptions& options);
// A tool turn told to stderr when it ran no tool (past --max-tool-turns); returns its forced tokens' count.
int64_t report_tool_turn(const infer::ToolTurn& turn);
// Throws nf::Error naming a sampling, stopping, speculative or --cache-type flag out of range; called before anything loads.
void check_generation_flags(const GenerationFlags& flags);

// The model with its tokenizer, as the library loads it (infer/loaded_model.h).
using infer::default_end_ids;
using infer::LoadedModel;
using infer::tokenizer_beside;

// The sampler's settings after --greedy (temperature 0), validated; with a tokenizer, ids beyond
// its vocabulary (a model's padding) are never drawn.
infer::SamplerConfig sampler_config(const GenerationFlags& flags, const LoadedModel& loaded);

// --draft's model (null without --draft), checked against the target `model` for a context of
// `context` tokens: an nf::Error naming both files when their vocabularies differ.
std::shared_ptr<models::DecoderLM> load_draft_model(const GenerationFlags& flags, const models::DecoderLM& model,
                                                    int64_t context);

// The model (any checkpoint, model folder, GGUF, llama2c file or preset), and --tokenizer or else
// tokenizer_beside(model); `required`: an error when there is none. Throws nf::Error when the tokenizer has ids the model has not.
LoadedModel load_model_and_tokenizer(const GenerationFlags& flags, bool required);
// The same for a model already loaded from flags.model (an nf::Error when it is no DecoderLM).
LoadedModel load_model_and_tokenizer(const GenerationFlags& flags, bool required, const std::shared_ptr<models::Model>& model);

}  // namespace nf::cli
