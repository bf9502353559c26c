// Greedy generation equals transformers' `generate(do_sample=False)` token for token, on the
// random-weight Hugging Face folders of tools/golden/hf_fixtures.py (GPT-2 with learned positions,
// LLaMA with GQA, LLaMA with linear RoPE scaling, tied head and biases) and of
// tools/golden/hf_llama_family_fixtures.py (Qwen2, Qwen3, Mistral: 64 tokens, longer than their
// sliding windows of 4 and 5); the tokens come from tools/golden/hf_generate_fixtures.py
// (transformers decodes through its own KV cache, a sliding-window one where the model has windows).
#include <gtest/gtest.h>

#include "nanoformer/formats/model_io.h"
#include "nanoformer/infer/greedy.h"
#include "nanoformer/io/safetensors.h"

namespace nf::infer {
namespace {

std::string fixture(const std::string& name) { return std::string(NF_TEST_DATA_DIR) + "/hf/" + name; }

TEST(HfGenerate, GreedyEqualsTransformersTokenForToken) {
  for (const std::string name : {"gpt2", "llama_gqa", "llama_linear_rope", "qwen2", "qwen3", "mistral"}) {
    SCOPED_TRACE(name);
    const auto model = formats::load_decoder_lm(fixture(name));
    const auto golden = io::load_safetensors(fixture(name + ".generate.safetensors"));
    const Tensor prompts = golden.at("prompt"), expected = golden.at("generated");
    const int64_t rows = prompts.shape()[0], P = prompts.shape()[1], N = expected.shape()[1];
    const auto all_prompts = prompts.to_vector<int64_t>(), all_expected = expected.to_vector<int64_t>();
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<int64_t> prompt(all_prompts.begin() + r * P, all_prompts.begin() + (r + 1) * P);
      const std::vector<int64_t> want(all_expected.begin() + r * N, all_expected.begin() + (r + 1) * N);
      EXPECT_EQ(greedy_generate(*model, prompt, N), want) << "row " << r;
    }
  }
}

}  // namespace
}  // namespace nf::infer
