#include "nanoformer/tokenizer/bpe_trainer.h"

#include <omp.h>

#include <algorithm>

#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/byte_level.h"
#include "pair_map.h"

namespace nf::tokenizer {
namespace {

std::vector<AddedToken> as_added(const std::vector<std::string>& specials) {
  std::vector<AddedToken> out;
  for (size_t i = 0; i < specials.size(); ++i) out.push_back({static_cast<TokenId>(i), specials[i]});
  return out;
}

// A candidate merge in the heap: a pair with the count it had when pushed and the words where
// it was seen. As in HF, several entries may exist for one pair; stale counts are refreshed on
// pop (re-pushed with the current count) and only an up-to-date entry is merged.
struct Candidate {
  int64_t count;
  uint64_t pair;
  std::vector<uint32_t> words;
};

// Max-heap order: higher count first, then the smaller pair (left id, then right id).
struct CandidateLess {
  bool operator()(const Candidate& a, const Candidate& b) const {
    if (a.count != b.count) return a.count < b.count;
    return a.pair > b.pair;
  }
};

struct PairChange {
  uint64_t pair;
  int32_t delta;
};

// Merges every non-overlapping (left, right) in word, left to right, into `merged`, and records
// how the neighbouring pairs' counts change (HF's Word::merge: the merged pair itself is not
// decremented, which the lazy heap relies on).
void merge_word(std::vector<TokenId>& word, TokenId left, TokenId right, TokenId merged,
                std::vector<PairChange>& changes) {
  for (size_t i = 0; i < word.size(); ++i) {
    if (word[i] != left || i + 1 >= word.size() || word[i + 1] != right) continue;
    if (i > 0) {
      changes.push_back({detail::pair_key(word[i - 1], left), -1});
      changes.push_back({detail::pair_key(word[i - 1], merged), 1});
    }
    word[i] = merged;
    word.erase(word.begin() + static_cast<ptrdiff_t>(i) + 1);
    if (i + 1 < word.size()) {
      changes.push_back({detail::pair_key(right, word[i + 1]), -1});
      changes.push_back({detail::pair_key(merged, word[i + 1]), 1});
    }
  }
}

}  // namespace

WordCounts::WordCounts(SplitPattern pattern, const std::vector<std::string>& special_tokens)
    : pattern_(pattern), specials_(as_added(special_tokens)) {}

void WordCounts::count_lines(std::string_view text, std::unordered_map<std::string, uint64_t>& counts) const {
  std::vector<AddedVocabulary::Segment> segments;
  for (size_t start = 0; start < text.size();) {
    const size_t nl = text.find('\n', start);
    const size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    const std::string_view line = text.substr(start, end - start);
    specials_.split(line, segments);
    for (const AddedVocabulary::Segment& s : segments) {
      if (s.is_token) continue;
      for_each_piece(line.substr(s.begin, s.end - s.begin), pattern_, [&](std::string_view word) {
        auto it = counts.find(std::string(word));
        if (it != counts.end())
          ++it->second;
        else
          counts.emplace(word, 1);
      });
    }
    start = end;
  }
}

void WordCounts::add_text(std::string_view text, int threads) {
  // Cut into line-aligned chunks, count each chunk in a private map, then add the maps up.
  const size_t n_threads = static_cast<size_t>(threads > 0 ? threads : omp_get_max_threads());
  const size_t n_chunks = std::min<size_t>(n_threads * 4, text.size() / (1 << 20) + 1);  // >= 1 MB each
  std::vector<size_t> cuts{0};
  for (size_t k = 1; k < n_chunks; ++k) {
    const size_t nl = text.find('\n', std::max(cuts.back(), k * text.size() / n_chunks));
    if (nl == std::string_view::npos) break;
    cuts.push_back(nl + 1);
  }
  cuts.push_back(text.size());
  const size_t n_parts = cuts.size() - 1;
  std::vector<std::unordered_map<std::string, uint64_t>> partial(n_parts);
#pragma omp parallel for schedule(dynamic, 1) num_threads(static_cast <int>(n_threads))
  for (size_t c = 0; c < n_parts; ++c) count_lines(text.substr(cuts[c], cuts[c + 1] - cuts[c]), partial[c]);
  for (auto& p : partial)
    for (auto& [word, n] : p) counts_[word] += n;
}

void WordCounts::add_file(const std::string& path, int threads) { add_text(read_file(path), threads); }

BpeTokenizer train_bpe(const WordCounts& words, const BpeTrainerOptions& options) {
  // 1. The initial vocabulary, keyed by tokenizer.json spelling as HF's trainer does (a merge
  //    whose spelling already exists reuses that id).
  std::vector<std::string> spelling;
  std::unordered_map<std::string, TokenId> id_of;
  auto add = [&](const std::string& s) {
    if (id_of.emplace(s, static_cast<TokenId>(spelling.size())).second) spelling.push_back(s);
  };
  for (const std::string& s : options.special_tokens) {
    NF_CHECK(!s.empty(), "train: a special token is empty");
    add(s);
  }
  std::vector<uint8_t> bytes(256);
  for (int b = 0; b < 256; ++b) bytes[b] = static_cast<uint8_t>(b);
  std::sort(bytes.begin(), bytes.end(),
            [](uint8_t x, uint8_t y) { return byte_level::byte_to_char(x) < byte_level::byte_to_char(y); });
  for (uint8_t b : bytes) add(byte_level::encode(std::string(1, static_cast<char>(b))));
  TokenId byte_id[256];
  for (int b = 0; b < 256; ++b) byte_id[b] = id_of.at(byte_level::encode(std::string(1, static_cast<char>(b))));
  NF_CHECK(options.vocab_size >= spelling.size(), "train: vocab_size ", options.vocab_size, " is smaller than the ",
           spelling.size(), " special and byte tokens");

  // 2. Words as token sequences, sorted so that word indices do not depend on hash order.
  std::vector<std::pair<std::string_view, uint64_t>> sorted(words.counts().begin(), words.counts().end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::vector<TokenId>> word(sorted.size());
  std::vector<int64_t> count(sorted.size());
  for (size_t w = 0; w < sorted.size(); ++w) {
    for (unsigned char c : sorted[w].first) word[w].push_back(byte_id[c]);
    count[w] = static_cast<int64_t>(sorted[w].second);
  }

  // 3. Initial pair counts and where each pair occurs.
  detail::PairMap<int64_t> pair_count(1 << 16);
  detail::PairMap<std::vector<uint32_t>> where(1 << 16);
  for (size_t w = 0; w < word.size(); ++w)
    for (size_t i = 0; i + 1 < word[w].size(); ++i) {
      const uint64_t key = detail::pair_key(word[w][i], word[w][i + 1]);
      pair_count[key] += count[w];
      std::vector<uint32_t>& at = where[key];
      if (at.empty() || at.back() != w) at.push_back(static_cast<uint32_t>(w));
    }
  std::vector<Candidate> heap;  // a binary max-heap under CandidateLess
  auto push = [&](Candidate&& c) {
    heap.push_back(std::move(c));
    std::push_heap(heap.begin(), heap.end(), CandidateLess{});
  };
  where.for_each([&](uint64_t key, const std::vector<uint32_t>& at) {
    const int64_t c = *pair_count.find(key);
    if (c > 0) push({c, key, at});
  });

  // 4. Merge until the vocabulary is full.
  std::vector<std::pair<TokenId, TokenId>> merges;
  std::vector<PairChange> changes;
  std::vector<std::pair<uint64_t, uint32_t>> created;  // (pair, word) for pairs that gained occurrences
  const uint64_t total_merges = options.vocab_size - spelling.size();
  while (spelling.size() < options.vocab_size && !heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), CandidateLess{});
    Candidate top = std::move(heap.back());
    heap.pop_back();
    const int64_t current = *pair_count.find(top.pair);
    if (top.count != current) {
      top.count = current;
      push(std::move(top));
      continue;
    }
    if (top.count < 1 || static_cast<int64_t>(options.min_frequency) > top.count) break;
    const auto left = static_cast<TokenId>(top.pair >> 32), right = static_cast<TokenId>(top.pair);
    const std::string merged_spelling = spelling[left] + spelling[right];
    auto [it, inserted] = id_of.emplace(merged_spelling, static_cast<TokenId>(spelling.size()));
    if (inserted) spelling.push_back(merged_spelling);
    const TokenId merged = it->second;
    merges.emplace_back(left, right);

    created.clear();
    for (uint32_t w : top.words) {
      changes.clear();
      merge_word(word[w], left, right, merged, changes);
      for (const PairChange& ch : changes) {
        pair_count[ch.pair] += ch.delta * count[w];
        if (ch.delta > 0) created.emplace_back(ch.pair, w);
      }
    }
    std::sort(created.begin(), created.end());
    created.erase(std::unique(created.begin(), created.end()), created.end());
    for (size_t i = 0; i < created.size();) {
      size_t j = i;
      Candidate c{*pair_count.find(created[i].first), created[i].first, {}};
      for (; j < created.size() && created[j].first == c.pair; ++j) c.words.push_back(created[j].second);
      if (c.count > 0) push(std::move(c));
      i = j;
    }
    if (options.progress && (merges.size() % 256 == 0)) options.progress("merge", merges.size(), total_merges);
  }
  if (options.progress) options.progress("merge", total_merges, total_merges);

  // 5. The tokenizer: merges by spelling (a pair merged twice keeps its last rank, as in HF).
  std::vector<std::optional<std::string>> vocab(spelling.begin(), spelling.end());
  std::vector<std::pair<std::string, std::string>> named;
  named.reserve(merges.size());
  for (auto [a, b] : merges) named.emplace_back(spelling[a], spelling[b]);
  std::vector<AddedToken> added = as_added(options.special_tokens);
  for (AddedToken& t : added) t.id = id_of.at(t.content);
  return BpeTokenizer(BpeModel(std::move(vocab), named), std::move(added), {options.pattern, false});
}

BpeTokenizer train_bpe_from_text(std::string_view text, const BpeTrainerOptions& options) {
  WordCounts words(options.pattern, options.special_tokens);
  words.add_text(text, options.threads);
  return train_bpe(words, options);
}

BpeTokenizer train_bpe_from_files(const std::vector<std::string>& paths, const BpeTrainerOptions& options) {
  WordCounts words(options.pattern, options.special_tokens);
  for (size_t i = 0; i < paths.size(); ++i) {
    words.add_file(paths[i], options.threads);
    if (options.progress) options.progress("count words", i + 1, paths.size());
  }
  return train_bpe(words, options);
}

}  // namespace nf::tokenizer
