#pragma once
// Helpers shared by the readers and writers of other implementations' model folders (Hugging Face,
// MiniMind, nanochat): JSON config keys with errors naming the key, and the tensors of a folder
// (one safetensors file, or shards listed by an index). Internal to src/formats.
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "nanoformer/core/error.h"
#include "nanoformer/core/tensor.h"
#include "nanoformer/nn/module.h"

namespace nf::formats {

using Json = nlohmann::json;

// The file names of a Hugging Face style folder (also MiniMind's).
constexpr const char* kConfigFile = "config.json";
constexpr const char* kWeightsFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";
constexpr const char* kTorchWeightsFile = "pytorch_model.bin";  // transformers' torch.save form

std::string read_text(const std::filesystem::path& path);
// Writes `text` to path.tmp and renames it into place.
void write_text_atomic(const std::filesystem::path& path, const std::string& text);
// Parses a JSON object; errors name `source`.
Json parse_json_object(const std::string& text, const std::string& source);

// Config keys; every error names `source` and the key.
const Json& required(const Json& j, const std::string& key, const std::string& source);
int64_t int_key(const Json& j, const std::string& key, const std::string& source);
int64_t int_key(const Json& j, const std::string& key, int64_t fallback, const std::string& source);  // absent/null: fallback
double number_key(const Json& j, const std::string& key, double fallback, const std::string& source);
bool bool_key(const Json& j, const std::string& key, bool fallback, const std::string& source);
// Runs fn, which reads a config's JSON: a nlohmann exception (a key of an unexpected type, say)
// becomes an nf::Error naming `source`.
template <class F>
auto with_json_errors(const std::string& source, F&& fn) {
  try {
    return fn();
  } catch (const Json::exception& e) {
    NF_FAIL(source, ": ", e.what());
  }
}

// Every key of `j` is in `mapped` (read by the family's reader, which checks its value) or is one of
// transformers' generic PretrainedConfig keys (pretrained_config_keys.h: ignored, or refused by name
// where its value changes the architecture); otherwise an error naming the first unknown key and `family`.
void check_known_keys(const Json& j, const std::set<std::string>& mapped, const std::string& family,
                      const std::string& source);

// The tensors of `dir`/`weights_file`, or, when that file is absent, of the shards that
// `dir`/`index_file` lists ({"weight_map": {tensor: shard}}): a missing shard, a tensor listed
// twice, a tensor in two shards or in a shard other than its listed one are errors naming them.
// Views into the mapped files. Without either, a PyTorch checkpoint (io/torch_checkpoint.h):
// pytorch_model.bin (transformers' older form), or the folder's only *.pth file (MiniMind's
// weights, e.g. full_sft_512.pth), read into owned tensors.
std::map<std::string, Tensor> read_folder_tensors(const std::filesystem::path& dir, const std::string& weights_file,
                                                  const std::string& index_file);
// The PyTorch checkpoint read_folder_tensors falls back to ("" when none): see above.
std::string torch_weights_in(const std::filesystem::path& dir);

// Writes `tensors` (f32) into `dir` as transformers' save_pretrained(max_shard_size=...) does: one
// model.safetensors when max_shard_bytes is 0 or they fit, else shards model-0000K-of-0000N.safetensors
// (filled in order; a new shard starts where the next tensor would pass max_shard_bytes, a tensor
// larger than that alone in its shard) and model.safetensors.index.json ({"metadata": {"total_size":
// bytes}, "weight_map": {tensor: shard}}). Every file is written atomically; afterwards the files of
// an earlier save that the new one does not use (model.safetensors, the index, other shards) are removed.
void write_folder_tensors(const std::filesystem::path& dir, const std::vector<nn::NamedTensor>& tensors,
                          int64_t max_shard_bytes);

}  // namespace nf::formats
