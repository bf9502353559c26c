// A sharded Hugging Face folder: the input is its model.safetensors.index.json, beside a valid
// config.json and two valid shards of a tiny GPT-2 (made once per process). Loading succeeds or
// ends in an nf::Error naming the folder (the index or a shard in it).
#include <filesystem>
#include <fstream>

#include "fuzz_support.h"
#include "nanoformer/formats/hf_checkpoint.h"
#include "nanoformer/io/safetensors.h"

using namespace nf;
using namespace nf::models;
namespace fs = std::filesystem;

namespace {

// The tiny GPT-2 saved as a Hugging Face folder, then its tensors split over two shards.
const fs::path& folder() {
  static const fs::path dir = [] {
    const fs::path d = fuzz::scratch_directory("shards");
    DecoderLM model(parse_model_config(
        R"({"vocab_size": 16, "dim": 8, "n_layers": 1, "n_heads": 2, "max_seq_len": 4, "tie_embeddings": false})"));
    formats::save_hf(model, d.string());
    const io::SafetensorsFile whole = io::SafetensorsFile::open((d / "model.safetensors").string());
    std::vector<nn::NamedTensor> shards[2];
    size_t i = 0;
    for (const io::TensorEntry& e : whole.entries()) shards[i++ % 2].emplace_back(e.name, whole.load(e.name));
    io::save_safetensors((d / "model-00001-of-00002.safetensors").string(), shards[0]);
    io::save_safetensors((d / "model-00002-of-00002.safetensors").string(), shards[1]);
    fs::remove(d / "model.safetensors");
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path& dir = folder();
  {
    std::ofstream index(dir / "model.safetensors.index.json", std::ios::binary | std::ios::trunc);
    index.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  fuzz::expect_nf_error_naming(dir.string(), [&] { (void)formats::load_hf(dir.string()); });
  return 0;
}
