// `nanoformer generate` with an encoder-decoder model: --prompt-ids is the source and the target ids
// are printed, greedy and with --num-beams / --length-penalty / --decoder-start / --eos equal to the
// PyTorch reference of tools/golden/fixtures_seq2seq_generate.py; the beam flags are refused for a
// decoder-only model, and sampling flags or a text prompt for an encoder-decoder one.
#include "nanoformer/formats/model_io.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/models/encoder_decoder.h"
#include "support/cli_test.h"
#include "support/module_golden.h"
#include "support/testing.h"

namespace nf {
namespace {

std::string ids_text(const std::vector<int64_t>& ids) {
  std::string out;
  for (const int64_t id : ids) out += std::to_string(id) + " ";
  return out;
}

// The fixture's model saved as a nanoformer checkpoint, and the fixture.
class Seq2SeqCliTest : public testing::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    models::EncoderDecoder model(
        models::parse_encoder_decoder_config(golden_.cases()["model"]["config"].get<std::string>(), "seq2seq"));
    testing::load_case_parameters(model, golden_, "model");
    formats::save_model(model, path("seq2seq.safetensors"), "nanoformer");
  }
  // The first (best) hypothesis of a golden case, as the CLI prints it.
  std::string best(const std::string& name) const {
    const std::vector<int64_t> tokens = golden_.get(name, "tokens").to_vector<int64_t>();
    const int64_t length = golden_.get(name, "lengths").to_vector<int64_t>()[0];
    return ids_text({tokens.begin(), tokens.begin() + length}) + "\n";
  }
  std::string source(const std::string& name) const { return ids_text(golden_.get(name, "src").to_vector<int64_t>()); }
  std::string model_flag() const { return "generate -m '" + path("seq2seq.safetensors") + "' --ids "; }

  testing::Golden golden_{"seq2seq_generate"};
};

TEST_F(Seq2SeqCliTest, GreedyPrintsTheTargetIds) {
  const auto r = cli(model_flag() + "--decoder-start 1 --eos 2 -n 12 --prompt-ids '" + source("greedy") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, best("greedy"));
  EXPECT_NE(r.err.find("tokens/s"), std::string::npos) << r.err;
}

TEST_F(Seq2SeqCliTest, BeamSearchWithLengthPenalty) {
  for (const auto& [name, penalty] : {std::pair<std::string, std::string>{"beams3", "1"}, {"beams3_lp0", "0"}}) {
    const auto r = cli(model_flag() + "--decoder-start 1 --eos 2 -n 10 --num-beams 3 --length-penalty " + penalty +
                       " --prompt-ids '" + source(name) + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, best(name)) << name;
  }
}

TEST_F(Seq2SeqCliTest, BadFlagsAreClearErrors) {
  const auto sampling = cli(model_flag() + "--temperature 0.7 --prompt-ids '3 4 5'");
  EXPECT_NE(sampling.exit_code, 0);
  EXPECT_NE(sampling.err.find("--temperature is for sampling"), std::string::npos) << sampling.err;
  const auto text = cli("generate -m '" + path("seq2seq.safetensors") + "' --prompt hello");
  EXPECT_NE(text.exit_code, 0);
  EXPECT_NE(text.err.find("give --ids and --prompt-ids"), std::string::npos) << text.err;
  for (const char* flag : {"--context 8", "--tokenizer t.json", "--bos 1", "--cache-type q8_0", "--draft d.gguf",
                           "--draft-p-min 0.5"}) {  // decoder-only flags are not ignored
    const auto decoder_only = cli(model_flag() + flag + " --prompt-ids '3 4 5'");
    EXPECT_NE(decoder_only.exit_code, 0) << flag;
    EXPECT_NE(decoder_only.err.find("is for decoder-only language models"), std::string::npos) << decoder_only.err;
  }
  const auto too_long = cli(model_flag() + "-n 17 --prompt-ids '3 4 5'");
  EXPECT_NE(too_long.exit_code, 0);
  EXPECT_NE(too_long.err.find("max_new_tokens 17 must be in [1, max_seq_len = 16]"), std::string::npos) << too_long.err;
  models::DecoderLMConfig c = models::preset_config("llama2c-stories260k");
  c.vocab_size = 32, c.dim = 16, c.n_layers = 1, c.n_heads = 2, c.n_kv_heads = 1, c.max_seq_len = 16;
  Generator gen(1);
  formats::save_model(models::DecoderLM(c, gen), path("lm.safetensors"), "nanoformer");
  const auto beams = cli("generate -m '" + path("lm.safetensors") + "' --ids --num-beams 2");
  EXPECT_NE(beams.exit_code, 0);
  EXPECT_NE(beams.err.find("--num-beams is for encoder-decoder models"), std::string::npos) << beams.err;
}

}  // namespace
}  // namespace nf
