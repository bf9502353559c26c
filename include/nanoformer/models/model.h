#pragma once
// Model: what every model class shares, so that checkpoints, format conversion and the CLI treat
// all architectures alike. A model's config is one JSON object whose "architecture" key names the
// class that builds it:
//   "decoder_lm"       DecoderLM (decoder_lm.h): GPT-2, MiniMind2, nanochat, LLaMA / llama2.c;
//                      the default when the key is absent
//   "encoder"          an encoder-only stack (BERT-style)
//   "encoder_decoder"  EncoderDecoder (encoder_decoder.h): the encoder-decoder Transformer (001, 004)
//   "vit"              a ViT image classifier
// Each class derives from Model and declares `static constexpr const char* kArchitecture`.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nanoformer/core/error.h"
#include "nanoformer/core/generator.h"
#include "nanoformer/nn/module.h"

namespace nf::models {

// One line of a parameter table: a part ("embedding", "attention", ...) and its exact count.
struct ParameterPart {
  std::string name;
  int64_t count = 0;
};

class Model : public nn::Module {
 public:
  using nn::Module::Module;
  // The config's "architecture" value.
  virtual std::string architecture() const = 0;
  // The config as JSON text with every key and the "architecture" key: build_model gives this
  // architecture back with the same shapes.
  virtual std::string config_json() const = 0;
  // Exact parameter counts by part, in reading order; they sum to num_parameters().
  virtual std::vector<ParameterPart> parameter_parts() const = 0;
  // The most tokens one input holds (max_seq_len; a ViT's patches + 1).
  virtual int64_t max_context() const = 0;
  // The weights of a head tied to an embedding (it multiplies every output token, yet is no
  // Linear module); 0 when the head is its own Linear or absent.
  virtual int64_t tied_head_weights() const { return 0; }
};

// The architectures build_model knows.
const std::vector<std::string>& architectures();
// The config's "architecture" value ("decoder_lm" when the key is absent); throws naming `source`
// and the value when it is no known architecture.
std::string config_architecture(const std::string& json_text, const std::string& source);
// A freshly initialised model of the architecture the config names (errors name `source`).
std::shared_ptr<Model> build_model(const std::string& json_text, const std::string& source, Generator& gen);
// The exact parameter count of the model the config describes, without building it.
int64_t config_parameter_count(const std::string& json_text, const std::string& source);
// The same from a config file path or a preset name.
std::shared_ptr<Model> build_model_from(const std::string& name_or_path, Generator& gen);
// The preset names (model_config.h's preset_names()) whose config has this "architecture".
std::vector<std::string> preset_names_of(const std::string& architecture);

[[noreturn]] void throw_wrong_architecture(const Model& model, const std::string& source, const char* wanted);

// `model` as the class M, or an nf::Error naming `source`, its architecture and M's.
template <class M>
std::shared_ptr<M> model_as(const std::shared_ptr<Model>& model, const std::string& source) {
  if (auto m = std::dynamic_pointer_cast<M>(model)) return m;
  throw_wrong_architecture(*model, source, M::kArchitecture);
}

}  // namespace nf::models
