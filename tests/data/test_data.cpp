// The training data pipeline: random and sequential token windows (determinism, the split, the
// shift by one), text and JSONL tokenised at load, chat SFT and prompt-completion batches (exact
// loss masks, padding, the per-epoch shuffle), and the errors for bad input.
#include "nanoformer/data/data.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "nanoformer/core/parallel.h"
#include "nanoformer/data/sft_data.h"
#include "nanoformer/data/token_windows.h"
#include "nanoformer/io/gguf.h"
#include "nanoformer/tokenizer/char_tokenizer.h"
#include "nanoformer/tokenizer/gguf_tokenizer.h"
#include "nanoformer/tokenizer/tokenizer_json.h"
#include "nanoformer/tokenizer/hf_chat_template.h"
#include "nanoformer/tokenizer/corpus.h"
#include "nanoformer/tokenizer/jsonl.h"
#include "nanoformer/tokenizer/token_file.h"
#include "support/testing.h"
#include "tokenizer/fixtures.h"

namespace nf::data {
namespace {

namespace tk = nf::tokenizer;
using tk::testing::bytes_of;
using tk::testing::temp_path;

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A token file whose token at position p is p: a window's values are its positions.
std::string position_file(const std::string& name, uint32_t n) {
  const std::string path = temp_path(name);
  tk::TokenFileWriter writer(path, n);
  std::vector<TokenId> ids(n);
  for (uint32_t i = 0; i < n; ++i) ids[i] = i;
  writer.write(ids);
  writer.close();
  return path;
}

std::vector<int64_t> values(const Tensor& t) { return t.to_vector<int64_t>(); }

DataOptions windows_options(const std::string& path) {
  DataOptions o;
  o.train_paths = {path};
  o.batch_size = 4;
  o.context = 16;
  o.show_progress = false;
  return o;
}

TEST(TokenWindows, InputsAndTargetsAreOneWindowShiftedByOne) {
  const std::string path = position_file("shift.bin", 1000);
  const TrainingData data = load_training_data(windows_options(path));
  const auto& windows = dynamic_cast<const TokenWindows&>(*data.train);
  for (uint64_t i : {0u, 1u, 17u}) {
    const Batch batch = data.train->batch(i);
    ASSERT_EQ(batch.inputs.shape(), (Shape{4, 16}));
    ASSERT_EQ(batch.inputs.dtype(), DType::i64);
    EXPECT_EQ(batch.target_tokens, 64);
    const auto x = values(batch.inputs), y = values(batch.targets);
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t t = 0; t < 16; ++t) {
        EXPECT_EQ(x[b * 16 + t], static_cast<int64_t>(windows.window_start(i, b)) + t);  // w[:-1]
        EXPECT_EQ(y[b * 16 + t], x[b * 16 + t] + 1);                                     // w[1:]
      }
  }
  std::remove(path.c_str());
}

TEST(TokenWindows, DeterministicForASeedIndependentOfOrderAndThreads) {
  const std::string path = position_file("seed.bin", 5000);
  DataOptions o = windows_options(path);
  const TrainingData a = load_training_data(o);
  const TrainingData b = load_training_data(o);
  o.seed = 1338;
  const TrainingData c = load_training_data(o);
  const auto fifth = values(a.train->batch(5).inputs);
  for (uint64_t i = 0; i < 5; ++i) b.train->batch(i);  // b asks for batches 0..4 first
  EXPECT_EQ(values(b.train->batch(5).inputs), fifth);
  EXPECT_NE(values(c.train->batch(5).inputs), fifth);
  EXPECT_NE(values(a.train->batch(6).inputs), fifth);
  const int threads = num_threads();
  set_num_threads(1);
  EXPECT_EQ(values(a.train->batch(5).inputs), fifth);
  set_num_threads(threads);
  // the starts cover the whole training range
  std::set<int64_t> starts;
  for (uint64_t i = 0; i < 500; ++i)
    for (int64_t row = 0; row < 4; ++row) starts.insert(values(a.train->batch(i).inputs)[row * 16]);
  EXPECT_LE(*starts.rbegin(), 4500 - 17);
  EXPECT_LT(*starts.begin(), 50);
  EXPECT_GT(*starts.rbegin(), 4500 - 17 - 50);
  std::remove(path.c_str());
}

TEST(TokenWindows, ValidationIsTheTailAndNeverInATrainingWindow) {
  const std::string path = position_file("split.bin", 1000);
  DataOptions o = windows_options(path);
  o.val_fraction = 0.25;  // tokens [750, 1000) are validation
  const TrainingData data = load_training_data(o);
  ASSERT_TRUE(data.val);
  for (uint64_t i = 0; i < 300; ++i) {
    const auto x = values(data.train->batch(i).inputs), y = values(data.train->batch(i).targets);
    for (size_t k = 0; k < x.size(); ++k) EXPECT_LT(y[k], 750) << "batch " << i;
  }
  // validation: the 14 windows of 17 in [750, 988), in order, four per batch, wrapping around
  for (uint64_t i = 0; i < 5; ++i) {
    const auto x = values(data.val->batch(i).inputs), y = values(data.val->batch(i).targets);
    for (int64_t b = 0; b < 4; ++b) {
      const int64_t window = static_cast<int64_t>(i * 4 + b) % 14;
      EXPECT_EQ(x[b * 16], 750 + window * 17);
      EXPECT_EQ(y[b * 16 + 15], 750 + window * 17 + 16);
    }
  }
  EXPECT_NE(data.train->describe().find("training part"), std::string::npos) << data.train->describe();
  EXPECT_NE(data.val->describe().find("14 sequential windows of 17"), std::string::npos) << data.val->describe();
  o.val_fraction = 0;
  EXPECT_FALSE(load_training_data(o).val);
  std::remove(path.c_str());
}

TEST(TokenWindows, TooShortCorpusNamesTheNumbers) {
  const std::string path = position_file("short.bin", 40);
  DataOptions o = windows_options(path);
  o.context = 39;
  o.val_fraction = 0;
  EXPECT_NO_THROW(load_training_data(o));  // exactly one window of 40
  o.context = 40;
  EXPECT_THROW_WITH(load_training_data(o), "short.bin", "40 tokens", "fewer than context + 1 = 41");
  o.context = 16;
  o.val_fraction = 0.25;  // 10 validation tokens
  EXPECT_THROW_WITH(load_training_data(o), "validation part", "10 tokens", "context + 1 = 17");
  std::remove(path.c_str());
}

TEST(TokenWindows, IdsBeyondTheModelVocabularyAreRefusedBeforeTheFirstBatch) {
  const std::string path = position_file("vocab.bin", 100);  // ids 0..99, file vocabulary 100
  DataOptions o = windows_options(path);
  o.val_fraction = 0;
  o.vocab_size = 100;
  EXPECT_NE(load_training_data(o).vocab_check.find("token ids checked: 100 tokens, largest id 99 < vocabulary 100, in "),
            std::string::npos);
  // a file prepared for a larger vocabulary than the model's
  o.vocab_size = 60;
  EXPECT_THROW_WITH(load_training_data(o), "vocab.bin: the token file's header gives a vocabulary of 100 ids",
                    "larger than the model's vocabulary size 60");
  // a file whose header claims a smaller vocabulary than its ids: its ids are scanned all the same
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    const uint32_t claimed = 50;
    f.seekp(16);
    f.write(reinterpret_cast<const char*>(&claimed), 4);
  }
  EXPECT_THROW_WITH(load_training_data(o), "vocab.bin, token 60", "id 60", "vocabulary size 60");
  std::remove(path.c_str());
}

TEST(TokenWindows, UnreadableFilesAreNamed) {
  DataOptions o = windows_options(temp_path("absent.bin"));
  EXPECT_THROW_WITH(load_training_data(o), "absent.bin", "cannot open");
  o.train_paths = {::testing::TempDir()};
  EXPECT_THROW_WITH(load_training_data(o), "directory");
  o.train_paths = {};
  EXPECT_THROW_WITH(load_training_data(o), "no training files");
  const std::string text = temp_path("needs_tokenizer.txt");
  write_text(text, "hello");
  o.train_paths = {text};
  EXPECT_THROW_WITH(load_training_data(o), "needs_tokenizer.txt", "is text", "tokenizer is needed");
  std::remove(text.c_str());
}

// Text and JSONL are tokenised at load; the same JSONL prepared once into a token file gives the
// same batches.
TEST(TokenWindows, TextAndJsonlTokenisedAtLoadEqualAPreparedFile) {
  const auto tok = tk::load_tokenizer(tk::testing::fixture("hf_gpt2.json"));
  const std::string tokenizer_path = tk::testing::fixture("hf_gpt2.json");
  const std::string corpus = tk::read_file(tk::testing::fixture("corpus.txt"));
  const std::string txt = temp_path("corpus.txt"), jsonl = temp_path("corpus.jsonl"), bin = temp_path("corpus.bin");
  write_text(txt, corpus);
  std::string lines;
  std::vector<TokenId> expected;
  std::istringstream corpus_lines(corpus);
  for (std::string doc; std::getline(corpus_lines, doc);) {  // a document per line
    lines += "{\"text\": " + nlohmann::json(doc).dump() + "}\n";
    const auto ids = tok->encode(doc);
    expected.insert(expected.end(), ids.begin(), ids.end());
    expected.push_back(*tk::end_of_text_id(*tok));
  }
  write_text(jsonl, lines);
  tk::PrepareOptions prepare;
  prepare.document_separator = tk::end_of_text_id(*tok);
  tk::prepare_token_file(*tok, {jsonl}, bin, prepare);
  ASSERT_EQ(tk::TokenFile(bin).read_all(), expected);

  DataOptions o = windows_options(jsonl);
  o.tokenizer = tokenizer_path;
  o.vocab_size = static_cast<int64_t>(tok->vocab_size());
  const TrainingData from_jsonl = load_training_data(o);
  o.train_paths = {bin};
  const TrainingData from_bin = load_training_data(o);
  for (uint64_t i : {0u, 3u, 9u}) {
    EXPECT_EQ(values(from_jsonl.train->batch(i).inputs), values(from_bin.train->batch(i).inputs));
    EXPECT_EQ(values(from_jsonl.val->batch(i).targets), values(from_bin.val->batch(i).targets));
  }
  // a text file is one document, encoded whole, without an end-of-text token
  o.train_paths = {txt};
  o.val_fraction = 0;
  o.context = static_cast<int64_t>(tok->encode(corpus).size()) - 1;  // one window: the whole file
  o.batch_size = 1;
  const auto whole = tok->encode(corpus);
  const auto x = values(load_training_data(o).train->batch(0).inputs);
  EXPECT_EQ(x, std::vector<int64_t>(whole.begin(), whole.end() - 1));
  for (const auto& p : {txt, jsonl, bin}) std::remove(p.c_str());
}

TEST(TokenWindows, MalformedJsonlNamesTheLine) {
  const std::string path = temp_path("broken.jsonl");
  write_text(path, "{\"text\": \"a b c\"}\n{\"text\": \"d e\"}\n{\"text\": \"f\"\n");
  DataOptions o = windows_options(path);
  o.tokenizer = tk::testing::fixture("hf_gpt2.json");
  EXPECT_THROW_WITH(load_training_data(o), "broken.jsonl:3:", "not valid JSON");
  write_text(path, "{\"text\": \"a b c\"}\n{\"txt\": \"d e\"}\n");
  EXPECT_THROW_WITH(load_training_data(o), "broken.jsonl:2:", "no \"text\" field");
  write_text(path, "\n{\"text\": \"a\"} x\n");
  EXPECT_THROW_WITH(load_training_data(o), "broken.jsonl:2:", "not valid JSON");
  std::remove(path.c_str());
}

// ---- supervised fine-tuning ----

// A tokenizer.json of byte_tokenizer with ChatML's specials: <|endoftext|> 256, <|im_start|> 257,
// <|im_end|> 258.
std::string chatml_tokenizer_file() {
  const std::string path = temp_path("chatml_tokenizer.json");
  tk::testing::byte_tokenizer({"<|endoftext|>", "<|im_start|>", "<|im_end|>"}).save(path);
  return path;
}

std::string conversation_line(const std::vector<std::pair<std::string, std::string>>& messages) {
  nlohmann::json conversation = nlohmann::json::array();
  for (const auto& [role, content] : messages) conversation.push_back({{"role", role}, {"content", content}});
  return nlohmann::json{{"conversations", conversation}}.dump() + "\n";
}

TEST(SftBatches, PreferencePairsAreTheSftRowsOfChosenThenRejected) {
  using Messages = std::vector<std::pair<std::string, std::string>>;
  auto messages_json = [](const Messages& messages) {
    nlohmann::json conversation = nlohmann::json::array();
    for (const auto& [role, content] : messages) conversation.push_back({{"role", role}, {"content", content}});
    return conversation;
  };
  const std::vector<std::pair<Messages, Messages>> pairs = {
      {{{"user", "Hi"}, {"assistant", "Yo"}}, {{"user", "Hi"}, {"assistant", "No"}}},
      {{{"user", "a"}, {"assistant", "bb"}}, {{"user", "a"}, {"assistant", "c"}}},
      // the rejected answer starts past context + 1: the pair goes, chosen included
      {{{"user", "q"}, {"assistant", "ok"}}, {{"user", std::string(60, 'u')}, {"assistant", "late"}}}};
  const std::string tokenizer = chatml_tokenizer_file(), path = temp_path("pairs.jsonl");
  std::string lines;
  for (const auto& [chosen, rejected] : pairs)
    lines += nlohmann::json{{"chosen", messages_json(chosen)}, {"rejected", messages_json(rejected)}}.dump() + "\n";
  write_text(path, lines);
  DataOptions o;
  o.train_paths = {path};
  o.tokenizer = tokenizer;
  o.batch_size = 2;
  o.context = 64;
  o.val_fraction = 0;
  o.pad_to_context = true;
  o.preference_pairs = true;
  o.show_progress = false;
  const TrainingData data = load_training_data(o);
  const auto& batches = dynamic_cast<const SftBatches&>(*data.train);
  EXPECT_EQ(batches.group(), 2);
  EXPECT_NE(data.train->describe().find("2 preference pairs"), std::string::npos) << data.train->describe();
  EXPECT_NE(data.train->describe().find("warning: 1 preference pairs left out because the response mask"),
            std::string::npos)
      << data.train->describe();
  const Batch batch = data.train->batch(0);
  ASSERT_EQ(batch.inputs.shape(), (Shape{4, 64}));
  // each row equals the SFT batch of that conversation alone: same template, ids and mask
  DataOptions sft = o;
  sft.preference_pairs = false;
  sft.batch_size = 1;
  sft.train_paths = {temp_path("one.jsonl")};
  int64_t targets = 0;
  for (int64_t b = 0; b < 2; ++b) {
    const auto& [chosen, rejected] = pairs.at(batches.example_index(0, b));
    for (int64_t side = 0; side < 2; ++side) {
      SCOPED_TRACE("pair row " + std::to_string(b) + (side ? " rejected" : " chosen"));
      write_text(sft.train_paths[0], conversation_line(side ? rejected : chosen));
      const Batch one = load_training_data(sft).train->batch(0);
      EXPECT_EQ(values(batch.inputs.select(0, 2 * b + side)), values(one.inputs.select(0, 0)));
      EXPECT_EQ(values(batch.targets.select(0, 2 * b + side)), values(one.targets.select(0, 0)));
      targets += one.target_tokens;
    }
  }
  EXPECT_EQ(batch.target_tokens, targets);
  // without preference_pairs such a file is refused, naming the flag
  o.preference_pairs = false;
  EXPECT_THROW_WITH(load_training_data(o), path, "chosen/rejected preference pairs", "--objective dpo");
  for (const auto& p : {tokenizer, path, sft.train_paths[0]}) std::remove(p.c_str());
}

TEST(SftBatches, LossMaskIsExactOnAHandCheckedConversation) {
  const std::string tokenizer = chatml_tokenizer_file(), path = temp_path("hand.jsonl");
  write_text(path, conversation_line({{"system", "S"}, {"user", "Hi"}, {"assistant", "Yo"}}));
  DataOptions o;
  o.train_paths = {path};
  o.tokenizer = tokenizer;
  o.batch_size = 1;
  o.context = 39;  // windows of 40: the 36 tokens and 4 of padding
  o.val_fraction = 0;
  o.pad_to_context = true;
  o.show_progress = false;
  const Batch batch = load_training_data(o).train->batch(0);
  // the conversation: <|im_start|>system\nS<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n
  //                   <|im_start|>assistant\nYo<|im_end|>\n
  std::vector<int64_t> ids{257};
  for (const char* part : {"system\nS", "*\n", "+user\nHi", "*\n", "+assistant\nYo", "*\n"})
    for (const char* c = part; *c; ++c) ids.push_back(*c == '*' ? 258 : *c == '+' ? 257 : static_cast<unsigned char>(*c));
  ASSERT_EQ(ids.size(), 36u);
  std::vector<int64_t> inputs(ids.begin(), ids.end() - 1);
  inputs.resize(39, 258);  // padded with <|im_end|>
  EXPECT_EQ(values(batch.inputs), inputs);
  // every target: only "Y", "o", <|im_end|> and the closing "\n" are trained (MiniMind's mask)
  const int64_t I = kIgnoreIndex;
  const std::vector<int64_t> targets{
      I, I, I, I, I, I, I, I, I, I,  // predicting ids 1..10: "system\nS<|im_end|>\n"
      I, I, I, I, I, I, I, I, I, I,  // ids 11..20: "<|im_start|>user\nHi<|im_end|>\n"
      I, I, I, I, I, I, I, I, I, I,  // ids 21..30: "<|im_start|>assistant"
      I, 'Y', 'o', 258, '\n',        // ids 31..35: the "\n" MiniMind skips, then the reply, its
                                     // <|im_end|> and the "\n" after it
      I, I, I, I};                   // padding
  ASSERT_EQ(targets.size(), 39u);
  EXPECT_EQ(values(batch.targets), targets);
  EXPECT_EQ(batch.target_tokens, 4);
  for (const auto& p : {tokenizer, path}) std::remove(p.c_str());
}

TEST(SftBatches, PaddingIsIgnoredAndShapesFollowTheLongestRow) {
  const std::string tokenizer = chatml_tokenizer_file(), path = temp_path("pad.jsonl");
  std::string lines;
  lines += conversation_line({{"system", ""}, {"user", "a"}, {"assistant", "bb"}});
  lines += conversation_line({{"system", ""}, {"user", "a much longer question"}, {"assistant", "c"}});
  write_text(path, lines);
  DataOptions o;
  o.train_paths = {path};
  o.tokenizer = tokenizer;
  o.batch_size = 2;
  o.context = 100;
  o.val_fraction = 0;
  o.pad_id = 0;
  o.show_progress = false;
  const auto data = load_training_data(o);
  const auto& sft = dynamic_cast<const SftBatches&>(*data.train);
  const Batch batch = data.train->batch(0);
  const int64_t long_row = sft.example_index(0, 0) == 1 ? 0 : 1, short_row = 1 - long_row;
  const int64_t long_len = 10 + 30 + 14;  // system turn, user turn, assistant turn
  const int64_t short_len = 10 + 9 + 15;
  ASSERT_EQ(batch.inputs.shape(), (Shape{2, long_len - 1}));
  const auto x = values(batch.inputs), y = values(batch.targets);
  const int64_t T = long_len - 1;
  for (int64_t t = short_len - 1; t < T; ++t) {
    EXPECT_EQ(x[short_row * T + t], 0) << t;             // the pad id
    EXPECT_EQ(y[short_row * T + t], kIgnoreIndex) << t;  // never a target
  }
  EXPECT_EQ(batch.target_tokens, (2 + 2) + (1 + 2));  // "bb" / "c", each with <|im_end|> and "\n"
  o.pad_to_context = true;
  EXPECT_EQ(load_training_data(o).train->batch(0).inputs.shape(), (Shape{2, 100}));
  for (const auto& p : {tokenizer, path}) std::remove(p.c_str());
}

TEST(SftBatches, ShuffledOncePerEpochBySeedAndTruncatedToTheContext) {
  const std::string tokenizer = chatml_tokenizer_file(), path = temp_path("epochs.jsonl");
  std::string lines;
  for (int k = 0; k < 10; ++k) lines += conversation_line({{"user", "q"}, {"assistant", std::string(k + 1, 'x')}});
  lines += conversation_line({{"user", std::string(200, 'u')}, {"assistant", "late"}});  // nothing trained within 65
  write_text(path, lines);
  DataOptions o;
  o.train_paths = {path};
  o.tokenizer = tokenizer;
  o.batch_size = 3;
  o.context = 64;
  o.val_fraction = 0.2;  // the last 2 of the 10 kept conversations
  o.show_progress = false;
  const auto data = load_training_data(o);
  const auto& train = dynamic_cast<const SftBatches&>(*data.train);
  const auto& val = dynamic_cast<const SftBatches&>(*data.val);
  EXPECT_NE(train.describe().find("1 left out"), std::string::npos) << train.describe();
  // each epoch of 8 visits every training conversation once; epochs differ
  std::vector<std::vector<size_t>> epochs(3);
  for (uint64_t k = 0; k < 24; ++k) epochs[k / 8].push_back(train.example_index(k / 3, static_cast<int64_t>(k % 3)));
  for (auto epoch : epochs) {
    std::sort(epoch.begin(), epoch.end());
    EXPECT_EQ(epoch, (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  }
  EXPECT_NE(epochs[0], epochs[1]);
  // validation: conversations 8 and 9 in file order, wrapping
  EXPECT_EQ(val.example_index(0, 0), 8u);
  EXPECT_EQ(val.example_index(0, 1), 9u);
  EXPECT_EQ(val.example_index(0, 2), 8u);
  // the same seed gives the same order, another seed another one
  const auto again = load_training_data(o);
  o.seed = 7;
  const auto other = load_training_data(o);
  EXPECT_EQ(values(again.train->batch(4).inputs), values(data.train->batch(4).inputs));
  std::vector<size_t> first_other;
  for (int64_t b = 0; b < 3; ++b) first_other.push_back(dynamic_cast<const SftBatches&>(*other.train).example_index(0, b));
  EXPECT_NE(first_other, std::vector<size_t>(epochs[0].begin(), epochs[0].begin() + 3));
  // a conversation longer than the context is cut to context + 1 tokens; a reply cut short is
  // trained to the end of the window
  write_text(path, conversation_line({{"user", "q"}, {"assistant", std::string(100, 'y')}}));
  o.val_fraction = 0;
  o.batch_size = 1;
  const Batch cut = load_training_data(o).train->batch(0);
  ASSERT_EQ(cut.inputs.shape(), (Shape{1, 64}));
  const int64_t prefix = 1 + 34 + 2 + 1 + 6 + 2 + 1 + 10;  // system, user, "<|im_start|>assistant\n"
  EXPECT_EQ(cut.target_tokens, 64 - prefix + 1);
  for (const auto& p : {tokenizer, path}) std::remove(p.c_str());
}

TEST(SftBatches, MalformedConversationsNameFileAndLine) {
  const std::string tokenizer = chatml_tokenizer_file(), path = temp_path("roles.jsonl");
  DataOptions o;
  o.train_paths = {path};
  o.tokenizer = tokenizer;
  o.show_progress = false;
  const std::string good = conversation_line({{"user", "q"}, {"assistant", "a"}});
  write_text(path, good + conversation_line({{"user", "q"}, {"bot", "a"}}));
  EXPECT_THROW_WITH(load_training_data(o), "roles.jsonl:2:", "message 1", "unknown role 'bot'");
  write_text(path, good + good + "{\"conversations\": [{\"role\": \"user\"}]}\n");
  EXPECT_THROW_WITH(load_training_data(o), "roles.jsonl:3:", "message 0 has no \"content\"");
  write_text(path, good + "{\"conversations\": [{\"role\": \"user\", \"content\": 5}]}\n");
  EXPECT_THROW_WITH(load_training_data(o), "roles.jsonl:2:", "\"content\" is not a string");
  write_text(path, good + "{\"conversations\": {\"role\": \"user\"}}\n");
  EXPECT_THROW_WITH(load_training_data(o), "roles.jsonl:2:", "\"conversations\" is not an array");
  write_text(path, good + "{\"conversations\": [}\n");
  EXPECT_THROW_WITH(load_training_data(o), "roles.jsonl:2:", "not valid JSON");
  // chat and documents do not mix
  const std::string docs = temp_path("docs.jsonl");
  write_text(path, good + good);
  write_text(docs, "{\"text\": \"abc\"}\n");
  o.val_paths = {docs};
  EXPECT_THROW_WITH(load_training_data(o), "docs.jsonl is JSONL of documents", "one kind of data");
  o.val_paths = {};
  o.chat_template = "nanochat";
  EXPECT_THROW_WITH(load_training_data(o), "nanochat", "<|bos|>");
  o.chat_template = "chatml";
  o.vocab_size = 200;  // the rendered ids reach 258
  EXPECT_THROW_WITH(load_training_data(o), "roles.jsonl:1", "id 257", "vocabulary size 200");
  for (const auto& p : {tokenizer, path, docs}) std::remove(p.c_str());
}

std::string completion_line(const std::string& prompt, const std::string& completion) {
  return nlohmann::json{{"prompt", prompt}, {"completion", completion}}.dump() + "\n";
}

TEST(SftBatches, PromptCompletionPairsTrainOnTheCompletionAndEndOfText) {
  const std::string tokenizer = chatml_tokenizer_file(), path = temp_path("pairs.jsonl");
  write_text(path, completion_line("ab", "cd") + completion_line("wxyz", "v"));
  DataOptions o;
  o.train_paths = {path};
  o.tokenizer = tokenizer;
  o.batch_size = 2;
  o.context = 16;
  o.val_fraction = 0;
  o.show_progress = false;
  const auto data = load_training_data(o);
  const auto& pairs = dynamic_cast<const SftBatches&>(*data.train);
  const Batch batch = data.train->batch(0);
  // ids "abcd" <|endoftext|> (256) and "wxyzv" <|endoftext|>: the longer gives T = 5
  ASSERT_EQ(batch.inputs.shape(), (Shape{2, 5}));
  const int64_t I = kIgnoreIndex;
  const std::vector<std::vector<int64_t>> inputs{{'a', 'b', 'c', 'd', 256}, {'w', 'x', 'y', 'z', 'v'}};
  const std::vector<std::vector<int64_t>> targets{{I, 'c', 'd', 256, I}, {I, I, I, 'v', 256}};
  const auto x = values(batch.inputs), y = values(batch.targets);
  for (int64_t row = 0; row < 2; ++row) {
    const size_t k = pairs.example_index(0, row);
    EXPECT_EQ(std::vector<int64_t>(x.begin() + row * 5, x.begin() + row * 5 + 5), inputs[k]) << row;
    EXPECT_EQ(std::vector<int64_t>(y.begin() + row * 5, y.begin() + row * 5 + 5), targets[k]) << row;
  }
  EXPECT_EQ(batch.target_tokens, 3 + 2);

  // a tokenizer without an end-of-text token: the completion alone, padded with id 0
  const std::string chars = temp_path("pair_chars.json");
  tk::CharTokenizer::train("abcdvwxyz").save(chars);
  o.tokenizer = chars;
  const Batch plain = load_training_data(o).train->batch(0);
  ASSERT_EQ(plain.inputs.shape(), (Shape{2, 4}));
  EXPECT_EQ(plain.target_tokens, 2 + 1);
  for (int64_t t : values(plain.inputs)) EXPECT_GE(t, 0);

  // malformed pairs name file and line; pairs mix with no other kind
  o.tokenizer = tokenizer;
  write_text(path, completion_line("a", "b") + "{\"prompt\": \"a\"}\n");
  EXPECT_THROW_WITH(load_training_data(o), "pairs.jsonl:2:", "no \"completion\" field");
  write_text(path, completion_line("a", "b") + "{\"prompt\": \"a\", \"completion\": [1]}\n");
  EXPECT_THROW_WITH(load_training_data(o), "pairs.jsonl:2:", "\"completion\" is not a string");
  const std::string chat = temp_path("pair_chat.jsonl");
  write_text(path, completion_line("a", "b") + completion_line("c", "d"));
  write_text(chat, conversation_line({{"user", "q"}, {"assistant", "a"}}));
  o.val_paths = {chat};
  EXPECT_THROW_WITH(load_training_data(o), "pair_chat.jsonl is JSONL of conversations",
                    "is JSONL of prompt-completion pairs", "one kind of data");
  for (const auto& p : {tokenizer, path, chars, chat}) std::remove(p.c_str());
}

// With no template named, chat data of a Hugging Face folder whose tokenizer_config.json has a
// chat_template is rendered by that template (Qwen2.5's here: transformers' ids from
// tools/golden/hf_chat_template_fixtures.py), not by ChatML (which adds MiniMind's system message).
TEST(SftBatches, AFolderChatTemplateRendersTheConversations) {
  const auto golden = nlohmann::ordered_json::parse(tk::read_file(tk::testing::fixture("hf_chat_templates.json")));
  const auto& qwen = golden.at("templates").at(1);
  ASSERT_EQ(qwen.at("name"), "qwen2.5");
  const auto& c = qwen.at("cases").at(2);  // [user, assistant], no generation prompt
  ASSERT_FALSE(c.at("add_generation_prompt").get<bool>());
  ASSERT_EQ(c.at("messages").size(), 2u);
  const auto folder = std::filesystem::path(temp_path("qwen_folder"));
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  std::filesystem::copy_file(tk::testing::fixture("hf_gpt2.json"), folder / "tokenizer.json");
  nlohmann::ordered_json config = qwen.at("special_tokens");
  config["chat_template"] = qwen.at("template");
  write_text((folder / "tokenizer_config.json").string(), config.dump());
  const std::string path = (folder / "chat.jsonl").string();
  write_text(path, nlohmann::json{{"conversations", c.at("messages")}}.dump() + "\n");
  DataOptions o;
  o.train_paths = {path};
  o.tokenizer = (folder / "tokenizer.json").string();
  o.batch_size = 1;
  o.context = 200;
  o.val_fraction = 0;
  o.show_progress = false;
  const auto ids = c.at("ids").get<std::vector<int64_t>>();
  const Batch batch = load_training_data(o).train->batch(0);
  const auto inputs = values(batch.inputs);
  EXPECT_EQ(std::vector<int64_t>(inputs.begin(), inputs.end()), std::vector<int64_t>(ids.begin(), ids.end() - 1));
  // the targets are the reply and its <|im_end|>: what the template renders after the prompt
  const auto tok = tk::load_tokenizer(o.tokenizer);
  std::vector<TokenId> targets;
  for (const int64_t t : values(batch.targets))
    if (t != kIgnoreIndex) targets.push_back(static_cast<TokenId>(t));
  EXPECT_EQ(tok->decode(targets), c.at("messages").at(1).at("content").get<std::string>() + "<|im_end|>");
  // a GGUF tokenizer written from that folder carries the template as tokenizer.chat_template, which
  // renders the same batch (the fixture's added tokens without the options GGUF cannot spell)
  auto spellable = nlohmann::ordered_json::parse(tk::read_file(o.tokenizer));
  for (auto& added : spellable.at("added_tokens")) added["lstrip"] = added["rstrip"] = added["single_word"] = false;
  const tk::BpeTokenizer bpe = tk::tokenizer_from_json(spellable.dump(), "tokenizer.json");
  o.tokenizer = (folder / "model.gguf").string();
  io::write_gguf(o.tokenizer, tk::gguf_tokenizer_metadata(bpe, bpe.vocab_size(), "tokenizer.json", qwen.at("template")), {});
  const Batch from_gguf = load_training_data(o).train->batch(0);
  EXPECT_EQ(values(from_gguf.inputs), values(batch.inputs));
  EXPECT_EQ(values(from_gguf.targets), values(batch.targets));
  std::filesystem::remove_all(folder);
}

// The SFT loader on MiniMind-format conversations gives the ids and mask of transformers'
// apply_chat_template and MiniMind's loss mask (tools/tokenizer/chat_template_golden.py).
TEST(SftBatches, LoaderEqualsTransformersGolden) {
  const auto tok = tk::load_tokenizer(tk::testing::fixture("hf_gpt2.json"));
  const auto chatml = tk::make_chat_template("chatml", *tok);
  SftExamples examples;
  read_sft_jsonl(tk::testing::fixture("chat_minimind.jsonl"), *chatml, 1000, examples);
  const auto golden = tk::testing::chat_golden();
  ASSERT_EQ(examples.size(), 2u);
  ASSERT_EQ(golden.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(std::vector<TokenId>(examples.ids(k).begin(), examples.ids(k).end()), golden[k].first);
    EXPECT_EQ(std::vector<uint8_t>(examples.trained(k).begin(), examples.trained(k).end()), golden[k].second);
  }
  EXPECT_EQ(examples.origin(1), tk::testing::fixture("chat_minimind.jsonl") + ":2");
}

// MiniMind's template from the Hugging Face fixtures, over hf_gpt2.json.
struct MiniMindTemplate {
  nlohmann::ordered_json golden = nlohmann::ordered_json::parse(tk::read_file(tk::testing::fixture("hf_chat_templates.json")));
  const nlohmann::ordered_json& entry = golden.at("templates").at(0);
  std::unique_ptr<tk::Tokenizer> tok = tk::load_tokenizer(tk::testing::fixture("hf_gpt2.json"));
  tk::HfChatTemplate chat = make();

  tk::HfChatTemplate make() const {
    std::vector<std::pair<std::string, std::string>> special;
    for (const auto& [k, v] : entry.at("special_tokens").items()) special.emplace_back(k, v.get<std::string>());
    return tk::HfChatTemplate("minimind", entry.at("template").get<std::string>(), special, *tok);
  }
};

// The examples of a JSONL file read with `chat`.
SftExamples read_chat(const std::string& path, const tk::ChatTemplate& chat) {
  SftExamples examples;
  read_sft_jsonl(path, chat, 100000, examples);
  return examples;
}

// A conversation with tools in MiniMind's SFT form (SFTDataset.create_chat_prompt at d65ef2c: "tools" on
// the system message and "tool_calls" as strings of JSON, the reasoning in "reasoning_content"; or, as
// datasets' Features writes it, every key on every message, null where unset) reads as its structured
// form (lists), as its form with the record's "tools", and as transformers renders it (the fixture's ids);
// the mask is MiniMind's generate_labels (tests/tokenizer/test_hf_chat_template.cpp checks the rule).
TEST(SftBatches, MiniMindToolConversationsReadAsTheirStructuredForm) {
  const MiniMindTemplate m;
  using ojson = nlohmann::ordered_json;
  size_t cases = 0;
  for (const auto& c : m.entry.at("sft_tool_cases")) {
    const ojson& tools = c.at("tools");
    ojson structured = ojson::array(), minimind = ojson::array(), features = ojson::array(), top = ojson::array();
    bool system = false;
    for (size_t i = 0; i < c.at("messages").size(); ++i) {
      const ojson& message = c.at("messages")[i];
      ojson s = message, mm = message, all = ojson::object();
      if (i == 0 && message.at("role") == "system") {
        system = true;
        s["tools"] = tools;
        mm["tools"] = tools.dump();
      }
      if (message.contains("tool_calls")) mm["tool_calls"] = message.at("tool_calls").dump();
      for (const char* key : {"role", "content", "reasoning_content", "tools", "tool_calls"})
        all[key] = mm.contains(key) ? mm[key] : ojson();
      if (message.contains("tool_call_id")) all["tool_call_id"] = message.at("tool_call_id");
      structured.push_back(s);
      minimind.push_back(mm);
      features.push_back(all);
      top.push_back(message);
    }
    // without a system message (MiniMind reads tools from one only) the tools are the record's
    const std::string path = temp_path("minimind_tools.jsonl");
    write_text(path, ojson{{"conversations", structured}, {"tools", system ? ojson() : tools}}.dump() + "\n" +
                         ojson{{"conversations", minimind}, {"tools", system ? ojson() : ojson(tools.dump())}}.dump() + "\n" +
                         ojson{{"conversations", features}, {"tools", system ? ojson() : tools}, {"id", 7}}.dump() + "\n" +
                         ojson{{"conversations", top}, {"tools", tools}}.dump() + "\n");
    const SftExamples examples = read_chat(path, m.chat);
    ASSERT_EQ(examples.size(), 4u);
    const auto want = c.at("ids").get<std::vector<TokenId>>();
    for (size_t k = 0; k < 4; ++k) {
      EXPECT_EQ(std::vector<TokenId>(examples.ids(k).begin(), examples.ids(k).end()), want) << k << " " << c.at("messages").dump();
      EXPECT_EQ(std::vector<uint8_t>(examples.trained(k).begin(), examples.trained(k).end()),
                std::vector<uint8_t>(examples.trained(0).begin(), examples.trained(0).end())) << k;
    }
    // the assistant's tokens and only those: each reply's <tool_call>s are trained, no <tool_response> is
    std::vector<TokenId> trained, untrained;
    for (size_t t = 0; t < want.size(); ++t) (examples.trained(0)[t] ? trained : untrained).push_back(want[t]);
    EXPECT_NE(m.tok->decode(trained).find("<tool_call>"), std::string::npos);
    EXPECT_EQ(m.tok->decode(trained).find("<tool_response>"), std::string::npos);
    EXPECT_EQ(m.tok->decode(trained).find("# Tools"), std::string::npos);
    EXPECT_EQ(m.tok->decode(untrained).find("<tool_call>\n{\"name\": \"get_weather\""), std::string::npos);
    std::remove(path.c_str());
    ++cases;
  }
  EXPECT_EQ(cases, 4u);
}

// Each fault of a tool conversation is one line naming the file, the line, the message and the key.
TEST(SftBatches, MalformedToolConversationsNameFileLineAndKey) {
  const MiniMindTemplate m;
  const std::string path = temp_path("bad_tools.jsonl");
  const std::string tools = R"([{"type": "function", "function": {"name": "now"}}])";
  const std::string good = R"({"conversations": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]})";
  auto line = [&](const std::string& system, const std::string& assistant) {
    return good + "\n" + R"({"conversations": [{"role": "system", "content": "s")" + system +
           R"(}, {"role": "user", "content": "q"}, {"role": "assistant")" + assistant + "}]}\n";
  };
  const std::vector<std::pair<std::string, std::vector<std::string>>> faults{
      {line(R"(, "tools": "[{\"type\": ")", R"(, "content": "a")"),
       {"bad_tools.jsonl:2:", "message 0", "\"tools\" (a string) is not valid JSON"}},
      {line(R"(, "tools": "{\"type\": \"function\"}")", R"(, "content": "a")"),
       {"bad_tools.jsonl:2:", "message 0", "\"tools\" is not a list but {\"type\":\"function\"}"}},
      {line(R"(, "tools": [1])", R"(, "content": "a")"), {"bad_tools.jsonl:2:", "message 0", "\"tools\": item 0 is not an object"}},
      {line("", R"(, "tool_calls": "[{\"name\": \"now\", ")"),
       {"bad_tools.jsonl:2:", "message 2", "\"tool_calls\" (a string) is not valid JSON"}},
      {line("", R"(, "tool_calls": ["now"])"), {"bad_tools.jsonl:2:", "message 2", "\"tool_calls\": item 0 is not an object"}},
      {line("", R"(, "content": "a", "weight": 0)"), {"bad_tools.jsonl:2:", "message 2", "unknown key \"weight\""}},
      {line(R"(, "name": "x")", R"(, "content": "a")"), {"bad_tools.jsonl:2:", "message 0", "unknown key \"name\""}},
      {line(R"(, "tool_calls": [{"name": "now"}])", R"(, "content": "a")"),
       {"bad_tools.jsonl:2:", "message 0", "\"tool_calls\" on a message of role system"}},
      {line("", R"(, "content": "a", "tools": )" + nlohmann::json(tools).dump()),
       {"bad_tools.jsonl:2:", "message 2", "\"tools\" on a message of role assistant"}},
      {line("", R"(, "content": "a", "reasoning_content": 3)"),
       {"bad_tools.jsonl:2:", "message 2", "\"reasoning_content\" is not a string but 3"}},
      {line(R"(, "reasoning_content": "r")", R"(, "content": "a")"),
       {"bad_tools.jsonl:2:", "message 0", "\"reasoning_content\" on a message of role system"}},
      {line("", R"(, "content": "a", "tool_call_id": "c1")"),
       {"bad_tools.jsonl:2:", "message 2", "\"tool_call_id\" on a message of role assistant"}},
      {line("", R"(, "content": null)"), {"bad_tools.jsonl:2:", "message 2", "\"content\" is not a string but null"}},
      {good + "\n" + R"({"tools": )" + tools + R"(, "conversations": [{"role": "system", "content": "s", "tools": )" + tools +
           R"(}, {"role": "user", "content": "q"}]})" + "\n",
       {"bad_tools.jsonl:2:", "message 0", "\"tools\" given twice (also in the record's \"tools\")"}},
      {good + "\n" + R"({"tools": "[", "conversations": []})" + "\n", {"bad_tools.jsonl:2:", "\"tools\" (a string) is not valid JSON"}},
  };
  for (const auto& [text, parts] : faults) {
    write_text(path, text);
    try {
      read_chat(path, m.chat);
      ADD_FAILURE() << "no error for " << text;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      for (const std::string& part : parts) EXPECT_NE(what.find(part), std::string::npos) << what << " lacks " << part;
    }
  }
  // a template that cannot render tools or calls says so, naming the line
  const auto chatml = tk::make_chat_template("chatml", *m.tok);
  write_text(path, good + "\n" + R"({"tools": )" + tools + R"(, "conversations": [{"role": "user", "content": "q"}]})" + "\n");
  EXPECT_THROW_WITH(read_chat(path, *chatml), "bad_tools.jsonl:2:", "the chat template 'chatml' cannot render tools");
  write_text(path, good + "\n" + R"({"conversations": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": [{"name": "now", "arguments": {}}]}]})" + "\n");
  EXPECT_THROW_WITH(read_chat(path, *chatml), "bad_tools.jsonl:2:", "message 1: the chat template 'chatml' cannot render tool calls");
  // null and empty tools, calls and reasoning are none (MiniMind's falsy values), as is an unknown null key
  write_text(path, R"({"conversations": [{"role": "system", "content": "s", "tools": "", "tool_calls": null, "x": null}, {"role": "user", "content": "q", "tools": null}, {"role": "assistant", "content": "a", "tool_calls": "", "reasoning_content": null}]})" "\n" +
                       std::string(R"({"tools": [], "conversations": [{"role": "system", "content": "s", "tools": "[]"}, {"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "tool_calls": []}]})") + "\n" +
                       R"({"conversations": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]})" "\n");
  const SftExamples plain = read_chat(path, m.chat);
  ASSERT_EQ(plain.size(), 3u);
  for (size_t k = 1; k < 3; ++k) {
    EXPECT_TRUE(std::ranges::equal(plain.ids(k), plain.ids(0))) << k;
    EXPECT_TRUE(std::ranges::equal(plain.trained(k), plain.trained(0))) << k;
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace nf::data
