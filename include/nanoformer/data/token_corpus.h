#pragma once
// A token stream made of parts laid end to end: memory-mapped token files (never copied into
// memory) and ids tokenised at load. Windows may cross from one part into the next, as they do
// in a corpus written to one file. Every position can be named ("tiny.bin, token 1234") for errors.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nanoformer/tokenizer/token_file.h"

namespace nf::data {

using tokenizer::TokenId;

class TokenCorpus {
 public:
  void add_file(tokenizer::TokenFile file);
  // `vocab_size`: the ids are known to be below it (the tokenizer's size).
  void add_ids(std::string source, std::vector<TokenId> ids, uint64_t vocab_size);

  uint64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Copies tokens [start, start + out.size()) into out; throws nf::Error when out of range.
  void read(uint64_t start, std::span<TokenId> out) const;
  // "tiny.bin, token 1234": the part holding `position` and the position within it.
  std::string locate(uint64_t position) const;
  // What check_vocab scanned: every token, the largest id, and how long it took.
  struct VocabCheck {
    uint64_t tokens = 0;
    TokenId max_id = 0;
    double seconds = 0;
  };
  // Checks that every id is below vocab_size (the model's) by one vectorised scan of each part for
  // its largest id; throws nf::Error naming the file, the position and the id, or a token file
  // whose header gives a vocabulary larger than vocab_size (both numbers).
  VocabCheck check_vocab(uint64_t vocab_size) const;
  // The parts' sources, joined with " + ".
  std::string sources() const;

 private:
  struct Part {
    std::string source;
    std::optional<tokenizer::TokenFile> file;  // a mapped file, or
    std::vector<TokenId> ids;                  // ids in memory
    uint64_t begin = 0, size = 0, vocab_size = 0;
  };
  const Part& part_at(uint64_t position) const;

  std::vector<Part> parts_;
  uint64_t size_ = 0;
};

}  // namespace nf::data
