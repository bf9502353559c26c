// `nanoformer generate` and `nanoformer chat` end to end: --ids on a Hugging Face folder prints
// transformers' greedy tokens; text streams with the tokenizer beside the model; the same seed
// gives the same text; a chat keeps the conversation (and its KV cache) across turns, /reset and
// /system work; --cache-type q8_0, q4_0 and bf16 decode the f32 cache's greedy tokens from a cache
// of 34 bytes (q8_0) or 18 (q4_0) per 32 values, 3.76 and 7.11 times less than f32; --lookup-ngram
// gives the plain greedy tokens and reports its drafts;
// bad input (a prompt longer than the context, an unknown id, a tokenizer of another vocabulary,
// a tokenizer without chat tokens) is one clear line and a non-zero exit.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "nanoformer/formats/model_io.h"
#include "nanoformer/io/safetensors.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/tokenizer/hf_chat_template.h"
#include "support/cli_test.h"
#include "support/testing.h"
#include "tiny_chat_model.h"
#include "tokenizer/fixtures.h"

namespace nf {
namespace {

using GenerateCliTest = testing::CliTest;

std::string hf_fixture(const std::string& name) { return std::string(NF_TEST_DATA_DIR) + "/hf/" + name; }

int64_t count_substr(const std::string& text, const std::string& needle) {
  int64_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::string ids_text(const std::vector<int64_t>& ids) {
  std::string out;
  for (int64_t id : ids) out += std::to_string(id) + " ";
  return out;
}

TEST_F(GenerateCliTest, IdsModeGivesTransformersGreedyTokens) {
  const auto golden = io::load_safetensors(hf_fixture("llama_gqa.generate.safetensors"));
  const auto prompt = golden.at("prompt").to_vector<int64_t>(), expected = golden.at("generated").to_vector<int64_t>();
  const int64_t P = golden.at("prompt").shape()[1], N = golden.at("generated").shape()[1];
  const std::vector<int64_t> first_prompt(prompt.begin(), prompt.begin() + P), first(expected.begin(), expected.begin() + N);
  const auto r = cli("generate -m '" + hf_fixture("llama_gqa") + "' --ids --greedy -n " + std::to_string(N) +
                     " --prompt-ids '" + ids_text(first_prompt) + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, ids_text(first) + "\n");
  EXPECT_NE(r.err.find("tokens/s"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stopped: max new tokens"), std::string::npos) << r.err;
}

// MiniMind's current form (tools/golden/minimind_d65ef2c_fixtures.py): `inspect` reads the folder (the
// dense one safetensors with YaRN, the MoE one a float16 .pth) and `generate --ids --greedy` gives the
// tokens MiniMind's own generate gives through its KV cache.
TEST_F(GenerateCliTest, MiniMindCurrentFormInspectsAndGeneratesMiniMindsTokens) {
  for (const std::string name : {"dense", "moe"}) {
    const std::string folder = std::string(NF_TEST_DATA_DIR) + "/minimind_d65ef2c/" + name;
    const auto inspect = cli("inspect '" + folder + "'");
    ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
    const int64_t parameters = models::count_parameters(formats::load_decoder_lm(folder)->config());
    EXPECT_NE(inspect.out.find("\nparameters: " + std::to_string(parameters) + "\n"), std::string::npos) << inspect.out;
    const auto golden = io::load_safetensors(folder + ".generate.safetensors");
    const auto r = cli("generate -m '" + folder + "' --ids --greedy -n 16 --prompt-ids '" +
                       ids_text(golden.at("prompt").to_vector<int64_t>()) + "'");
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_EQ(r.out, ids_text(golden.at("generated").to_vector<int64_t>()) + "\n") << name;
  }
}

// A tiny chat model (tiny_chat_model.h) in path("model").
class ChatModelTest : public testing::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    testing::save_tiny_chat_model(path("model"));
  }
};

TEST_F(ChatModelTest, GenerateStreamsTextAndRepeatsForASeed) {
  const std::string model = "generate -m '" + path("model/model.safetensors") + "' --prompt 'Hello' -n 12 ";
  const auto a = cli(model + "--seed 5 --temperature 1"), b = cli(model + "--seed 5 --temperature 1"),
             c = cli(model + "--seed 6 --temperature 1");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out.rfind("Hello", 0), 0u) << a.out;  // the prompt, then the continuation
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
}

TEST_F(ChatModelTest, ChatKeepsTheConversationAndResets) {
  const auto r = cli("chat -m '" + path("model/model.safetensors") + "' -n 6 --greedy --stats --system 'Be brief'",
                     "hi\nwhat now?\n/reset\n/system You are terse\nhi\n/bogus\n/quit\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("template chatml"), std::string::npos) << r.err;
  EXPECT_EQ(count_substr(r.err, "new prompt tokens"), 3) << r.err;
  EXPECT_NE(r.err.find("conversation reset"), std::string::npos);
  EXPECT_NE(r.err.find("unknown command /bogus"), std::string::npos);
  // the second turn prefills only what is new: fewer tokens than the first turn's whole prompt
  std::vector<int64_t> prefilled;
  for (size_t at = r.err.find(" new prompt tokens"); at != std::string::npos; at = r.err.find(" new prompt tokens", at + 1))
    prefilled.push_back(std::stoll(r.err.substr(r.err.rfind('[', at) + 1)));
  ASSERT_EQ(prefilled.size(), 3u) << r.err;
  EXPECT_LT(prefilled[1], prefilled[0]) << r.err;
}

// A folder whose tokenizer_config.json has a Jinja chat_template chats in it (SmolLM2's here):
// the first prompt is that template's rendering, and a named template still wins.
TEST_F(ChatModelTest, ChatUsesTheFoldersJinjaTemplate) {
  const auto golden = nlohmann::ordered_json::parse(tokenizer::read_file(std::string(NF_TEST_DATA_DIR) +
                                                                          "/tokenizer/hf_chat_templates.json"));
  const auto& smol = golden.at("templates").at(3);
  ASSERT_EQ(smol.at("name"), "smollm2");
  nlohmann::ordered_json config = smol.at("special_tokens");
  config["chat_template"] = smol.at("template");
  std::ofstream(path("model/tokenizer_config.json")) << config.dump();
  const std::string chat = "chat -m '" + path("model/model.safetensors") + "' -n 4 --greedy --stats";
  const auto r = cli(chat, "hi\n/quit\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("template " + path("model/tokenizer_config.json")), std::string::npos) << r.err;
  const auto tok = tokenizer::load_tokenizer(path("model/tokenizer.json"));
  const tokenizer::HfChatTemplate smol_template("smollm2", smol.at("template").get<std::string>(), {}, *tok);
  const auto prompt = smol_template.render_for_completion(std::vector<tokenizer::ChatMessage>{{"user", "hi"}});
  EXPECT_NE(r.err.find("[" + std::to_string(prompt.size()) + " new prompt tokens"), std::string::npos) << r.err;
  const auto named = cli(chat + " --chat-template chatml", "hi\n/quit\n");
  EXPECT_NE(named.err.find("template chatml"), std::string::npos) << named.err;
}

// The KV cache's size from generate's last stderr line, "KV cache: TYPE, N KiB]".
double cache_kib(const std::string& err, const std::string& type) {
  const size_t at = err.rfind("KV cache: " + type + ", ");
  return at == std::string::npos ? 0.0 : std::stod(err.substr(at + 12 + type.size()));
}

// Greedy ids of a tiny model of head_dim 32 (one q8_0 or q4_0 block per row) with each cache type.
TEST_F(GenerateCliTest, CacheTypesDecodeTheF32TokensFromASmallerCache) {
  testing::save_tiny_chat_model(path("wide"), false, 128, 0, /*head_dim=*/32);
  const std::string command = "generate -m '" + path("wide/model.safetensors") + "' --ids --prompt-ids '72 101 108' --greedy -n 24";
  const auto f32 = cli(command);
  ASSERT_EQ(f32.exit_code, 0) << f32.err;
  EXPECT_EQ(cache_kib(f32.err, "f32"), 128.0) << f32.err;  // 2 layers x keys and values x 2 heads x 128 x 32 x 4 bytes
  for (const std::string type : {"q8_0", "q4_0", "bf16"}) {
    const auto r = cli(command + " --cache-type " + type);
    ASSERT_EQ(r.exit_code, 0) << type << ": " << r.err;
    EXPECT_EQ(r.out, f32.out) << type;
    const double expected = type == "q8_0" ? 128.0 * 34 / 128 : type == "q4_0" ? 128.0 * 18 / 128 : 64.0;
    EXPECT_EQ(cache_kib(r.err, type), expected) << r.err;
  }
}

// --lookup-ngram (speculative decoding by prompt lookup): the same greedy tokens and text, the
// drafted and accepted tokens reported; --draft-min above --draft-max is one clear line.
TEST_F(GenerateCliTest, LookupGivesThePlainGreedyTokensAndReportsItsDrafts) {
  testing::save_tiny_chat_model(path("m"), false, 256);
  const std::string model = "generate -m '" + path("m/model.safetensors") + "' --greedy -n 64 ";
  for (const std::string prompt : {"--ids --prompt-ids '72 101 108 108 111 72 101 108 108 111 72 101'",
                                   "--prompt 'Hello Hello Hello'"}) {
    const auto plain = cli(model + prompt);
    const auto lookup = cli(model + prompt + " --lookup-ngram 2 --draft-max 4");
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    ASSERT_EQ(lookup.exit_code, 0) << lookup.err;
    EXPECT_EQ(lookup.out, plain.out);
    EXPECT_EQ(plain.err.find("[lookup:"), std::string::npos) << plain.err;
    EXPECT_NE(lookup.err.find("drafted tokens accepted"), std::string::npos) << lookup.err;
  }
  const auto bad = cli(model + "--ids --lookup-ngram 2 --draft-max 4 --draft-min 5");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--draft-min 5: must be in [0, --draft-max 4]"), std::string::npos) << bad.err;
}

// --draft MODEL (speculative decoding with a draft model: here the same model with the embeddings
// of ids >= 128 zeroed): generate and chat give the same greedy text, the drafts reported; a draft
// of another vocabulary, or --draft with --lookup-ngram, is one clear line naming them.
TEST_F(GenerateCliTest, ADraftModelGivesThePlainGreedyTokensAndReportsItsDrafts) {
  testing::save_tiny_chat_model(path("m"), false, 256);
  testing::save_tiny_chat_model(path("d"), /*ascii_only=*/true, 256);
  testing::save_tiny_chat_model(path("wide"), false, 256, /*padded_vocab=*/320);
  const std::string model = "generate -m '" + path("m/model.safetensors") + "' --greedy -n 64 ";
  const std::string draft = " --draft '" + path("d/model.safetensors") + "'";
  for (const std::string prompt : {"--ids --prompt-ids '72 101 108'", "--prompt 'Hello'"}) {
    const auto plain = cli(model + prompt);
    const auto drafted = cli(model + prompt + draft + " --draft-max 4");
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    ASSERT_EQ(drafted.exit_code, 0) << drafted.err;
    EXPECT_EQ(drafted.out, plain.out);
    EXPECT_NE(drafted.err.find("[draft: "), std::string::npos) << drafted.err;
  }
  const std::string chat = "chat -m '" + path("m/model.safetensors") + "' --greedy -n 24 --stats";
  const auto plain_chat = cli(chat, "Hi\nHow are you\n");
  const auto drafted_chat = cli(chat + draft, "Hi\nHow are you\n");
  ASSERT_EQ(drafted_chat.exit_code, 0) << drafted_chat.err;
  EXPECT_EQ(drafted_chat.out, plain_chat.out);
  const auto wide = cli(model + "--ids --draft '" + path("wide/model.safetensors") + "'");
  EXPECT_NE(wide.exit_code, 0);
  EXPECT_NE(wide.err.find("--draft " + path("wide/model.safetensors") + " has a vocabulary of 320 tokens but the model " +
                          path("m/model.safetensors") + " has 259"),
            std::string::npos)
      << wide.err;
  const auto both = cli(model + "--ids --lookup-ngram 2" + draft);
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.err.find("--draft and --lookup-ngram 2 are two ways to draft: give one"), std::string::npos) << both.err;
}

// A model whose vocabulary (320) is padded beyond its tokenizer's (259), the padded ids' logits the
// largest: generate (greedy and sampled, text and ids) and chat never emit a padded id.
TEST_F(GenerateCliTest, APaddedVocabularyIsNeverSampledBeyondTheTokenizer) {
  testing::save_tiny_chat_model(path("padded"), /*ascii_only=*/false, /*max_seq_len=*/128, /*padded_vocab=*/320);
  const std::string model = "-m '" + path("padded/model.safetensors") + "' ";
  for (const std::string sampling : {"--greedy", "--temperature 1 --seed 3", "--temperature 1.5 --top-k 400 --seed 4"}) {
    const auto text = cli("generate " + model + "--prompt 'Hello' -n 40 " + sampling);
    EXPECT_EQ(text.exit_code, 0) << sampling << ": " << text.err;
    EXPECT_EQ(text.out.rfind("Hello", 0), 0u) << text.out;
    const auto ids = cli("generate " + model + "--ids --prompt-ids '72 105' -n 40 " + sampling);
    ASSERT_EQ(ids.exit_code, 0) << sampling << ": " << ids.err;
    std::istringstream printed(ids.out);
    int64_t count = 0;
    for (int64_t id; printed >> id; ++count) EXPECT_LT(id, 259) << sampling << ": " << ids.out;
    EXPECT_EQ(count, 40) << ids.out;
  }
  const auto chat = cli("chat " + model + "-n 30 --temperature 1 --seed 2", "hi\nand again\n/quit\n");
  EXPECT_EQ(chat.exit_code, 0) << chat.err;
  EXPECT_EQ(chat.err.find("out of range"), std::string::npos) << chat.err;
}

TEST_F(ChatModelTest, BadInputIsOneClearLine) {
  const std::string model = "-m '" + path("model/model.safetensors") + "' ";
  auto expect_error = [&](const std::string& args, const std::string& needle) {
    const auto r = cli(args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  };
  expect_error("generate " + model + "--ids --prompt-ids '1 2 3 4 5' --context 5", "the prompt is 5 tokens");
  expect_error("generate " + model + "--ids --prompt-ids '1 300'", "token id 300 (position 1)");
  expect_error("generate " + model + "--tokenizer '" + std::string(NF_TEST_DATA_DIR) +
                   "/tokenizer/hf_gpt2.json' --prompt hi",
               "do not belong together");
  expect_error("generate " + model + "--prompt hi --top-p 1.5", "--top-p");
  for (const std::string mode : {"--prompt hi", "--ids"}) {
    expect_error("generate " + model + mode + " --max-new-tokens 0", "--max-new-tokens 0: must be >= 1");
    expect_error("generate " + model + mode + " -n -2", "--max-new-tokens -2: must be >= 1");
  }
  expect_error("chat " + model + "-n 0", "--max-new-tokens 0: must be >= 1");
  expect_error("generate " + model + "--ids --prompt-ids '1 2' --bos 3", "--bos is the id to start from");
  // a --keep that holds the whole context could never shift it
  expect_error("generate " + model + "--ids --prompt-ids '1 2' --context 8 --keep 8", "--keep 8 must be less than --context 8");
  expect_error("chat " + model + "--keep 100000", "--keep 100000 must be less than --context");
  // the flags are checked before the model is read
  expect_error("generate -m '" + path("none/model.safetensors") + "' --prompt hi -n 0", "--max-new-tokens 0");
  tokenizer::testing::byte_tokenizer({}).save(path("plain.json"));
  expect_error("chat " + model + "--tokenizer '" + path("plain.json") + "'", "--chat-template");
  expect_error("generate -m '" + hf_fixture("llama_gqa") + "' --prompt hi", "no tokenizer");
  // checked before the model is read
  expect_error("generate -m '" + path("none/model.safetensors") + "' --prompt hi --cache-type q4",
               "--cache-type: 'q4' is not a KV cache type (f32, f16, bf16, q8_0 or q4_0)");
  expect_error("chat " + model + "--cache-type Q8", "--cache-type: 'Q8' is not a KV cache type");
  for (const std::string& command : {"generate " + model + "--prompt hi", "chat " + model})
    for (const std::string type : {"q8_0", "q4_0"})
      expect_error(command + " --cache-type " + type, "--cache-type " + type +
                                                          " stores keys and values in blocks of 32; the model's head_dim 8 "
                                                          "is not a multiple of 32");
}

// --tools and --tool-command on a chat-template model: answered through its Jinja template (Qwen2.5's
// here) in generate and chat; the built-in ChatML template renders no tool messages, a
// --tool-command without NAME= is refused, each in one line naming the flag.
TEST_F(ChatModelTest, ToolsNeedAJinjaTemplateAndACommandsName) {
  const std::string model = "-m '" + path("model/model.safetensors") + "' -n 4 --greedy ";
  const auto expect_error = [&](const std::string& args, const std::string& needle) {
    const auto r = cli(args, "hi\n/quit\n");
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  };
  expect_error("chat " + model + "--tools calculator", "--tools / --tool-command: the model's chat template chatml renders no tool messages");
  const auto golden = nlohmann::ordered_json::parse(tokenizer::read_file(std::string(NF_TEST_DATA_DIR) +
                                                                          "/tokenizer/hf_chat_templates.json"));
  const auto& qwen = golden.at("templates").at(1);
  ASSERT_EQ(qwen.at("name"), "qwen2.5");
  nlohmann::ordered_json config = qwen.at("special_tokens");
  config["chat_template"] = qwen.at("template");
  std::ofstream(path("model/tokenizer_config.json")) << config.dump();
  expect_error("chat " + model + "--tool-command cat", "--tool-command 'cat': give NAME=PROGRAM [ARGS...]");
  expect_error("chat " + model + "--tools calculator --tool-command calculator=cat", "the tool calculator is given twice");
  for (const std::string command : {"chat", "generate --prompt hi"}) {
    const auto r = cli(command + " " + model + "--tools calculator --tool-command 'echo=cat -u' --tool-timeout 500", "hi\n/quit\n");
    EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.err;
  }
}

// nanochat's current GPT (tests/fixtures/nanochat/current_92d63d4, nanochat@92d63d4's own gpt.py):
// `inspect` names its parts, and `generate` continues a 150-token prompt (past its 129-key window)
// with GPT.generate's greedy tokens, from the folder as nanochat wrote it and after `convert --to nanochat`.
TEST_F(GenerateCliTest, NanochatsCurrentFolderInspectsAndGivesItsOwnGreedyTokens) {
  const std::string folder = std::string(NF_TEST_DATA_DIR) + "/nanochat/current_92d63d4";
  const auto inspect = cli("inspect '" + folder + "'");
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("sliding window 129 (SSSL), value embeddings, residual scalars, smear, backout"),
            std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("value embeddings             1,600"), std::string::npos) << inspect.out;
  const auto golden = io::load_safetensors(folder + ".golden.safetensors");
  const std::string prompt = ids_text(golden.at("prompt").to_vector<int64_t>());
  const std::string expected = ids_text(golden.at("generated").to_vector<int64_t>()) + "\n";
  ASSERT_EQ(cli("convert '" + folder + "' '" + path("converted") + "' --to nanochat").exit_code, 0);
  for (const std::string& model : {folder, path("converted")}) {
    const auto r = cli("generate -m '" + model + "' --ids --greedy -n 20 --prompt-ids '" + prompt + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, expected) << model;
  }
}

}  // namespace
}  // namespace nf
