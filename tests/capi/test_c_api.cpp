// The C API (include/nanoformer/c_api.h), each function against the C++ library it wraps: the
// same ids, logits, embeddings and greedy text bit for bit; the two-call buffer convention; the
// statuses and one-line messages of bad input; streaming that a callback stops; grammars; and a
// session whose second turn computes only its new messages.
#include "nanoformer/c_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "apps/tiny_chat_model.h"
#include "nanoformer/infer/loaded_model.h"
#include "nanoformer/infer/session.h"
#include "nanoformer/infer/text_streamer.h"
#include "nanoformer/models/sentence_embedding.h"
#include "nanoformer/tokenizer/chat_template.h"
#include "support/temp_dir.h"

namespace nf {
namespace {

// A tiny chat model (ChatML specials) in a folder of its own, loaded through the C API and the C++ library.
class CApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::save_tiny_chat_model(dir_.file("chat"));
    path_ = dir_.file("chat/model.safetensors");  // its tokenizer.json beside it
    ASSERT_EQ(nf_model_load(path_.c_str(), nullptr, 0, &model_), NF_OK) << nf_last_error();
    cpp_ = infer::with_tokenizer(formats::load_model(path_), path_, "", true);
    cpp_.model->eval();
  }
  void TearDown() override { nf_model_free(model_); }

  std::vector<int64_t> tokenize(const std::string& text, int add_bos = 0) {
    size_t count = 0;
    EXPECT_EQ(nf_tokenize(model_, text.data(), text.size(), add_bos, nullptr, 0, &count),
              text.empty() ? NF_OK : NF_ERROR_BUFFER_TOO_SMALL);
    std::vector<int64_t> ids(count);
    EXPECT_EQ(nf_tokenize(model_, text.data(), text.size(), add_bos, ids.data(), ids.size(), &count), NF_OK) << nf_last_error();
    return ids;
  }

  testing::TempDir dir_;
  std::string path_;
  nf_model* model_ = nullptr;
  infer::LoadedModel cpp_;
};

struct Collected {
  std::string text;
  std::vector<int64_t> tokens;
  int stop_after = -1;  // pieces before the callback asks to stop (-1: never)
};

int collect(const char* piece, size_t length, int64_t token, void* user_data) {
  auto& c = *static_cast<Collected*>(user_data);
  c.text.append(piece, length);
  c.tokens.push_back(token);
  return c.stop_after >= 0 && static_cast<int>(c.tokens.size()) >= c.stop_after;
}

TEST(CApi, VersionsAndErrorsOfLoading) {
  EXPECT_STREQ(nf_version(), NANOFORMER_TEST_VERSION);
  EXPECT_EQ(nf_api_version(), NF_API_VERSION_MAJOR * 1000 + NF_API_VERSION_MINOR);
  nf_model* model = reinterpret_cast<nf_model*>(0x1);
  EXPECT_EQ(nf_model_load("/nonexistent/model.gguf", nullptr, 0, &model), NF_ERROR_LOAD);
  EXPECT_EQ(model, nullptr);
  EXPECT_NE(std::string(nf_last_error()).find("/nonexistent/model.gguf"), std::string::npos) << nf_last_error();
  EXPECT_EQ(std::string(nf_last_error()).find('\n'), std::string::npos);
  EXPECT_EQ(nf_model_load(nullptr, nullptr, 0, &model), NF_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(nf_last_error()).find("nf_model_load: the path"), std::string::npos);
  EXPECT_EQ(nf_model_load("gpt-mini", nullptr, -1, &model), NF_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(nf_last_error()).find("threads must be >= 0, got -1"), std::string::npos);
  // a preset without a tokenizer loads; its text calls are unsupported, its forward works
  ASSERT_EQ(nf_model_load("gpt-mini", nullptr, 0, &model), NF_OK) << nf_last_error();
  size_t count = 0;
  EXPECT_EQ(nf_tokenize(model, "a", 1, 0, nullptr, 0, &count), NF_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(nf_last_error()).find("nf_tokenize: the model has no tokenizer"), std::string::npos);
  nf_model_free(model);
  nf_model_free(nullptr);
  EXPECT_EQ(nf_model_vocab_size(nullptr), 0);
}

TEST_F(CApiTest, SizesAndEndIds) {
  EXPECT_EQ(nf_model_vocab_size(model_), cpp_.model->config().vocab_size);
  EXPECT_EQ(nf_model_context_length(model_), cpp_.model->config().max_seq_len);
  EXPECT_EQ(nf_model_embedding_size(model_), cpp_.model->config().dim);
  int64_t ids[4];
  size_t count = 0;
  ASSERT_EQ(nf_model_end_ids(model_, ids, 4, &count), NF_OK) << nf_last_error();
  EXPECT_EQ(std::vector<int64_t>(ids, ids + count), infer::default_end_ids(cpp_));
}

TEST_F(CApiTest, TokenizeAndDetokenizeAsTheTokenizerDoes) {
  const std::string text = "Hello, <|im_start|>world";
  const auto encoded = cpp_.tokenizer->encode(text);
  EXPECT_EQ(tokenize(text), std::vector<int64_t>(encoded.begin(), encoded.end()));
  // the two-call convention: the size first, nothing written when the buffer is short
  int64_t short_buffer[2] = {-7, -7};
  size_t count = 0;
  EXPECT_EQ(nf_tokenize(model_, text.data(), text.size(), 0, short_buffer, 2, &count), NF_ERROR_BUFFER_TOO_SMALL);
  EXPECT_EQ(count, encoded.size());
  EXPECT_EQ(short_buffer[0], -7);
  EXPECT_NE(std::string(nf_last_error()).find("needs " + std::to_string(encoded.size()) + " values"), std::string::npos);
  const std::vector<int64_t> ids = tokenize(text);
  char out[64];
  size_t length = 0;
  ASSERT_EQ(nf_detokenize(model_, ids.data(), ids.size(), out, sizeof out, &length), NF_OK) << nf_last_error();
  EXPECT_EQ(std::string(out, length), text);
  EXPECT_EQ(out[length], '\0');
  const int64_t bad[] = {1, 100000};
  EXPECT_EQ(nf_detokenize(model_, bad, 2, out, sizeof out, &length), NF_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(nf_last_error()).find("id 100000 (position 1)"), std::string::npos) << nf_last_error();
}

TEST_F(CApiTest, ChatTemplateAsTheLibraryRendersIt) {
  const nf_chat_message messages[] = {{"system", "Be brief."}, {"user", "Hi"}};
  size_t count = 0;
  ASSERT_EQ(nf_apply_chat_template(model_, messages, 2, nullptr, 1, nullptr, 0, &count), NF_ERROR_BUFFER_TOO_SMALL);
  std::vector<int64_t> ids(count);
  ASSERT_EQ(nf_apply_chat_template(model_, messages, 2, nullptr, 1, ids.data(), ids.size(), &count), NF_OK) << nf_last_error();
  const auto chat = tokenizer::make_chat_template(tokenizer::default_chat_template(*cpp_.tokenizer, cpp_.tokenizer_path),
                                                  *cpp_.tokenizer);
  const auto expected = chat->render_for_completion(std::vector<tokenizer::ChatMessage>{{"system", "Be brief."}, {"user", "Hi"}});
  EXPECT_EQ(ids, std::vector<int64_t>(expected.begin(), expected.end()));
  const nf_chat_message no_role[] = {{nullptr, "x"}};
  EXPECT_EQ(nf_apply_chat_template(model_, no_role, 1, nullptr, 1, ids.data(), ids.size(), &count), NF_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(nf_last_error()).find("message 0 has no role"), std::string::npos);
}

TEST_F(CApiTest, ForwardAndEmbedEqualTheLibraryBitForBit) {
  const std::vector<int64_t> ids = {72, 101, 108, 108, 111, 32, 33, 87};  // two rows of 4
  const auto vocab = static_cast<size_t>(nf_model_vocab_size(model_));
  std::vector<float> logits(2 * 4 * vocab);
  size_t count = 0;
  ASSERT_EQ(nf_forward(model_, ids.data(), 2, 4, logits.data(), logits.size(), &count), NF_OK) << nf_last_error();
  EXPECT_EQ(count, logits.size());
  NoGradGuard no_grad;
  const Tensor expected = cpp_.model->forward(Tensor::from_vector(ids, {2, 4})).logits.contiguous();
  EXPECT_EQ(std::memcmp(logits.data(), expected.data<float>(), logits.size() * sizeof(float)), 0);
  EXPECT_EQ(nf_forward(model_, ids.data(), 2, 4, logits.data(), 10, &count), NF_ERROR_BUFFER_TOO_SMALL);
  EXPECT_EQ(count, logits.size());
  EXPECT_EQ(nf_forward(model_, ids.data(), 0, 4, logits.data(), logits.size(), &count), NF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nf_forward(model_, ids.data(), 1, 100000, logits.data(), logits.size(), &count), NF_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(nf_last_error()).find("length 100000 exceeds the model's context 128"), std::string::npos)
      << nf_last_error();
  EXPECT_EQ(nf_forward(model_, ids.data(), SIZE_MAX / 2, 4, logits.data(), logits.size(), &count), NF_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(nf_last_error()).find("is too large"), std::string::npos) << nf_last_error();

  const std::string text = "a cat";
  std::vector<float> embedding(static_cast<size_t>(nf_model_embedding_size(model_)));
  ASSERT_EQ(nf_embed(model_, text.data(), text.size(), 1, embedding.data(), embedding.size(), &count), NF_OK) << nf_last_error();
  const auto encoded = cpp_.tokenizer->encode(text);
  const std::vector<std::vector<int64_t>> inputs{{encoded.begin(), encoded.end()}};
  EXPECT_EQ(embedding, models::embed(*cpp_.model, inputs, {})[0]);
}

TEST_F(CApiTest, GreedyGenerationEqualsTheSessionsAndStreams) {
  nf_generate_params params = nf_generate_default_params();
  params.temperature = 0;
  params.max_new_tokens = 12;
  Collected got;
  nf_generate_result result{};
  ASSERT_EQ(nf_generate(model_, "Hello", 5, &params, collect, &got, &result), NF_OK) << nf_last_error();
  // the library's own greedy loop over the same prompt
  const auto encoded = cpp_.tokenizer->encode("Hello");
  infer::Session session(*cpp_.model);
  infer::Sampler sampler({.temperature = 0, .vocab_limit = static_cast<int64_t>(cpp_.tokenizer->vocab_size())});
  const infer::StopCriteria stop{.eos_ids = infer::default_end_ids(cpp_), .stop_strings = {}, .max_new_tokens = 12};
  infer::TextStreamer streamer(*cpp_.tokenizer, stop);
  std::string expected;
  const auto r = session.generate({encoded.begin(), encoded.end()}, sampler, stop, [&](int64_t id) {
    expected += streamer.push(id);
    return !streamer.stopped();
  });
  expected += streamer.finish();
  EXPECT_EQ(got.text, expected);
  EXPECT_EQ(result.completion_tokens, static_cast<int64_t>(r.tokens.size()));
  EXPECT_EQ(result.prompt_tokens, static_cast<int64_t>(encoded.size()));
  // the callback stops it after its first piece
  Collected stopped{.text = {}, .tokens = {}, .stop_after = 1};
  ASSERT_EQ(nf_generate(model_, "Hello", 5, &params, collect, &stopped, &result), NF_OK) << nf_last_error();
  EXPECT_EQ(stopped.tokens.size(), 1u);
  EXPECT_EQ(result.finish_reason, 2);
  EXPECT_EQ(got.text.substr(0, stopped.text.size()), stopped.text);
  // a stop string ends it before the string
  if (got.text.size() > 3) {
    const std::string cut = got.text.substr(2, 2);
    const char* stops[] = {cut.c_str()};
    params.stop = stops;
    params.stop_count = 1;
    Collected until;
    ASSERT_EQ(nf_generate(model_, "Hello", 5, &params, collect, &until, &result), NF_OK) << nf_last_error();
    EXPECT_EQ(until.text, got.text.substr(0, got.text.find(cut)));
    EXPECT_EQ(result.finish_reason, 2);
    params.stop_count = 0;
  }
  params.max_new_tokens = 0;
  EXPECT_EQ(nf_generate(model_, "Hello", 5, &params, collect, &got, &result), NF_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(nf_last_error()).find("max-new-tokens"), std::string::npos) << nf_last_error();
}

TEST_F(CApiTest, GrammarsAndSchemasHoldTheAnswer) {
  nf_generate_params params = nf_generate_default_params();
  params.seed = 3;
  params.max_new_tokens = 40;
  params.grammar = R"(root ::= "yes" | "no" | "maybe")";
  for (int trial = 0; trial < 3; ++trial) {
    params.seed = static_cast<uint64_t>(trial);
    Collected got;
    nf_generate_result result{};
    ASSERT_EQ(nf_generate(model_, "Q:", 2, &params, collect, &got, &result), NF_OK) << nf_last_error();
    EXPECT_TRUE(got.text == "yes" || got.text == "no" || got.text == "maybe") << got.text;
    EXPECT_EQ(result.finish_reason, 0);
  }
  params.grammar = nullptr;
  params.json_schema = R"({"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"], "additionalProperties": false})";
  Collected json_text;
  ASSERT_EQ(nf_generate(model_, "Q:", 2, &params, collect, &json_text, nullptr), NF_OK) << nf_last_error();
  const auto parsed = nlohmann::json::parse(json_text.text, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << json_text.text;
  EXPECT_TRUE(parsed["a"].is_boolean()) << json_text.text;
  params.json_schema = "{";
  EXPECT_EQ(nf_generate(model_, "Q:", 2, &params, collect, &json_text, nullptr), NF_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(nf_last_error()).find("json_schema is not valid JSON"), std::string::npos);
  params.json_schema = nullptr;
  params.grammar = "root ::= x";
  EXPECT_EQ(nf_generate(model_, "Q:", 2, &params, collect, &json_text, nullptr), NF_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(nf_last_error()).find("the rule 'x' is used but never defined"), std::string::npos);
}

TEST_F(CApiTest, ASessionsSecondTurnComputesOnlyItsNewMessages) {
  nf_session* session = nullptr;
  ASSERT_EQ(nf_session_new(model_, 0, &session), NF_OK) << nf_last_error();
  nf_generate_params params = nf_generate_default_params();
  params.temperature = 0;
  params.max_new_tokens = 6;
  Collected first;
  nf_generate_result r1{}, r2{};
  std::vector<nf_chat_message> chat = {{"user", "Hi"}};
  ASSERT_EQ(nf_session_chat(session, chat.data(), chat.size(), &params, collect, &first, &r1), NF_OK) << nf_last_error();
  const int64_t after_first = nf_session_length(session);
  EXPECT_GT(after_first, r1.prompt_tokens);
  chat.push_back({"assistant", first.text.c_str()});
  chat.push_back({"user", "More"});
  Collected second;
  ASSERT_EQ(nf_session_chat(session, chat.data(), chat.size(), &params, collect, &second, &r2), NF_OK) << nf_last_error();
  size_t whole = 0;
  nf_apply_chat_template(model_, chat.data(), chat.size(), nullptr, 1, nullptr, 0, &whole);
  EXPECT_LT(r2.prompt_tokens, static_cast<int64_t>(whole));  // the first turn's tokens were not computed again
  nf_model_free(model_);  // the session holds the model
  model_ = nullptr;
  EXPECT_EQ(nf_session_chat(session, chat.data(), chat.size(), &params, collect, &second, &r2), NF_OK) << nf_last_error();
  nf_session_free(session);
  EXPECT_EQ(nf_session_new(nullptr, 0, &session), NF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(session, nullptr);
}

}  // namespace
}  // namespace nf
