#pragma once
// Training a byte-level BPE vocabulary from text, with the algorithm of Hugging Face's
// BpeTrainer (so the same corpus gives the same merges, in the same order):
//   1. the text is read line by line (each line keeps its '\n'), special tokens are cut out,
//      and each span is split into words by the pre-tokenizer pattern; equal words are counted
//      once with their frequency;
//   2. the vocabulary starts with the special tokens, then the 256 byte tokens (in the order of
//      their byte-level code points, as HF sorts its alphabet);
//   3. the most frequent adjacent pair of tokens (ties: the smallest pair of ids) is merged into
//      a new token, until the vocabulary has the requested size or no pair occurs min_frequency
//      times.
// Step 3 keeps pair counts incrementally: a merge only revisits the words that contain the pair
// and adjusts the counts of the pairs around each occurrence, and a max-heap with lazy updates
// finds the next pair, so training is O(total pair updates * log pairs) rather than a full recount
// per merge. Deterministic: the result depends only on the input text and options.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nanoformer/tokenizer/bpe_tokenizer.h"

namespace nf::tokenizer {

struct BpeTrainerOptions {
  size_t vocab_size = 0;                    // total, including special and byte tokens
  std::vector<std::string> special_tokens;  // ids 0, 1, ... in this order
  SplitPattern pattern = SplitPattern::kGpt2;
  uint64_t min_frequency = 0;  // stop when the best pair occurs fewer times
  int threads = 0;             // word counting threads (0: OpenMP's default)
  // Called now and then with a stage name ("count words", "merge") and progress in its units.
  std::function<void(std::string_view stage, uint64_t done, uint64_t total)> progress;
};

// Word frequencies of a corpus after pre-tokenization.
class WordCounts {
 public:
  WordCounts(SplitPattern pattern, const std::vector<std::string>& special_tokens);
  // Counts the words of text, line by line (parallel over chunks of lines).
  void add_text(std::string_view text, int threads = 0);
  // Counts the words of a file; throws nf::Error naming the file when it cannot be read.
  void add_file(const std::string& path, int threads = 0);
  const std::unordered_map<std::string, uint64_t>& counts() const { return counts_; }

 private:
  void count_lines(std::string_view text, std::unordered_map<std::string, uint64_t>& counts) const;

  SplitPattern pattern_;
  AddedVocabulary specials_;
  std::unordered_map<std::string, uint64_t> counts_;
};

BpeTokenizer train_bpe(const WordCounts& words, const BpeTrainerOptions& options);
BpeTokenizer train_bpe_from_text(std::string_view text, const BpeTrainerOptions& options);
BpeTokenizer train_bpe_from_files(const std::vector<std::string>& paths, const BpeTrainerOptions& options);

}  // namespace nf::tokenizer
