// Chat templates: ChatML (MiniMind2) against transformers' apply_chat_template and MiniMind's loss
// mask (golden files from tools/tokenizer/chat_template_golden.py), and both templates' ids and
// masks written out by hand over a byte-level tokenizer.
#include "nanoformer/tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "nanoformer/tokenizer/char_tokenizer.h"
#include "support/testing.h"
#include "tokenizer/fixtures.h"

namespace nf::tokenizer {
namespace {

using testing::bytes_of;
using testing::byte_tokenizer;
using testing::fixture;

std::vector<TokenId> concat(std::initializer_list<std::vector<TokenId>> parts) {
  std::vector<TokenId> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<uint8_t> mask_of(std::initializer_list<std::pair<size_t, uint8_t>> runs) {
  std::vector<uint8_t> out;
  for (const auto& [n, v] : runs) out.insert(out.end(), n, v);
  return out;
}

TEST(ChatTemplate, ChatMlEqualsTransformersAndMiniMindMask) {
  const auto tok = load_tokenizer(fixture("hf_gpt2.json"));
  const auto chatml = make_chat_template("chatml", *tok);
  const auto golden = testing::chat_golden();
  ASSERT_EQ(golden.size(), 2u);
  std::istringstream conversations(read_file(fixture("chat_minimind.jsonl")));
  size_t k = 0;
  for (std::string line; std::getline(conversations, line) && k < golden.size(); ++k) {
    const nlohmann::json doc = nlohmann::json::parse(line);
    std::vector<ChatMessage> messages;
    for (const auto& m : doc["conversations"]) messages.push_back({m["role"], m["content"]});
    const RenderedChat chat = chatml->render(messages);
    EXPECT_EQ(chat.ids, golden[k].first) << "conversation " << k;
    EXPECT_EQ(chat.trained, golden[k].second) << "conversation " << k;
  }
  EXPECT_EQ(k, 2u);
}

TEST(ChatTemplate, ChatMlByHand) {
  // <|im_start|> = 256, <|im_end|> = 257; every other byte is its own id
  const auto tok = byte_tokenizer({"<|im_start|>", "<|im_end|>"});
  const auto chatml = make_chat_template("chatml", tok);
  const std::vector<ChatMessage> conversation{{"system", "S"}, {"user", "Hi"}, {"assistant", "Yo"}};
  const RenderedChat chat = chatml->render(conversation);
  const std::vector<TokenId> expected = concat({{256}, bytes_of("system\nS"), {257}, bytes_of("\n"),  // 11
                                                {256}, bytes_of("user\nHi"), {257}, bytes_of("\n"),     // 10
                                                {256}, bytes_of("assistant\nYo"), {257}, bytes_of("\n")});  // 15
  EXPECT_EQ(chat.ids, expected);
  // MiniMind: the "\n" after "assistant" is skipped; "Y", "o", <|im_end|> and the closing "\n" are trained
  EXPECT_EQ(chat.trained, mask_of({{32, 0}, {4, 1}}));
  EXPECT_EQ(chatml->end_token(), 257u);

  // without a system message MiniMind's template adds its default one
  const std::vector<ChatMessage> plain{{"user", "Hi"}};
  EXPECT_EQ(chatml->render(plain).ids,
            concat({{256}, bytes_of("system\nYou are a helpful assistant"), {257}, bytes_of("\n"), {256},
                    bytes_of("user\nHi"), {257}, bytes_of("\n")}));
  EXPECT_EQ(chatml->render_for_completion(plain),
            concat({chatml->render(plain).ids, {256}, bytes_of("assistant\n")}));
}

void write_template(const std::string& path, const nlohmann::json& doc) { std::ofstream(path) << doc.dump(); }

TEST(ChatTemplate, TemplateFileRendersLikeTheBuiltInOne) {
  // ChatML written as a template file gives the built-in template's ids for completion
  const auto tok = byte_tokenizer({"<|im_start|>", "<|im_end|>"});
  const std::string path = testing::temp_path("chatml_template.json");
  write_template(path, {{"name", "my-chatml"},
                        {"system", "<|im_start|>system\n{content}<|im_end|>\n"},
                        {"user", "<|im_start|>user\n{content}<|im_end|>\n"},
                        {"assistant", "<|im_start|>assistant\n{content}<|im_end|>\n"},
                        {"default_system", "You are a helpful assistant"},
                        {"end", "<|im_end|>"}});
  const auto from_file = make_chat_template(path, tok);
  const auto chatml = make_chat_template("chatml", tok);
  EXPECT_EQ(from_file->name(), "my-chatml");
  EXPECT_EQ(from_file->end_token(), 257u);
  for (const std::vector<ChatMessage>& conversation :
       {std::vector<ChatMessage>{{"user", "Hi"}},
        std::vector<ChatMessage>{{"system", "S"}, {"user", "Hi"}, {"assistant", "Yo"}, {"user", "2+2?"}}})
    EXPECT_EQ(from_file->render_for_completion(conversation), chatml->render_for_completion(conversation));
  // the mask: the assistant's content and the rest of its format
  const RenderedChat chat = from_file->render(std::vector<ChatMessage>{{"user", "Hi"}, {"assistant", "Yo"}});
  const size_t n = chat.ids.size();
  EXPECT_EQ(chat.trained, mask_of({{n - 4, 0}, {4, 1}}));  // "Y", "o", <|im_end|>, "\n"
  // a message's text never becomes a special token
  const RenderedChat injected = from_file->render(std::vector<ChatMessage>{{"user", "<|im_end|>"}});
  EXPECT_EQ(std::count(injected.ids.begin(), injected.ids.end(), 257u), 2);  // system and user turns' own

  write_template(path, {{"system", "{content}"}, {"user", "{content}"}, {"assistant", "{content}"}});
  EXPECT_THROW_WITH(make_chat_template(path, tok), "chatml_template.json", "no \"end\" key");
  write_template(path, {{"system", "{content}"}, {"user", "U"}, {"assistant", "{content}"}, {"end", "<|im_end|>"}});
  EXPECT_THROW_WITH(make_chat_template(path, tok), "\"user\" has no {content}");
  write_template(path, {{"system", "{content}"}, {"user", "{content}"}, {"assistant", "{content}"}, {"end", "<|im_end|>"},
                        {"eos", "x"}});
  EXPECT_THROW_WITH(make_chat_template(path, tok), "unknown key \"eos\"");
  write_template(path, {{"system", "{content}"}, {"user", "{content}"}, {"assistant", "{content}"}, {"end", "</s>"}});
  EXPECT_THROW_WITH(make_chat_template(path, tok), "special token </s>");
  std::remove(path.c_str());
  EXPECT_EQ(detect_chat_template(tok), "chatml");
  EXPECT_EQ(detect_chat_template(byte_tokenizer({"<|bos|>", "<|assistant_start|>"})), "nanochat");
  EXPECT_EQ(detect_chat_template(byte_tokenizer({})), "");
}

TEST(ChatTemplate, ChatMlTrainsEveryAssistantTurn) {
  const auto tok = byte_tokenizer({"<|im_start|>", "<|im_end|>"});
  const auto chatml = make_chat_template("chatml", tok);
  const std::vector<ChatMessage> two_turns{{"system", ""}, {"user", "a"}, {"assistant", "b"}, {"user", "c"},
                                           {"assistant", "d"}};
  const RenderedChat chat = chatml->render(two_turns);
  std::string trained;  // the bytes (and <E> for <|im_end|>) of the trained positions
  for (size_t i = 0; i < chat.ids.size(); ++i)
    if (chat.trained[i]) trained += chat.ids[i] == 257 ? std::string("<E>") : std::string(1, static_cast<char>(chat.ids[i]));
  EXPECT_EQ(trained, "b<E>\nd<E>\n");
}

TEST(ChatTemplate, NanochatByHand) {
  // <|bos|> 256, <|user_start|> 257, <|user_end|> 258, <|assistant_start|> 259, <|assistant_end|> 260
  const auto tok = byte_tokenizer({"<|bos|>", "<|user_start|>", "<|user_end|>", "<|assistant_start|>",
                                   "<|assistant_end|>"});
  const auto nanochat = make_chat_template("nanochat", tok);
  const std::vector<ChatMessage> conversation{
      {"system", "S"}, {"user", "Hi"}, {"assistant", "Yo"}, {"user", "Ok"}, {"assistant", "<|bos|>!"}};
  const RenderedChat chat = nanochat->render(conversation);
  // the system message is merged into the first user message; contents are encoded as plain text
  const std::vector<TokenId> expected = concat({{256, 257}, bytes_of("S\n\nHi"), {258},   // 8
                                                {259}, bytes_of("Yo"), {260},             // 4
                                                {257}, bytes_of("Ok"), {258},             // 4
                                                {259}, bytes_of("<|bos|>!"), {260}});     // 10
  EXPECT_EQ(chat.ids, expected);
  EXPECT_EQ(chat.trained, mask_of({{9, 0}, {3, 1}, {5, 0}, {9, 1}}));
  EXPECT_EQ(nanochat->end_token(), 260u);
  const std::vector<ChatMessage> question{{"user", "Hi"}};
  EXPECT_EQ(nanochat->render_for_completion(question), concat({{256, 257}, bytes_of("Hi"), {258, 259}}));
}

TEST(ChatTemplate, MalformedConversationsNameTheMessage) {
  const auto tok = byte_tokenizer({"<|im_start|>", "<|im_end|>", "<|bos|>", "<|user_start|>", "<|user_end|>",
                                   "<|assistant_start|>", "<|assistant_end|>"});
  const auto chatml = make_chat_template("chatml", tok);
  const auto nanochat = make_chat_template("nanochat", tok);
  const std::vector<ChatMessage> bot{{"user", "a"}, {"bot", "b"}};
  EXPECT_THROW_WITH(chatml->render(bot), "message 1", "unknown role 'bot'");
  EXPECT_THROW_WITH(nanochat->render(bot), "message 1", "unknown role 'bot'");
  const std::vector<ChatMessage> two_users{{"user", "a"}, {"user", "b"}};
  EXPECT_THROW_WITH(nanochat->render(two_users), "message 1", "role 'user'", "needs 'assistant'");
  const std::vector<ChatMessage> lone_system{{"system", "a"}, {"assistant", "b"}};
  EXPECT_THROW_WITH(nanochat->render(lone_system), "message 0", "followed by a user message");
}

TEST(ChatTemplate, MissingSpecialTokensAreNamed) {
  const auto no_end = byte_tokenizer({"<|im_start|>"});
  EXPECT_THROW_WITH(make_chat_template("chatml", no_end), "chatml", "<|im_end|>");
  const auto nanochat_less = byte_tokenizer({"<|bos|>", "<|user_start|>", "<|user_end|>", "<|assistant_start|>"});
  EXPECT_THROW_WITH(make_chat_template("nanochat", nanochat_less), "nanochat", "<|assistant_end|>");
  const CharTokenizer chars = CharTokenizer::train("<|im_start|> abc");
  EXPECT_THROW_WITH(make_chat_template("chatml", chars), "<|im_end|>", "char tokenizer does not have");
  EXPECT_THROW_WITH(make_chat_template("llama3", no_end), "unknown chat template 'llama3'", "chatml, nanochat");
}

TEST(ChatTemplate, SpecialTokenMustBeAnAddedToken) {
  // a vocabulary entry spelled like the special token is not enough: text would not split on it
  std::vector<std::optional<std::string>> vocab;
  for (int b = 0; b < 256; ++b) vocab.push_back(byte_level::encode(std::string(1, static_cast<char>(b))));
  vocab.push_back("<|im_end|>");
  const BpeTokenizer tok(BpeModel(vocab, {}), {{.id = 257, .content = "<|im_start|>"}});
  EXPECT_THROW_WITH(make_chat_template("chatml", tok), "<|im_end|>", "id 256", "not as an added token");
}

}  // namespace
}  // namespace nf::tokenizer
