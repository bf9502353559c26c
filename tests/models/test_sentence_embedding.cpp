// Sentence embeddings (models/sentence_embedding.h) against sentence-transformers' own Pooling and
// Normalize modules over transformers' base models (tools/golden/sentence_embedding_fixtures.py):
// BertModel with mean, cls, max and last-token pooling, and mean then normalised; LlamaModel (the
// decoder without its head) with last-token and mean pooling, normalised. And a sentence-transformers
// folder's modules read as sentence-transformers reads them (formats/sentence_transformers.h), what
// it cannot express refused by name.
#include "nanoformer/models/sentence_embedding.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "nanoformer/formats/model_io.h"
#include "nanoformer/formats/sentence_transformers.h"
#include "nanoformer/io/safetensors.h"
#include "nanoformer/tokenizer/tokenizer.h"
#include "support/interop_test_support.h"
#include "support/testing.h"

namespace nf::models {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) { return std::string(NF_TEST_DATA_DIR) + "/hf/" + name; }

// The fixture's rows, each cut to its real tokens.
std::vector<std::vector<int64_t>> fixture_inputs(const std::map<std::string, Tensor>& f) {
  const auto ids = f.at("ids").to_vector<int64_t>(), mask = f.at("mask").to_vector<int64_t>();
  const int64_t rows = f.at("ids").size(0), T = f.at("ids").size(1);
  std::vector<std::vector<int64_t>> inputs(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t < T; ++t)
      if (mask[static_cast<size_t>(r * T + t)]) inputs[static_cast<size_t>(r)].push_back(ids[static_cast<size_t>(r * T + t)]);
  return inputs;
}

// The largest |ours - theirs| over every row.
double max_error(const std::vector<std::vector<float>>& ours, const Tensor& expected) {
  const auto theirs = expected.to_vector<float>();
  const auto width = static_cast<size_t>(expected.size(1));
  EXPECT_EQ(ours.size(), static_cast<size_t>(expected.size(0)));
  double worst = 0;
  for (size_t r = 0; r < ours.size(); ++r) {
    EXPECT_EQ(ours[r].size(), width);
    for (size_t d = 0; d < width && d < ours[r].size(); ++d)
      worst = std::max(worst, static_cast<double>(std::abs(ours[r][d] - theirs[r * width + d])));
  }
  return worst;
}

TEST(SentenceEmbedding, EncoderPoolingsEqualSentenceTransformers) {
  const auto f = io::load_safetensors(fixture("sentence_embedding.safetensors"));
  const auto inputs = fixture_inputs(f);
  const auto bert = formats::load_model(fixture("bert"));
  EXPECT_EQ(embedding_width(*bert), 32);
  for (const auto& [mode, pooling] : {std::pair{"mean", Pooling::mean}, std::pair{"cls", Pooling::cls},
                                      std::pair{"max", Pooling::max}, std::pair{"lasttoken", Pooling::last}}) {
    const double error = max_error(embed(*bert, inputs, {.pooling = pooling, .normalize = false, .max_tokens = 0}),
                                   f.at(std::string("encoder.") + mode));
    std::cout << "encoder " << mode << ": max abs error vs sentence-transformers " << error << "\n";
    EXPECT_LE(error, 1e-5) << mode;
  }
  const double error = max_error(embed(*bert, inputs, {.pooling = Pooling::mean, .normalize = true, .max_tokens = 0}),
                                 f.at("encoder.mean_normalized"));
  std::cout << "encoder mean, normalised: " << error << "\n";
  EXPECT_LE(error, 1e-6);
}

TEST(SentenceEmbedding, DecoderPoolingsEqualTheBaseModelsHiddenStatesPooled) {
  const auto f = io::load_safetensors(fixture("sentence_embedding.safetensors"));
  const auto inputs = fixture_inputs(f);
  const auto llama = formats::load_model(fixture("llama_gqa"));
  for (const auto& [mode, pooling] : {std::pair{"lasttoken", Pooling::last}, std::pair{"mean", Pooling::mean}}) {
    const double error = max_error(embed(*llama, inputs, {.pooling = pooling, .normalize = true, .max_tokens = 0}),
                                   f.at(std::string("decoder.") + mode + "_normalized"));
    std::cout << "decoder " << mode << ", normalised: max abs error " << error << "\n";
    EXPECT_LE(error, 1e-5) << mode;
  }
}

TEST(SentenceEmbedding, BadInputIsNamed) {
  const auto bert = formats::load_model(fixture("bert"));
  const SentenceEmbedding o{.pooling = Pooling::mean, .normalize = true, .max_tokens = 4};
  EXPECT_THROW_WITH(embed(*bert, std::vector<std::vector<int64_t>>{{1, 2}, {}}, o), "input 1 has no tokens");
  EXPECT_THROW_WITH(embed(*bert, std::vector<std::vector<int64_t>>{{1, 2, 3, 4, 5}}, o),
                    "input 0 is 5 tokens, over the model's limit of 4");
  EXPECT_THROW_WITH(embed(*bert, std::vector<std::vector<int64_t>>{{1, 64}}, o), "token id 64, outside the vocabulary of 64");
  EXPECT_THROW_WITH(pooling_from_name("sum"), "--pooling 'sum'", "mean, cls, last and max");
  EXPECT_EQ(pooling_from_name("last"), Pooling::last);
}

class SentenceTransformersFolder : public testing::TempDirTest {
 protected:
  // tests/fixtures/hf/bert's weights with the sentence-transformers files beside them.
  std::string sentence_folder() const {
    const std::string dir = path("sentence_bert");
    fs::copy(fixture("sentence_bert"), dir, fs::copy_options::recursive);
    for (const char* file : {"config.json", "model.safetensors"}) fs::copy(fixture("bert") + "/" + file, dir + "/" + file);
    return dir;
  }
};

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::trunc) << text; }

TEST_F(SentenceTransformersFolder, ModulesAreReadAsSentenceTransformersReadsThem) {
  const std::string dir = sentence_folder();
  const auto o = formats::read_sentence_transformers(dir);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->pooling, Pooling::mean);
  EXPECT_TRUE(o->normalize);
  EXPECT_EQ(o->max_tokens, 12);
  EXPECT_FALSE(formats::read_sentence_transformers(fixture("bert")).has_value());  // a plain folder

  // the older file: one boolean per mode (all-MiniLM-L6-v2's), none set meaning mean
  write_text(dir + "/1_Pooling/config.json", R"({"word_embedding_dimension": 32, "pooling_mode_cls_token": true,
      "pooling_mode_mean_tokens": false, "pooling_mode_max_tokens": false})");
  EXPECT_EQ(formats::read_sentence_transformers(dir)->pooling, Pooling::cls);
  write_text(dir + "/1_Pooling/config.json", R"({"word_embedding_dimension": 32})");
  EXPECT_EQ(formats::read_sentence_transformers(dir)->pooling, Pooling::mean);
  write_text(dir + "/1_Pooling/config.json", R"({"pooling_mode": ["lasttoken"]})");
  EXPECT_EQ(formats::read_sentence_transformers(dir)->pooling, Pooling::last);

  write_text(dir + "/1_Pooling/config.json", R"({"pooling_mode": "weightedmean"})");
  EXPECT_THROW_WITH(formats::read_sentence_transformers(dir), "config.json", "pooling mode 'weightedmean' is not supported");
  write_text(dir + "/1_Pooling/config.json", R"({"pooling_mode": ["mean", "max"]})");
  EXPECT_THROW_WITH(formats::read_sentence_transformers(dir), "one mode is supported, not several");
  write_text(dir + "/1_Pooling/config.json", R"({"pooling_mode_cls_token": true, "pooling_mode_max_tokens": true})");
  EXPECT_THROW_WITH(formats::read_sentence_transformers(dir), "several pooling modes at once (cls, max)");
  write_text(dir + "/1_Pooling/config.json", R"({"pooling_mode_cls_token": 1})");
  EXPECT_THROW_WITH(formats::read_sentence_transformers(dir), "pooling_mode_cls_token must be true or false");
  write_text(dir + "/1_Pooling/config.json", R"({"pooling_mode": "mean"})");

  write_text(dir + "/sentence_bert_config.json", R"({"max_seq_length": -3})");
  EXPECT_THROW_WITH(formats::read_sentence_transformers(dir), "sentence_bert_config.json", "max_seq_length must be a positive integer");
  write_text(dir + "/sentence_bert_config.json", R"({"max_seq_length": 8, "do_lower_case": true})");
  EXPECT_THROW_WITH(formats::read_sentence_transformers(dir), "do_lower_case true is not supported");
  write_text(dir + "/sentence_bert_config.json", R"({"max_seq_length": 8})");

  write_text(dir + "/modules.json", R"([{"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"},
      {"idx": 1, "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
      {"idx": 2, "path": "2_Dense", "type": "sentence_transformers.models.Dense"}])");
  EXPECT_THROW_WITH(formats::read_sentence_transformers(dir), "modules.json [2]", "'sentence_transformers.models.Dense' is not supported");
  write_text(dir + "/modules.json", R"([{"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"}])");
  EXPECT_THROW_WITH(formats::read_sentence_transformers(dir), "modules.json: no Pooling module");
  write_text(dir + "/modules.json", "{}");
  EXPECT_THROW_WITH(formats::read_sentence_transformers(dir), "modules.json: must be a non-empty JSON array");
  // a path that is not a string escaped as nlohmann's type_error (fuzz_sentence_transformers)
  write_text(dir + "/modules.json", R"([{"type": "Transformer"}, {"type": "Pooling", "path": ["1_Pooling"]}])");
  EXPECT_THROW_WITH(formats::read_sentence_transformers(dir), "modules.json [1]: \"path\" must be a string, got [\"1_Pooling\"]");
}

// The text parsers behind the folder reader (fuzz/fuzz_sentence_transformers.cpp): a module's "path"
// that is not a string escaped as nlohmann's type_error; bad JSON is refused naming the file.
TEST(SentenceTransformersText, ModulesPoolingAndBertConfigParseFromText) {
  const auto m = formats::parse_sentence_transformers_modules(tokenizer::read_file(fixture("sentence_bert") + "/modules.json"), "modules.json");
  EXPECT_EQ(m.pooling_path, "1_Pooling");
  EXPECT_TRUE(m.normalize);
  EXPECT_EQ(formats::parse_sentence_transformers_pooling(R"({"pooling_mode": "max"})", "p.json"), Pooling::max);
  EXPECT_EQ(formats::parse_sentence_bert_config(R"({"max_seq_length": 256, "do_lower_case": false})", "s.json"), 256);
  EXPECT_EQ(formats::parse_sentence_bert_config(R"({"max_seq_length": null})", "s.json"), 0);
  EXPECT_THROW_WITH(formats::parse_sentence_transformers_modules(R"([{"type": "Transformer", "path": 0}])", "modules.json"),
                    "modules.json [0]: \"path\" must be a string, got 0");
  EXPECT_THROW_WITH(formats::parse_sentence_transformers_modules("[{", "modules.json"), "modules.json: not valid JSON");
  EXPECT_THROW_WITH(formats::parse_sentence_transformers_pooling("[", "p.json"), "p.json: not valid JSON");
}

}  // namespace
}  // namespace nf::models
