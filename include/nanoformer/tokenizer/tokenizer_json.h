#pragma once
// Hugging Face tokenizer.json for byte-level BPE and WordPiece (BERT): load and save.
//
// Byte-level BPE
// Supported (anything else is refused with an error naming the feature, never ignored):
//   model          BPE (the "type" may be absent, as in older files); vocab; merges as "a b"
//                  strings or ["a", "b"] pairs; unk_token, fuse_unk, ignore_merges; dropout null;
//                  byte_fallback false; continuing_subword_prefix / end_of_word_suffix empty
//   pre_tokenizer  ByteLevel (use_regex true = GPT-2 split, false = no split; add_prefix_space),
//                  or Sequence [Split(GPT-2 / GPT-4 / LLaMA-3 regex, Isolated), ByteLevel(use_regex
//                  false)], as LLaMA-3 files write it
//   decoder        ByteLevel
//   normalizer     null;  post_processor  null or ByteLevel;  truncation, padding  null
//   added_tokens   with special, single_word, lstrip, rstrip, normalized
// Saving writes the same subset, in a form Hugging Face tokenizers loads and encodes identically.
//
// WordPiece, as BERT files write it (anything else refused by name):
//   model          WordPiece: vocab, unk_token, continuing_subword_prefix, max_input_chars_per_word
//   normalizer     BertNormalizer (clean_text, handle_chinese_chars, strip_accents, lowercase) or null
//   pre_tokenizer  BertPreTokenizer
//   post_processor TemplateProcessing (single: special tokens around one $A) or BertProcessing, or
//                  null; only the single-sequence template is used (encode_with_special_tokens)
//   decoder        WordPiece (prefix, cleanup)
//   truncation, padding  kept and written back, not applied (see wordpiece_tokenizer.h)
#include <string>
#include <string_view>

#include <memory>

#include "nanoformer/tokenizer/bpe_tokenizer.h"
#include "nanoformer/tokenizer/wordpiece_tokenizer.h"

namespace nf::tokenizer {

// Parses tokenizer.json text; `source` names it in error messages (usually the file path).
BpeTokenizer tokenizer_from_json(std::string_view json_text, std::string_view source = "tokenizer.json");
BpeTokenizer load_tokenizer_json(const std::string& path);

std::string tokenizer_to_json(const BpeTokenizer& tokenizer);
void save_tokenizer_json(const BpeTokenizer& tokenizer, const std::string& path);

WordPieceTokenizer wordpiece_tokenizer_from_json(std::string_view json_text, std::string_view source = "tokenizer.json");
std::string tokenizer_to_json(const WordPieceTokenizer& tokenizer);
void save_tokenizer_json(const WordPieceTokenizer& tokenizer, const std::string& path);

// Either model, as the file's model.type says (WordPiece; anything else is read as BPE).
std::unique_ptr<Tokenizer> any_tokenizer_from_json(std::string_view json_text, std::string_view source = "tokenizer.json");

}  // namespace nf::tokenizer
