// Writes the seed corpora of the fuzz targets: small valid inputs made by the library's own
// writers (so they follow the formats exactly) plus the fixtures, one directory per target:
//   fuzz_make_seeds <out>   ->  <out>/safetensors/..., <out>/tokenizer_json/..., ...
// make fuzz (scripts/run-fuzz.sh) runs it before fuzzing; the seeds are not committed. Inputs
// that found bugs live in fuzz/corpus/<target>/ instead, and `make test` replays those.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "nanoformer/formats/gguf_checkpoint.h"
#include "nanoformer/io/gguf.h"
#include "nanoformer/models/quantize.h"
#include "nanoformer/tokenizer/byte_level.h"
#include "nanoformer/nanoformer.h"
#include "nanoformer/tokenizer/bpe_trainer.h"
#include "nanoformer/tokenizer/char_tokenizer.h"
#include "nanoformer/tokenizer/token_file.h"
#include "nanoformer/tokenizer/tokenizer_json.h"
#include "nanoformer/train/train_checkpoint.h"

namespace fs = std::filesystem;
using namespace nf;
using namespace nf::tokenizer;

namespace {

fs::path g_out;

fs::path dir(const std::string& target) {
  fs::create_directories(g_out / target);
  return g_out / target;
}

void write(const std::string& target, const std::string& name, const std::string& bytes) {
  std::ofstream f(dir(target) / name, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  NF_CHECK(f, "cannot write ", (dir(target) / name).string());
}

std::string fixture(const std::string& name) { return read_file(std::string(NF_TEST_DATA_DIR) + "/tokenizer/" + name); }

// A safetensors file made by hand: length prefix, header, data.
std::string raw_safetensors(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + data;
}

void safetensors_seeds() {
  const fs::path d = dir("safetensors");
  Generator gen(1);
  io::save_safetensors((d / "every_dtype.safetensors").string(),
                       {{"f64", randn({2, 2}, gen, DType::f64)},
                        {"i64", Tensor::from_vector<int64_t>({-1, 0, 1}, {3})},
                        {"f32", randn({2, 3}, gen)},
                        {"i32", Tensor::from_vector<int32_t>({7, -7}, {2})},
                        {"bf16", randn({3}, gen).to(DType::bf16)},
                        {"f16", randn({1, 2}, gen).to(DType::f16)},
                        {"bool", Tensor::from_vector<bool>({true, false, true}, {3})}},
                       {{"format", "pt"}});
  io::save_safetensors((d / "scalar_and_empty.safetensors").string(),
                       {{"scalar", Tensor::scalar(3.5)}, {"empty", Tensor::empty({0, 4})}});
  io::save_safetensors((d / "metadata_only.safetensors").string(), std::map<std::string, Tensor>{},
                       {{"step", "10"}, {"note", "é"}});
  // An unpadded header and tensors of mixed item sizes: views of unaligned bytes become copies.
  write("safetensors", "unaligned.safetensors",
        raw_safetensors(R"({"b":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1]},)"
                        R"("w":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}})",
                        std::string("\x01\x00\x00\x80\x3f\x00\x00\x00\x40", 9)));
  write("safetensors", "bool_byte_2.safetensors",
        raw_safetensors(R"({"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", std::string("\x01\x02", 2)));
}

// GGUF: the reference writer's fixtures (tests/fixtures/gguf/), files of our writer (alignment 1,
// empty values, no tensors), and fixtures with one field made to lie (fuzz/corpus/gguf/ holds a copy).
std::string with_u64(std::string bytes, size_t pos, uint64_t value) {
  for (int i = 0; i < 8; ++i) bytes[pos + static_cast<size_t>(i)] = static_cast<char>((value >> (8 * i)) & 0xFF);
  return bytes;
}

void gguf_seeds() {
  const fs::path d = dir("gguf");
  const std::string fixtures = std::string(NF_TEST_DATA_DIR) + "/gguf/";
  for (const char* name : {"metadata.gguf", "tensors.gguf", "align8.gguf", "nested_array.gguf"})
    fs::copy_file(fixtures + name, d / name, fs::copy_options::overwrite_existing);
  QuantizedTensor q8 = QuantizedTensor::empty(QuantType::q8_0, 2, 32), q4 = QuantizedTensor::empty(QuantType::q4_0, 1, 64);
  for (QuantizedTensor* q : {&q8, &q4})
    for (size_t i = 0; i < q->nbytes(); ++i) static_cast<unsigned char*>(q->mutable_data())[i] = static_cast<unsigned char>(i * 37);
  io::write_gguf((d / "alignment1.gguf").string(),
                 {{"general.architecture", std::string("llama")}, {"general.alignment", uint32_t{1}}},
                 {{"half", Tensor::of({1, -2, 3}, {3}, DType::f16), {}},
                  {"w", Tensor::of({0.5, 1.5, -2, 4}, {2, 2}), {}},
                  {"q8", Tensor(), q8},
                  {"brain", Tensor::of({1, 2}, {1, 2}, DType::bf16), {}},
                  {"q4", Tensor(), q4}});
  io::write_gguf((d / "empty_values.gguf").string(),
                 {{"s", std::string()}, {"strings", std::vector<std::string>{}}, {"bools", std::vector<bool>{true}},
                  {"i64", std::vector<int64_t>{}}},
                 {{"empty", Tensor::empty({0, 3}), {}}, {"scalar", Tensor::scalar(1.0), {}}});
  io::write_gguf((d / "no_tensors.gguf").string(), {{"general.name", std::string("n")}}, {});

  // tensors.gguf with one lie each: counts, a type nanoformer does not read, a misaligned or
  // overlapping offset, a cut in the tensor infos.
  const std::string good = read_file(fixtures + "tensors.gguf");
  const size_t q_type = good.find("blk.0.attn_q.weight") + 19 + 4 + 16;
  const size_t up_offset = good.find("blk.0.ffn_up.weight") + 19 + 4 + 16 + 4;
  write("gguf", "lie-kv-count.gguf", with_u64(good, 16, uint64_t{1} << 40));
  write("gguf", "lie-tensor-count.gguf", with_u64(good, 8, 1000));
  std::string iq4_nl = good;
  iq4_nl[q_type] = 20;
  write("gguf", "lie-type-iq4_nl.gguf", iq4_nl);
  write("gguf", "lie-offset-misaligned.gguf", with_u64(good, up_offset, 8));
  write("gguf", "lie-offset-overlap.gguf", with_u64(good, up_offset, 256 + 192));
  write("gguf", "cut-in-infos.gguf", good.substr(0, up_offset));
}

// A hand-written tokenizer.json in the smallest form we accept (mutations stay cheap).
std::string tiny_tokenizer(const std::string& pre_tokenizer, const std::string& extra_model = "") {
  return R"({"added_tokens":[{"id":4,"content":"<s>","special":true},{"id":5,"content":"cat","single_word":true,)"
         R"("lstrip":true,"rstrip":true,"normalized":true,"special":false}],"normalizer":null,"pre_tokenizer":)" +
         pre_tokenizer + R"(,"post_processor":{"type":"ByteLevel"},"decoder":{"type":"ByteLevel"},)" +
         R"("model":{"type":"BPE",)" + extra_model + R"("vocab":{"a":0,"b":1,"ab":2,"Ġ":3},"merges":["a b"]}})";
}

void tokenizer_json_seeds() {
  for (const char* name : {"hf_gpt2.json", "hf_gpt4.json", "hf_prefix.json"}) write("tokenizer_json", name, fixture(name));
  write("tokenizer_json", "tiny_bytelevel.json",
        tiny_tokenizer(R"({"type":"ByteLevel","add_prefix_space":true,"use_regex":true})"));
  write("tokenizer_json", "tiny_unk.json",
        tiny_tokenizer(R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":false})",
                       R"("unk_token":"Ġ","fuse_unk":true,"ignore_merges":true,"dropout":null,)"));
  write("tokenizer_json", "tiny_split.json",
        tiny_tokenizer(R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":)" +
                       nlohmann::json(pattern_regex(SplitPattern::kGpt4)).dump() +
                       R"(},"behavior":"Isolated","invert":false},)"
                       R"({"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false}]})"));
  // Trained here on the first lines of the fixture corpus: every byte token, a few merges.
  WordCounts words(SplitPattern::kGpt2, {"<|endoftext|>"});
  words.add_text(fixture("corpus.txt").substr(0, 600), 1);
  BpeTrainerOptions options;
  options.vocab_size = 290;
  options.special_tokens = {"<|endoftext|>"};
  options.threads = 1;
  write("tokenizer_json", "trained_290.json", tokenizer_to_json(train_bpe(words, options)));
}

// The smallest WordPiece tokenizer.json we accept with every part in use.
std::string tiny_wordpiece() {
  return R"({"truncation":null,"padding":null,"added_tokens":[{"id":0,"content":"[UNK]","special":true},)"
         R"({"id":1,"content":"[CLS]","special":true},{"id":2,"content":"[SEP]","special":true},)"
         R"({"id":7,"content":"<e>","normalized":true,"lstrip":true,"special":false}],)"
         R"("normalizer":{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,)"
         R"("lowercase":true},"pre_tokenizer":{"type":"BertPreTokenizer"},"post_processor":{"type":"TemplateProcessing",)"
         R"("single":[{"SpecialToken":{"id":"[CLS]","type_id":0}},{"Sequence":{"id":"A","type_id":0}},)"
         R"({"SpecialToken":{"id":"[SEP]","type_id":0}}],"pair":[],"special_tokens":{"[CLS]":{"id":"[CLS]","ids":[1],)"
         R"("tokens":["[CLS]"]},"[SEP]":{"id":"[SEP]","ids":[2],"tokens":["[SEP]"]}}},)"
         R"("decoder":{"type":"WordPiece","prefix":"##","cleanup":true},"model":{"type":"WordPiece","unk_token":"[UNK]",)"
         R"("continuing_subword_prefix":"##","max_input_chars_per_word":8,"vocab":{"[UNK]":0,"[CLS]":1,"[SEP]":2,)"
         R"("ab":3,"##c":4,"a":5,"##b":6,"<e>":7,".":8,"机":9}}})";
}

void wordpiece_seeds() {
  write("wordpiece", "wp_small.json", fixture("wp_small.json"));
  write("wordpiece", "tiny.json", tiny_wordpiece());
  write("wordpiece", "text_minilm", std::string(1, '\0') + "Héllo, WORLD! 机器学习 [CLS] naïve\ndon't\tstop\x01 \xff");
  write("wordpiece", "text_small", std::string(1, '\1') + "The [MASK] <ent> cat sat.\nOn the mat " + std::string(30, 'x'));
}

// A bpe_roundtrip input: the selector byte (tokenizer 0 GPT-2, 1 GPT-4, 2 prefix space; + 4 for
// encode_ordinary), then the text.
std::string roundtrip_input(size_t selector, std::string_view text) {
  std::string out(1, static_cast<char>(selector));
  out += text;
  return out;
}

void bpe_roundtrip_seeds() {
  const std::string parity = fixture("parity.txt");
  const std::string sep = "\n__nf_text__\n";
  size_t k = 0;
  for (size_t pos = 0; pos < parity.size(); ++k) {
    size_t end = parity.find(sep, pos);
    if (end == std::string::npos) end = parity.size();
    write("bpe_roundtrip", "parity_" + std::to_string(k), roundtrip_input(k % 8, parity.substr(pos, end - pos)));
    pos = end + sep.size();
  }
  write("bpe_roundtrip", "corpus_head", roundtrip_input(0, fixture("corpus.txt").substr(0, 1000)));
  write("bpe_roundtrip", "newline_cut", roundtrip_input(1, "line one\nLine two\n\n3 apples<|endoftext|>\nx"));
  write("bpe_roundtrip", "invalid_utf8", roundtrip_input(2, "\xff\xc3(\xe2\x82 \xf0\x9f\xa6 <|im_start|>\x80"));
}

void char_vocab_seeds() {
  write("char_vocab", "corpus.json", CharTokenizer::train(fixture("corpus.txt")).to_json());
  write("char_vocab", "small.json", CharTokenizer::train("ab é\n\xff").to_json());
  write("char_vocab", "empty.json", CharTokenizer::train("").to_json());
}

void token_file_seeds() {
  const fs::path d = dir("token_file");
  const BpeTokenizer tok = tokenizer_from_json(fixture("hf_gpt2.json"));
  const std::vector<TokenId> ids = tok.encode(fixture("corpus.txt").substr(0, 300));
  {
    TokenFileWriter w((d / "two_byte.bin").string(), tok.vocab_size());
    w.write(ids);
    w.close();
  }
  {
    TokenFileWriter w((d / "four_byte.bin").string(), 70000);
    w.write(std::vector<TokenId>{0, 69999, 65536, 12});
    w.close();
  }
  {
    TokenFileWriter w((d / "empty.bin").string(), 1);
    w.close();
  }
}

void load_tokenizer_seeds() {
  for (const char* target : {"tokenizer_json", "char_vocab"})
    for (const auto& e : fs::directory_iterator(dir(target)))
      if (e.file_size() <= 8192) fs::copy_file(e.path(), dir("load_tokenizer") / e.path().filename(),
                                               fs::copy_options::overwrite_existing);
}

// Request bodies and metrics logs: the committed corpus inputs (fuzz/corpus/<target>/) are the
// seeds, valid and invalid.
void copy_corpus_seeds(const std::string& target) {
  for (const auto& e : fs::directory_iterator(fs::path(NF_FUZZ_CORPUS_DIR) / target))
    fs::copy_file(e.path(), dir(target) / ("seed-" + e.path().filename().string()), fs::copy_options::overwrite_existing);
}

// GGUF models as our writer makes them: a tiny llama (Q8_0, with a byte-level tokenizer) and a tiny
// gpt2 (F32, tied); then the committed corpus (fuzz/corpus/gguf_model/: the same, and lying keys).
void gguf_model_seeds() {
  const fs::path d = dir("gguf_model");
  models::DecoderLMConfig llama = models::preset_config("llama2c-stories260k");
  llama.vocab_size = 260, llama.dim = 32, llama.n_layers = 1, llama.n_heads = 2, llama.n_kv_heads = 1;
  llama.max_seq_len = 16, llama.mlp_hidden = 32;
  Generator gen(3);
  models::DecoderLM tiny_llama(llama, gen);
  models::quantize_weights(tiny_llama, {.type = QuantType::q8_0});
  std::vector<AddedToken> specials = {{.id = 256, .content = "<|endoftext|>"}, {.id = 257, .content = "<|im_start|>"},
                                      {.id = 258, .content = "<|im_end|>"}};
  std::vector<std::optional<std::string>> bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(byte_level::encode(std::string(1, static_cast<char>(b))));
  BpeTokenizer(BpeModel(bytes, {}), specials).save((d / "tokenizer.json").string());
  formats::save_gguf(tiny_llama, (d / "llama_q8_0.gguf").string(), {.tokenizer = (d / "tokenizer.json").string()});
  fs::remove(d / "tokenizer.json");
  models::DecoderLMConfig gpt2 = models::preset_config("gpt-mini");
  gpt2.vocab_size = 16, gpt2.dim = 8, gpt2.n_layers = 1, gpt2.n_heads = 2, gpt2.max_seq_len = 8, gpt2.mlp_hidden = 16;
  formats::save_gguf(models::DecoderLM(gpt2, gen), (d / "gpt2_f32.gguf").string());
  // the llama with one key lying about a size the tensors do not check
  const io::GGUFFile good = io::GGUFFile::open((d / "llama_q8_0.gguf").string());
  for (const auto& [key, name] : {std::pair{"llama.context_length", "lie-context.gguf"},
                                  std::pair{"llama.block_count", "lie-block-count.gguf"}}) {
    std::vector<std::pair<std::string, io::GGUFValue>> metadata;
    for (const std::string& k : good.keys())  // (the tokenizer left out: smaller)
      if (!k.starts_with("tokenizer."))
        metadata.emplace_back(k, k == key ? io::GGUFValue(uint32_t{1} << 30) : good.get(k));
    std::vector<io::GGUFTensorSource> tensors;
    for (const io::GGUFTensorInfo& t : good.tensors()) {
      io::GGUFTensorSource source{.name = t.name, .dense = {}, .quantized = {}};
      if (is_block_quantized(t.type))
        source.quantized = good.quantized(t.name);
      else
        source.dense = good.dense(t.name);
      tensors.push_back(source);
    }
    io::write_gguf((d / name).string(), metadata, tensors);
  }
  copy_corpus_seeds("gguf_model");
}

// A tiny checkpoint (format version 2: every tensor checksummed) and a tiny training checkpoint
// (optimizer state, run state and config), as the library writes them; then the committed corpus.
void checkpoint_seeds() {
  const fs::path d = dir("checkpoint");
  const models::DecoderLMConfig config = models::parse_model_config(
      R"({"vocab_size": 16, "dim": 8, "n_layers": 1, "n_heads": 2, "max_seq_len": 8, "mlp_hidden": 16})", "seed");
  Generator gen(1);
  models::DecoderLM model(config, gen);
  formats::save_checkpoint(model, (d / "tiny-v2.safetensors").string());
  train::TrainConfig run;
  run.model = "tiny";
  run.data.train_paths = {"/data/tokens.bin"};
  run.optimizer.name = "adamw";
  run.out_dir = "/runs/tiny";
  const optim::OptimizerSet optimizer(run.optimizer, model);
  train::TrainState state;
  state.step = 1;
  state.next_batch_loss = 2.75;
  state.data_files = {{"/data/tokens.bin", 4096, 0x0123456789abcdefull}};
  train::save_train_checkpoint((d / "tiny-train-v2.safetensors").string(), model, optimizer, run, state);
  copy_corpus_seeds("checkpoint");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <output directory>\n", argv[0]);
    return 2;
  }
  g_out = argv[1];
  try {
    safetensors_seeds();
    gguf_seeds();
    gguf_model_seeds();
    tokenizer_json_seeds();
    wordpiece_seeds();
    bpe_roundtrip_seeds();
    char_vocab_seeds();
    token_file_seeds();
    load_tokenizer_seeds();
    checkpoint_seeds();
    copy_corpus_seeds("openai_request");
    copy_corpus_seeds("metrics_log");
    copy_corpus_seeds("grammar");
    copy_corpus_seeds("regex");
    copy_corpus_seeds("chat_template");
    copy_corpus_seeds("sentence_transformers");
    copy_corpus_seeds("nanochat_calculator");
    copy_corpus_seeds("tool_call");
    copy_corpus_seeds("sft_data");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_make_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
