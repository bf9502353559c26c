// Foreign config readers and transformers' generic PretrainedConfig keys: every reader of a
// config.json written by transformers (GPT-2, LLaMA, BERT, ViT, MiniMind's two forms) gives the same
// model with and without the keys any PretrainedConfig may carry (the generation keys of older
// versions, labels, output flags, bookkeeping); a generic key whose value would change the
// architecture is refused by name; our own config format stays strict.
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "nanoformer/nanoformer.h"
#include "support/testing.h"

namespace nf::formats {
namespace {

using Json = nlohmann::json;

std::string fixture_config(const std::string& folder) {
  std::ifstream in(std::string(NF_TEST_DATA_DIR) + "/" + folder + "/config.json");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// What PretrainedConfig.to_dict() of transformers 4.x adds to every model's config, with its defaults
// (and a classifier's labels), as config.json files written by those versions carry them.
const Json kGenericKeys = Json::parse(R"({
  "return_dict": true, "output_hidden_states": false, "output_attentions": false, "torchscript": false,
  "torch_dtype": "float32", "use_bfloat16": false, "tf_legacy_loss": false, "pruned_heads": {},
  "chunk_size_feed_forward": 0, "is_encoder_decoder": false, "is_decoder": false,
  "cross_attention_hidden_size": null, "tie_encoder_decoder": false,
  "max_length": 20, "min_length": 0, "do_sample": false, "early_stopping": false, "num_beams": 1,
  "num_beam_groups": 1, "diversity_penalty": 0.0, "temperature": 1.0, "top_k": 50, "top_p": 1.0,
  "typical_p": 1.0, "repetition_penalty": 1.0, "length_penalty": 1.0, "no_repeat_ngram_size": 0,
  "encoder_no_repeat_ngram_size": 0, "bad_words_ids": null, "num_return_sequences": 1,
  "output_scores": false, "return_dict_in_generate": false, "forced_bos_token_id": null,
  "forced_eos_token_id": null, "remove_invalid_values": false, "exponential_decay_length_penalty": null,
  "suppress_tokens": null, "begin_suppress_tokens": null,
  "finetuning_task": null, "id2label": {"0": "LABEL_0", "1": "LABEL_1"}, "label2id": {"LABEL_0": 0, "LABEL_1": 1},
  "tokenizer_class": null, "prefix": null, "sep_token_id": null, "decoder_start_token_id": null,
  "task_specific_params": null, "problem_type": null, "_name_or_path": "", "_commit_hash": null,
  "_attn_implementation_autoset": true, "transformers_version": "4.48.0", "gradient_checkpointing": false
})");

struct Reader {
  const char* folder;
  std::function<std::string(const std::string&)> parse;  // config.json -> our config's JSON
};

const Reader kReaders[] = {
    {"hf/gpt2", [](const std::string& t) { return model_config_to_json(config_from_hf_json(t, "config.json")); }},
    {"hf/llama_gqa", [](const std::string& t) { return model_config_to_json(config_from_hf_json(t, "config.json")); }},
    {"hf/bert",
     [](const std::string& t) { return encoder_config_to_json(encoder_config_from_bert_json(t, "config.json")); }},
    {"hf/vit", [](const std::string& t) { return vit_config_to_json(vit_config_from_hf_json(t, "config.json")); }},
    {"minimind/dense",
     [](const std::string& t) { return model_config_to_json(config_from_minimind_json(t, "config.json")); }},
    {"minimind_hf/dense",
     [](const std::string& t) { return model_config_to_json(config_from_minimind_hf_json(t, "config.json")); }},
};

// The fixture's config with `extra` merged in (the fixture's own keys win).
std::string with_keys(const std::string& folder, const Json& extra) {
  Json j = extra;
  j.update(Json::parse(fixture_config(folder)));
  return j.dump();
}

TEST(ForeignConfigKeys, GenericPretrainedConfigKeysAreIgnoredByEveryReader) {
  for (const Reader& r : kReaders) {
    const std::string plain = r.parse(fixture_config(r.folder));
    try {
      EXPECT_EQ(r.parse(with_keys(r.folder, kGenericKeys)), plain) << r.folder;
    } catch (const Error& e) {
      ADD_FAILURE() << r.folder << ": " << e.what();
    }
  }
}

TEST(ForeignConfigKeys, GenericKeysThatChangeTheArchitectureAreRefusedByName) {
  const std::pair<const char*, Json> cases[] = {{"is_encoder_decoder", true},
                                                {"add_cross_attention", true},
                                                {"cross_attention_hidden_size", 8},
                                                {"pruned_heads", {{"0", {1}}}},
                                                {"per_layer_config", {{"0", {{"hidden_size", 8}}}}}};
  for (const Reader& r : kReaders)
    for (const auto& [key, value] : cases) {
      Json j = Json::parse(fixture_config(r.folder));
      j[key] = value;
      EXPECT_THROW_WITH(r.parse(j.dump()), "config.json", std::string("'") + key + "'", "changes the architecture")
          << r.folder << " " << key;
    }
}

TEST(ForeignConfigKeys, OurOwnConfigStaysStrict) {
  Json ours = Json::parse(model_config_to_json(config_from_hf_json(fixture_config("hf/llama_gqa"), "config.json")));
  ours["num_beams"] = 1;
  EXPECT_THROW_WITH(models::parse_model_config(ours.dump(), "model.json"), "model.json", "unknown key 'num_beams'");
}

}  // namespace
}  // namespace nf::formats
