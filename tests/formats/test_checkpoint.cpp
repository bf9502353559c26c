// Checkpoints: save -> load gives the same config and bit-identical logits (tied, untied, MoE);
// a missing, unexpected, mis-shaped or wrongly typed tensor is named in one error; a truncated
// file, a file without our metadata and a config with an unknown key are refused; a flipped bit in
// any tensor is refused naming the file and the tensor, and a file of format version 1 (written
// before checksums) still loads.
#include <filesystem>
#include <unistd.h>

#include "nanoformer/nanoformer.h"
#include "support/damaged_file.h"
#include "support/testing.h"

namespace nf::formats {
namespace {

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("nf_checkpoint_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

models::DecoderLMConfig tiny(const std::string& extra) {
  return models::parse_model_config(R"({"vocab_size": 32, "dim": 16, "n_layers": 2, "n_heads": 4, "max_seq_len": 8, )" + extra +
                            "}");
}

Tensor ids() { return Tensor::of({1, 5, 7, 2, 31, 0, 9, 4}, {1, 8}, DType::i64); }

using Metadata = std::map<std::string, std::string>;

// Saves `model`'s checkpoint, then rewrites it with `edit` applied to its tensors and metadata.
void write_edited(const models::DecoderLM& model, const std::string& path,
                  const std::function<void(std::vector<nn::NamedTensor>&, Metadata&)>& edit) {
  save_checkpoint(model, path);
  std::vector<nn::NamedTensor> tensors;
  Metadata metadata;
  {
    const io::SafetensorsFile file = io::SafetensorsFile::open(path);
    for (const auto& e : file.entries()) tensors.emplace_back(e.name, file.load(e.name));
    metadata = file.metadata();
  }
  edit(tensors, metadata);
  io::save_safetensors(path, tensors, metadata);
}

TEST_F(CheckpointTest, RoundTripGivesIdenticalLogits) {
  const char* variants[] = {
      R"("name": "tied")",
      R"("tie_embeddings": false, "norm": "rmsnorm_no_weight", "embedding_norm": true, "position": "rope",
         "logit_softcap": 15.0, "mlp": "relu2")",
      R"("mlp": "swiglu", "position": "sinusoidal", "moe": {"n_experts": 3, "top_k": 2, "n_shared_experts": 1})",
  };
  for (const char* extra : variants) {
    models::DecoderLM model(tiny(extra));
    model.eval();
    save_checkpoint(model, path("model.safetensors"));
    EXPECT_EQ(model_config_to_json(read_checkpoint_config(path("model.safetensors"))),
              models::model_config_to_json(model.config()));
    const auto loaded = model_as<models::DecoderLM>(load_checkpoint(path("model.safetensors")), "checkpoint");
    loaded->eval();
    EXPECT_TENSOR_CLOSE(loaded->forward(ids()).logits, model.forward(ids()).logits, 0.0, 0.0);
  }
}

TEST_F(CheckpointTest, BadTensorsAreAllNamedInOneError) {
  models::DecoderLM model(tiny(R"("tie_embeddings": false)"));
  write_edited(model, path("bad.safetensors"), [](std::vector<nn::NamedTensor>& t, Metadata&) {
    std::erase_if(t, [](const nn::NamedTensor& e) { return e.first == "layers.1.attn.k_proj.weight"; });
    for (auto& [name, tensor] : t)
      if (name == "norm.weight") tensor = zeros({17});
    t.emplace_back("layers.9.attn.q_proj.weight", zeros({2, 2}));
  });
  EXPECT_THROW_WITH(load_checkpoint(path("bad.safetensors")), path("bad.safetensors"),
                    "missing (1): layers.1.attn.k_proj.weight", "unexpected (1): layers.9.attn.q_proj.weight",
                    "mis-shaped (1): norm.weight");
}

TEST_F(CheckpointTest, WrongDtypeIsNamed) {
  models::DecoderLM model(tiny(R"("name": "x")"));
  write_edited(model, path("f64.safetensors"), [](std::vector<nn::NamedTensor>& t, Metadata&) {
    for (auto& [name, tensor] : t)
      if (name == "norm.bias") tensor = tensor.to(DType::f64);
  });
  EXPECT_THROW_WITH(load_checkpoint(path("f64.safetensors")), "wrong dtype", "norm.bias (F64, expected F32)");
}

TEST_F(CheckpointTest, TruncatedFileIsRefused) {
  models::DecoderLM model(tiny(R"("name": "x")"));
  save_checkpoint(model, path("cut.safetensors"));
  std::filesystem::resize_file(path("cut.safetensors"), std::filesystem::file_size(path("cut.safetensors")) - 100);
  EXPECT_THROW_WITH(load_checkpoint(path("cut.safetensors")), path("cut.safetensors"));
}

TEST_F(CheckpointTest, ForeignFilesAndBadConfigsAreRefused) {
  models::DecoderLM model(tiny(R"("name": "x")"));
  save_module(model, path("plain.safetensors"));
  EXPECT_THROW_WITH(load_checkpoint(path("plain.safetensors")), "not a nanoformer checkpoint", "format");
  write_edited(model, path("badconfig.safetensors"), [](std::vector<nn::NamedTensor>&, Metadata& metadata) {
    metadata["config"] = R"({"vocab_size": 32, "dim": 16, "n_layers": 2, "n_heads": 4, "max_seq_len": 8, "rope": 1})";
  });
  EXPECT_THROW_WITH(load_checkpoint(path("badconfig.safetensors")), "badconfig.safetensors: config",
                    "unknown key 'rope'");
}

TEST_F(CheckpointTest, AConfigLargerThanTheFileIsRefusedBeforeTheModelIsBuilt) {
  models::DecoderLM model(tiny(R"("name": "x")"));
  write_edited(model, path("huge.safetensors"), [](std::vector<nn::NamedTensor>&, Metadata& metadata) {
    metadata["config"] = R"({"vocab_size": 1000000, "dim": 1000000, "n_layers": 2, "n_heads": 4, "max_seq_len": 8})";
  });
  EXPECT_THROW_WITH(load_checkpoint(path("huge.safetensors")), "huge.safetensors",
                    "its config describes 25000036000000 parameters, but the file holds only");
  write_edited(model, path("beyond.safetensors"), [](std::vector<nn::NamedTensor>&, Metadata& metadata) {
    metadata["config"] = R"({"vocab_size": 100000000, "dim": 100000000, "n_layers": 2, "n_heads": 4, "max_seq_len": 8})";
  });
  EXPECT_THROW_WITH(load_checkpoint(path("beyond.safetensors")), "beyond.safetensors: config",
                    "more than the 1e15 any model here can hold");
  write_edited(model, path("seq2seq.safetensors"), [](std::vector<nn::NamedTensor>&, Metadata& metadata) {
    metadata["config"] = R"({"architecture": "encoder_decoder", "src_vocab_size": 16000000, "tgt_vocab_size": 16000000,
                             "dim": 1024, "n_encoder_layers": 2, "n_decoder_layers": 2, "n_heads": 4, "max_seq_len": 8})";
  });
  EXPECT_THROW_WITH(load_checkpoint(path("seq2seq.safetensors")), "seq2seq.safetensors", "its config describes",
                    "but the file holds only");
}

TEST_F(CheckpointTest, AFlippedBitIsRefusedNamingTheTensor) {
  models::DecoderLM model(tiny(R"("tie_embeddings": false)"));
  save_checkpoint(model, path("model.safetensors"));
  ASSERT_NO_THROW(load_checkpoint(path("model.safetensors")));
  testing::flip_lowest_bit(path("model.safetensors"), "layers.1.attn.q_proj.weight", 17);
  EXPECT_THROW_WITH(load_checkpoint(path("model.safetensors")), path("model.safetensors"),
                    "tensor 'layers.1.attn.q_proj.weight' does not match its checksum", "damaged");
}

TEST_F(CheckpointTest, VersionOneFilesLoadWithoutChecksumsVersionTwoNeedThem) {
  models::DecoderLM model(tiny(R"("name": "old")"));
  model.eval();
  write_edited(model, path("v1.safetensors"), [](std::vector<nn::NamedTensor>&, Metadata& metadata) {
    metadata["format_version"] = "1";
    metadata.erase("checksums");
  });
  const auto loaded = load_checkpoint(path("v1.safetensors"));
  loaded->eval();
  EXPECT_TENSOR_CLOSE(model_as<models::DecoderLM>(loaded, "v1")->forward(ids()).logits, model.forward(ids()).logits, 0.0, 0.0);
  write_edited(model, path("stripped.safetensors"),
               [](std::vector<nn::NamedTensor>&, Metadata& metadata) { metadata.erase("checksums"); });
  EXPECT_THROW_WITH(load_checkpoint(path("stripped.safetensors")), "stripped.safetensors", "no checksums");
  write_edited(model, path("v3.safetensors"),
               [](std::vector<nn::NamedTensor>&, Metadata& metadata) { metadata["format_version"] = "3"; });
  EXPECT_THROW_WITH(load_checkpoint(path("v3.safetensors")), "format_version '3' is not supported");
}

}  // namespace
}  // namespace nf::formats
