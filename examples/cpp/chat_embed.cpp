// Load a model, answer a chat turn and embed two sentences with nanoformer's C++ library (the
// classes the CLI is made of), built against an installed nanoformer with find_package.
//   chat_embed MODEL "a question"
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "nanoformer/formats/model_io.h"
#include "nanoformer/infer/loaded_model.h"
#include "nanoformer/infer/session.h"
#include "nanoformer/infer/text_streamer.h"
#include "nanoformer/models/sentence_embedding.h"
#include "nanoformer/tokenizer/chat_template.h"

int main(int argc, char** argv) try {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL QUESTION\n", argv[0]);
    return 2;
  }
  nf::infer::LoadedModel loaded = nf::infer::with_tokenizer(nf::formats::load_model(argv[1]), argv[1], "", true);
  const nf::tokenizer::Tokenizer& tok = *loaded.tokenizer;
  std::unique_ptr<nf::tokenizer::ChatTemplate> chat;
  try {  // the tokenizer's template (tokenizer_config.json, a GGUF's), else the one its special tokens tell
    chat = nf::tokenizer::make_chat_template(nf::tokenizer::default_chat_template(tok, loaded.tokenizer_path), tok);
  } catch (const std::exception& e) {
    std::printf("(no chat template: the question is continued as text)\n");
  }

  // one chat turn, greedy, streamed
  const std::vector<nf::tokenizer::ChatMessage> messages{{.role = "user", .content = argv[2]}};
  const std::vector<nf::tokenizer::TokenId> prompt = chat ? chat->render_for_completion(messages) : tok.encode(argv[2]);
  nf::infer::Session session(*loaded.model);
  nf::infer::Sampler sampler({.temperature = 0});
  nf::infer::StopCriteria stop{.eos_ids = nf::infer::default_end_ids(loaded), .stop_strings = {}, .max_new_tokens = 24};
  if (chat) stop.eos_ids.push_back(chat->end_token());
  nf::infer::TextStreamer streamer(tok, stop);
  std::printf("assistant: ");
  const auto result = session.generate({prompt.begin(), prompt.end()}, sampler, stop, [&](int64_t id) {
    std::printf("%s", streamer.push(id).c_str());
    return !streamer.stopped();
  });
  std::printf("%s\n", streamer.finish().c_str());

  // two embeddings and their cosine similarity
  std::vector<std::vector<int64_t>> inputs;
  for (const char* text : {"The cat sat on the mat.", "A cat was sitting on a mat."}) {
    const auto ids = tok.encode(text);
    inputs.emplace_back(ids.begin(), ids.end());
  }
  const auto vectors = nf::models::embed(*loaded.model, inputs, {});
  double dot = 0;
  for (size_t i = 0; i < vectors[0].size(); ++i) dot += vectors[0][i] * vectors[1][i];
  std::printf("%zu tokens generated; embeddings of %zu floats, cosine similarity %.4f\n", result.tokens.size(),
              vectors[0].size(), dot);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "chat_embed: %s\n", e.what());
  return 1;
}
