#pragma once
// Byte-level BPE tokenizers in GGUF metadata, llama.cpp's tokenizer.ggml.* keys, read and written
// as llama.cpp's convert_hf_to_gguf.py writes them:
//   tokenizer.ggml.model       "gpt2" (byte-level BPE); any other model ("llama": SentencePiece, ...) is
//                              refused by name
//   tokenizer.ggml.tokens      every id's token: vocabulary entries in tokenizer.json's byte-level
//                              spelling, added tokens as their text
//   tokenizer.ggml.token_type  1 normal, 3 control (an added special token), 4 user-defined (an added
//                              token that is not special), 5 unused (no token: a gap, written "[PAD<id>]");
//                              2 unknown and 6 byte read as normal; absent: all normal
//   tokenizer.ggml.merges      "a b", in rank order
//   tokenizer.ggml.pre         the split before BPE, by llama.cpp's names: gpt-2 (phi-2, jina-es, ...:
//                              GPT-2's regex) -> the GPT-2 pattern; llama-bpe (llama3, llama-v3, falcon3,
//                              ...: LLaMA-3's regex) -> the GPT-4 pattern with ignore_merges, as llama.cpp
//                              sets it. Any other name is refused, 'default' and an absent key too: they
//                              mean llama.cpp's legacy split (punctuation runs first), which we do not have.
//   tokenizer.ggml.{bos,eos,eot,eom,unknown,seperator,padding}_token_id  checked to be ids of the list
//   tokenizer.ggml.add_bos_token  the bos id goes before prompts (gguf_prompt_bos); add_eos_token
//                              true is refused
//   tokenizer.chat_template    the model's own Jinja template (its tokenizer_config.json's), else for
//                              ChatML tokenizers MiniMind2's template (which llama.cpp recognises as
//                              chatml); read by chat, serve and SFT data as a folder's template is
//                              (hf_chat_template.h)
// Added tokens' single_word / lstrip / rstrip options have no GGUF spelling: writing refuses them.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nanoformer/io/gguf.h"
#include "nanoformer/tokenizer/bpe_tokenizer.h"

namespace nf::tokenizer {

using GGUFMetadata = std::vector<std::pair<std::string, io::GGUFValue>>;

// Whether the file holds a tokenizer: a tokenizer.ggml.model key that is not "none" / "no_vocab"
// (llama.cpp's model without a vocabulary: ids only).
bool has_gguf_tokenizer(const io::GGUFFile& file);
// The tokenizer of a GGUF file; throws nf::Error naming the file and the key or token at fault.
BpeTokenizer tokenizer_from_gguf(const io::GGUFFile& file);
// The id llama.cpp puts before a prompt it tokenises: the bos id when tokenizer.ggml.add_bos_token
// is true, or absent with a LLaMA-3 split (llama-bpe and its aliases, where llama.cpp defaults it to
// true); none otherwise. Throws naming the file and key when it is true without a bos id, and when
// tokenizer.ggml.add_eos_token is true (an end token after every prompt: not supported).
std::optional<TokenId> gguf_prompt_bos(const io::GGUFFile& file);
// The special ids the file names ("bos", "eos", "eot", "eom", "unknown", "seperator", "padding": the
// tokenizer.ggml.<name>_token_id keys present), each checked to be an id of the token list.
std::vector<std::pair<std::string, TokenId>> gguf_special_ids(const io::GGUFFile& file);
// The ids a GGUF file says end generation: its eos, eot and eom ids (those present), in that order.
std::vector<TokenId> gguf_end_ids(const io::GGUFFile& file);

// The tokenizer.* keys of a GGUF file holding `tokenizer` for a model of `vocab_size` ids (the token
// list is padded to it with unused "[PAD<id>]" entries): model, pre, tokens, token_type, merges, the
// special ids, add_bos_token / add_eos_token false (nanoformer adds neither), and `chat_template` (the
// model's Jinja source; empty: ChatML's for a ChatML tokenizer, else none).
// The special ids are those `special_tokens` names (tokenizer_config.json's bos_token, eos_token and
// pad_token, as convert_hf_to_gguf takes them) where the tokenizer has the text as one token; the
// others by default: ChatML's bos <|im_start|>, eos <|im_end|> and pad <|endoftext|>, else
// <|endoftext|> for bos and eos, as GPT-2's.
// Throws naming `source` and what GGUF cannot express: a split llama.cpp has no name for (none, or
// add_prefix_space), an added token's option, or more tokens than the model has ids.
GGUFMetadata gguf_tokenizer_metadata(const BpeTokenizer& tokenizer, size_t vocab_size, const std::string& source,
                                     const std::string& chat_template = {},
                                     const std::vector<std::pair<std::string, std::string>>& special_tokens = {});
// The tokenizer.* keys of a file written without a tokenizer: tokenizer.ggml.model "none", which
// llama.cpp loads as a model of ids only (vocab_size dummy tokens) where no key would be refused.
GGUFMetadata gguf_no_tokenizer_metadata();

}  // namespace nf::tokenizer
