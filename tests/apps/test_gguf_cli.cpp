// GGUF from the command line: `quantize` writes a GGUF with the tokenizer embedded and prints the
// weights by type before and after; generate, chat, eval and forward take that file alone;
// `convert --to gguf` keeps the logits bit for bit at f32 and quantises with --type (and a GGUF
// converted to a dense format is dequantised); `quantize` of a GGUF requantises; `inspect` shows
// the bytes per weight type; bad types and flags are one line and a non-zero exit; generate puts
// a GGUF tokenizer's bos before the prompt when its add_bos_token says so.
#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "nanoformer/formats/model_io.h"
#include "nanoformer/io/gguf.h"
#include "nanoformer/io/safetensors.h"
#include "support/cli_test.h"
#include "support/testing.h"
#include "tiny_chat_model.h"

namespace nf {
namespace {

int64_t lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

// The tiny chat model (tiny_chat_model.h: LLaMA-style, byte-level tokenizer with ChatML's specials
// beside it) in path("model").
class GGUFCliTest : public testing::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    testing::save_tiny_chat_model(path("model"), /*ascii_only=*/true);
    model = path("model") + "/model.safetensors";
  }
  std::string model;
};

TEST_F(GGUFCliTest, QuantizeWritesAGGUFThatGenerateChatEvalAndForwardTakeAlone) {
  const auto q = cli("quantize '" + model + "' '" + path("q8.gguf") + "' --type q8_0");
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("weights before"), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("  q8_0 "), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("x smaller"), std::string::npos) << q.out;
  EXPECT_EQ(q.out.find("no tokenizer"), std::string::npos) << q.out;
  const io::GGUFFile file = io::GGUFFile::open(path("q8.gguf"));
  EXPECT_EQ(file.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(file.tensor("blk.0.attn_q.weight").type, QuantType::q8_0);

  const auto g = cli("generate -m '" + path("q8.gguf") + "' --prompt 'Hello' -n 6 --greedy");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(g.out.rfind("Hello", 0), 0u) << g.out;
  EXPECT_GT(g.out.size(), std::string("Hello\n").size()) << g.out;
  const auto c = cli("chat -m '" + path("q8.gguf") + "' -n 4 --greedy", "hi there\n/quit\n");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  // the template the GGUF carries (ChatML's, written for a ChatML tokenizer) through the Jinja path
  EXPECT_NE(c.err.find("template " + path("q8.gguf") + " (tokenizer.chat_template)"), std::string::npos) << c.err;
  std::ofstream(path("text.txt")) << "the quick brown fox jumps over the lazy dog, again and again and again\n";
  const auto e = cli("eval '" + path("q8.gguf") + "' --data '" + path("text.txt") + "' --context 16 -q");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.out.find("16"), std::string::npos) << e.out;
  const auto f = cli("forward --model '" + path("q8.gguf") + "' --ids '72 105 33' --out '" + path("f.safetensors") + "'");
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_EQ(io::load_safetensors(path("f.safetensors")).at("logits").shape(), (Shape{3, 259}));

  // a GGUF requantised: its tokenizer copied
  const auto again = cli("quantize '" + path("q8.gguf") + "' '" + path("q4.gguf") + "' --type q4_0");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("requantising: "), std::string::npos) << again.err;
  EXPECT_EQ(io::GGUFFile::open(path("q4.gguf")).get("tokenizer.ggml.tokens"), file.get("tokenizer.ggml.tokens"));
  EXPECT_EQ(io::GGUFFile::open(path("q4.gguf")).tensor("blk.0.attn_q.weight").type, QuantType::q4_0);
}

// The prompt length generate reports on stderr ("[prompt: N tokens").
int64_t prompt_tokens(const std::string& err) {
  const size_t at = err.find("[prompt: ");
  return at == std::string::npos ? -1 : std::stoll(err.substr(at + 9));
}

TEST_F(GGUFCliTest, GeneratePutsBosBeforeThePromptWhenTheGGUFTokenizerSaysTo) {
  ASSERT_EQ(cli("quantize '" + model + "' '" + path("q8.gguf") + "' --type q8_0").exit_code, 0);
  const io::GGUFFile file = io::GGUFFile::open(path("q8.gguf"));
  std::vector<std::pair<std::string, io::GGUFValue>> tokenizer;  // the file's tokenizer, add_bos_token true
  for (const std::string& key : file.keys())
    if (key.rfind("tokenizer.", 0) == 0) tokenizer.emplace_back(key, key == "tokenizer.ggml.add_bos_token" ? io::GGUFValue(true) : file.get(key));
  io::write_gguf(path("bos.gguf"), tokenizer, {});
  const std::string run = "generate -m '" + path("q8.gguf") + "' --prompt 'Hello' -n 2 --greedy";
  const auto plain = cli(run), with_bos = cli(run + " -t '" + path("bos.gguf") + "'");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(with_bos.exit_code, 0) << with_bos.err;
  ASSERT_GT(prompt_tokens(plain.err), 0) << plain.err;
  EXPECT_EQ(prompt_tokens(with_bos.err), prompt_tokens(plain.err) + 1) << with_bos.err;
}

TEST_F(GGUFCliTest, ConvertToGGUFKeepsTheLogitsAndQuantisesWithType) {
  const auto r = cli("convert '" + model + "' '" + path("m.gguf") + "' --to gguf");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& [m, out] : {std::pair{model, "a"}, {path("m.gguf"), "b"}})
    ASSERT_EQ(cli("forward --model '" + m + "' --ids '72 105 33 10' --out '" + path(std::string(out) + ".safetensors") + "'")
                  .exit_code, 0);
  EXPECT_TENSOR_CLOSE(io::load_safetensors(path("a.safetensors")).at("logits"),
                      io::load_safetensors(path("b.safetensors")).at("logits"), 0.0, 0.0);
  EXPECT_TRUE(io::GGUFFile::open(path("m.gguf")).has("tokenizer.chat_template"));

  ASSERT_EQ(cli("convert '" + model + "' '" + path("q.gguf") + "' --to gguf --type q8_0").exit_code, 0);
  EXPECT_EQ(io::GGUFFile::open(path("q.gguf")).tensor("blk.1.ffn_up.weight").type, QuantType::q8_0);
  // to a dense format, the blocks are dequantised
  const auto dense = cli("convert '" + path("q.gguf") + "' '" + path("q.safetensors") + "' --to nanoformer");
  ASSERT_EQ(dense.exit_code, 0) << dense.err;
  EXPECT_NE(dense.err.find("quantised weights dequantised to f32 for nanoformer"), std::string::npos) << dense.err;
}

// A folder's own chat template goes into the GGUF written from it; chat on that GGUF renders it as
// on the folder, and refuses a construct outside the subset as it does on the folder, in one line.
TEST_F(GGUFCliTest, ConvertToGGUFEmbedsTheFolderTemplateAndChatUsesIt) {
  const std::string qwen_style =
      "{%- if messages[0].role == 'system' %}{{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}"
      "{%- else %}{{- '<|im_start|>system\nYou are Qwen.<|im_end|>\n' }}{%- endif %}"
      "{%- for message in messages %}{%- if message.role != 'system' %}"
      "{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}{%- endif %}{%- endfor %}"
      "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}";
  auto write_config = [&](const std::string& source) {
    std::ofstream(path("model") + "/tokenizer_config.json")
        << nlohmann::json{{"eos_token", "<|im_end|>"}, {"chat_template", source}}.dump();
  };
  write_config(qwen_style);
  const auto r = cli("convert '" + model + "' '" + path("m.gguf") + "' --to gguf");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(io::GGUFFile::open(path("m.gguf")).get_string("tokenizer.chat_template"), qwen_style);
  const std::string turn = "hi there\n/quit\n";
  const auto on_folder = cli("chat -m '" + model + "' -n 4 --greedy --stats", turn);
  const auto on_gguf = cli("chat -m '" + path("m.gguf") + "' -n 4 --greedy --stats", turn);
  ASSERT_EQ(on_folder.exit_code, 0) << on_folder.err;
  ASSERT_EQ(on_gguf.exit_code, 0) << on_gguf.err;
  EXPECT_NE(on_folder.err.find("template " + path("model") + "/tokenizer_config.json"), std::string::npos) << on_folder.err;
  EXPECT_NE(on_gguf.err.find("template " + path("m.gguf") + " (tokenizer.chat_template)"), std::string::npos) << on_gguf.err;
  // the same prompt ("You are Qwen." as the system turn, not ChatML's default), so the same reply
  // from f32 weights kept bit for bit
  auto prompt_tokens = [](const std::string& err) {
    const size_t at = err.find(" new prompt tokens");
    return at == std::string::npos ? std::string("none") : err.substr(err.rfind('[', at) + 1, at - err.rfind('[', at) - 1);
  };
  EXPECT_NE(prompt_tokens(on_folder.err), "none") << on_folder.err;
  EXPECT_EQ(prompt_tokens(on_gguf.err), prompt_tokens(on_folder.err)) << on_gguf.err;
  EXPECT_EQ(on_gguf.out, on_folder.out);

  write_config("{% macro turn(m) %}{{ m.content }}{% endmacro %}{% for m in messages %}{{ turn(m) }}{% endfor %}");
  ASSERT_EQ(cli("convert '" + model + "' '" + path("macro.gguf") + "' --to gguf").exit_code, 0);
  for (const auto& [m, name] : {std::pair{model, path("model") + "/tokenizer_config.json"},
                                {path("macro.gguf"), path("macro.gguf") + " (tokenizer.chat_template)"}}) {
    const auto c = cli("chat -m '" + m + "' -n 4 --greedy", "hi\n/quit\n");
    EXPECT_NE(c.exit_code, 0) << m;
    EXPECT_EQ(lines(c.err), 1) << c.err;
    EXPECT_NE(c.err.find(name + ": chat template line 1 col 4: unsupported construct: {% macro %}"), std::string::npos) << c.err;
  }
}

TEST_F(GGUFCliTest, InspectShowsTheBytesOfEachWeightType) {
  ASSERT_EQ(cli("quantize '" + model + "' '" + path("q8.gguf") + "' --type q8_0").exit_code, 0);
  const auto r = cli("inspect '" + path("q8.gguf") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t table = r.out.find("weights as held");
  ASSERT_NE(table, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n  q8_0 ", table), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n  f32 ", table), std::string::npos) << r.out;
  const auto j = cli("inspect '" + path("q8.gguf") + "' --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const nlohmann::json report = nlohmann::json::parse(j.out);
  int64_t parameters = 0, q8_bytes = 0, q8_parameters = 0;
  for (const auto& w : report.at("weights_by_type")) {
    parameters += w.at("parameters").get<int64_t>();
    if (w.at("type") == "q8_0") q8_bytes = w.at("bytes"), q8_parameters = w.at("parameters");
  }
  EXPECT_EQ(parameters, report.at("parameters").at("total").get<int64_t>());
  EXPECT_EQ(q8_bytes, q8_parameters / 32 * 34);  // Q8_0: 34 bytes per 32 weights
}

TEST_F(GGUFCliTest, BadTypesAndFlagsAreOneLine) {
  const std::pair<std::string, std::string> cases[] = {
      {"quantize '" + model + "' '" + path("x.gguf") + "' --type q9_9", "--type: "},
      {"quantize '" + model + "' '" + path("x.gguf") + "' --type q8_k", "--type q8_k: an activation type"},
      {"quantize '" + model + "' '" + path("x.gguf") + "' --type q8_0 --output-type nope", "--output-type: "},
      {"convert '" + model + "' '" + path("x") + "' --to hf --type q8_0", "--type is for --to gguf"},
      {"convert '" + model + "' '" + path("x") + "' --to nanoformer --tokenizer t.json", "--tokenizer is for --to gguf"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = cli(args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_EQ(lines(r.err), 1) << args << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(path("x.gguf")));
  // a model without a tokenizer beside it makes a GGUF without one, which generate then asks for
  std::filesystem::copy_file(model, path("lone.safetensors"));
  const auto q = cli("quantize '" + path("lone.safetensors") + "' '" + path("bare.gguf") + "' --type q8_0");
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("no tokenizer beside the model"), std::string::npos) << q.out;
  const auto g = cli("generate -m '" + path("bare.gguf") + "' --prompt hi");
  EXPECT_NE(g.exit_code, 0);
  EXPECT_EQ(lines(g.err), 1) << g.err;
  EXPECT_NE(g.err.find("no tokenizer: " + path("bare.gguf")), std::string::npos) << g.err;
}

}  // namespace
}  // namespace nf
