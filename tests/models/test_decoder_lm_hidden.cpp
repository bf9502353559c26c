// DecoderLM::forward(..., return_hidden): one (B, T, dim) tensor per block, the last of which gives
// the logits through the final norm and the head; without the flag none is kept. final_hidden is the
// final norm's output, what the head reads (also with nanochat's backout after the blocks).
#include "nanoformer/nanoformer.h"
#include "support/testing.h"

namespace nf::models {
namespace {

TEST(DecoderLMHidden, OneStatePerBlockAndTheLastGivesTheLogits) {
  const DecoderLMConfig c = parse_model_config(
      R"({"vocab_size": 32, "dim": 16, "n_layers": 3, "n_heads": 4, "max_seq_len": 8, "tie_embeddings": false})");
  DecoderLM model(c);
  const Tensor ids = Tensor::of({1, 5, 7, 2, 31, 0}, {1, 6}, DType::i64);
  const LMOutput plain = model.forward(ids);
  EXPECT_TRUE(plain.hidden.empty());
  const LMOutput out = model.forward(ids, {}, true);
  ASSERT_EQ(out.hidden.size(), 3u);
  for (const Tensor& h : out.hidden) EXPECT_EQ(h.shape(), (Shape{1, 6, 16}));
  EXPECT_TENSOR_CLOSE(out.logits, plain.logits, 0.0, 0.0);
  EXPECT_TENSOR_CLOSE(model.output->forward(model.norm->forward(out.hidden.back())), out.logits, 0.0, 0.0);
  EXPECT_TENSOR_CLOSE(out.hidden[1], (*model.layers)[1]->forward(out.hidden[0]), 0.0, 0.0);
}

TEST(DecoderLMHidden, FinalHiddenIsWhatTheHeadReads) {
  for (const char* backout : {"false", "true"}) {
    SCOPED_TRACE(backout);
    const DecoderLMConfig c = parse_model_config(
        std::string(R"({"vocab_size": 32, "dim": 16, "n_layers": 4, "n_heads": 4, "max_seq_len": 8, "tie_embeddings": false, "backout": )") +
        backout + "}");
    DecoderLM model(c);
    const Tensor ids = Tensor::of({1, 5, 7, 2, 31, 0}, {2, 3}, DType::i64);
    const Tensor h = model.final_hidden(ids);
    EXPECT_EQ(h.shape(), (Shape{2, 3, 16}));
    EXPECT_TENSOR_CLOSE(model.output->forward(h), model.forward(ids).logits, 0.0, 0.0);
  }
}

}  // namespace
}  // namespace nf::models
