// The generic keys of a transformers config.json (see pretrained_config_keys.h), taken from
// PretrainedConfig.__init__ (transformers 4.x, configuration_utils.py) and its generation defaults.
#include "formats/pretrained_config_keys.h"

#include <map>
#include <set>

#include "nanoformer/core/error.h"
#include "util/json_input.h"

namespace nf::formats {
namespace {

using Json = nlohmann::json;

// Keys that describe bookkeeping, outputs, tokens, tasks, training or generation only: any value.
const std::set<std::string> kIgnored = {
    // save_pretrained's bookkeeping and every model's common attributes
    "architectures", "model_type", "transformers_version", "_name_or_path", "name_or_path", "_commit_hash",
    "auto_map", "dtype", "torch_dtype", "use_bfloat16", "tf_legacy_loss", "torchscript", "return_dict",
    "output_hidden_states", "output_attentions", "attn_implementation", "_attn_implementation",
    "_attn_implementation_autoset", "experts_implementation", "chunk_size_feed_forward", "gradient_checkpointing",
    "use_cache", "initializer_range",
    // is_decoder only selects a causal mask inside encoder-decoder pairs; a decoder LM is causal anyway
    // (the encoder readers refuse it themselves)
    "is_decoder", "tie_encoder_decoder",
    // fine-tuning tasks and tokens
    "finetuning_task", "id2label", "label2id", "num_labels", "problem_type", "task_specific_params",
    "tokenizer_class", "prefix", "bos_token_id", "pad_token_id", "eos_token_id", "sep_token_id",
    "decoder_start_token_id",
    // the generation keys PretrainedConfig stored before GenerationConfig (_get_global_generation_defaults)
    "max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups",
    "diversity_penalty", "temperature", "top_k", "top_p", "typical_p", "repetition_penalty", "length_penalty",
    "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences",
    "output_scores", "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id",
    "remove_invalid_values", "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens"};

// Generic keys that change the architecture: accepted only at the value that leaves a plain model
// (null counts as absent), otherwise refused by name.
const std::map<std::string, Json> kArchitectural = {
    {"is_encoder_decoder", false}, {"add_cross_attention", false}, {"cross_attention_hidden_size", nullptr},
    {"pruned_heads", Json::object()}, {"per_layer_config", nullptr}};

}  // namespace

bool is_generic_pretrained_config_key(const std::string& key, const Json& value, const std::string& source) {
  if (kIgnored.count(key)) return true;
  const auto it = kArchitectural.find(key);
  if (it == kArchitectural.end()) return false;
  NF_CHECK(value.is_null() || value == it->second, source, ": config key '", key, "' is ", util::json_excerpt(value),
           ", which changes the architecture and is not supported (", it->second.dump(), ")");
  return true;
}

}  // namespace nf::formats
