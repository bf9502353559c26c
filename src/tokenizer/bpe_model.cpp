#include "nanoformer/tokenizer/bpe_model.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <unordered_map>

#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/byte_level.h"
#include "pair_map.h"

namespace nf::tokenizer {
namespace {

constexpr uint32_t kNoRank = std::numeric_limits<uint32_t>::max();
constexpr int64_t kNoToken = -1;

struct MergeInfo {
  uint32_t rank = kNoRank;
  TokenId merged = 0;
};

// Words up to this many bytes use the quadratic scan below; longer ones a heap.
constexpr size_t kShortWord = 64;

}  // namespace

struct BpeModel::Tables {
  std::vector<std::string> spelling;  // tokenizer.json form, by id
  std::vector<uint8_t> present;
  std::string bytes;             // every token's bytes, back to back
  std::vector<uint32_t> offset;  // token id's bytes are bytes[offset[id], offset[id + 1])
  std::unordered_map<std::string, TokenId> by_spelling;
  std::unordered_map<std::string, TokenId> by_bytes;  // tokens written in the byte-level alphabet
  int64_t byte_token[256];                            // the single-byte token of each byte, or kNoToken
  int64_t unk = kNoToken;
  detail::PairMap<MergeInfo> merges;
  BpeOptions options;

  MergeInfo merge(TokenId a, TokenId b) const {
    const MergeInfo* m = merges.find(detail::pair_key(a, b));
    return m ? *m : MergeInfo{};
  }
  void finish_vocab();
  void encode_short(TokenId* sym, size_t n, std::vector<TokenId>& out) const;
  void encode_long(std::vector<TokenId>& sym, std::vector<TokenId>& out) const;
};

// Derives the byte tables from the spellings: a token written in the byte-level alphabet is the
// bytes its code points stand for; any other token (e.g. "<|im start|>" with a space) is its
// own UTF-8 bytes, which is how HF's ByteLevel decoder treats it too.
void BpeModel::Tables::finish_vocab() {
  offset.assign(spelling.size() + 1, 0);
  std::fill(std::begin(byte_token), std::end(byte_token), kNoToken);
  for (size_t id = 0; id < spelling.size(); ++id) {
    offset[id] = static_cast<uint32_t>(bytes.size());
    if (!present[id]) continue;
    if (std::optional<std::string> b = byte_level::decode(spelling[id])) {
      if (b->size() == 1) byte_token[static_cast<unsigned char>((*b)[0])] = static_cast<int64_t>(id);
      bytes += *b;
      by_bytes.emplace(std::move(*b), static_cast<TokenId>(id));
    } else {
      bytes += spelling[id];
    }
  }
  offset[spelling.size()] = static_cast<uint32_t>(bytes.size());
}

BpeModel::BpeModel() {
  auto t = std::make_shared<Tables>();
  t->finish_vocab();
  t_ = std::move(t);
}

BpeModel::BpeModel(std::vector<std::optional<std::string>> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options) {
  auto t = std::make_shared<Tables>();
  t->options = std::move(options);
  t->spelling.resize(vocab.size());
  t->present.resize(vocab.size(), 0);
  for (size_t id = 0; id < vocab.size(); ++id) {
    if (!vocab[id]) continue;
    auto [it, inserted] = t->by_spelling.emplace(*vocab[id], static_cast<TokenId>(id));
    NF_CHECK(inserted, "vocabulary: token '", *vocab[id], "' has two ids, ", it->second, " and ", id);
    t->spelling[id] = std::move(*vocab[id]);
    t->present[id] = 1;
  }
  t->finish_vocab();
  auto id_of = [&](const std::string& s, size_t rank, const std::string& a, const std::string& b) {
    auto it = t->by_spelling.find(s);
    NF_CHECK(it != t->by_spelling.end(), "merge ", rank, " '", a, " ", b, "': token '", s,
             "' is not in the vocabulary");
    return it->second;
  };
  t->merges = detail::PairMap<MergeInfo>(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const TokenId left = id_of(a, rank, a, b), right = id_of(b, rank, a, b);
    const TokenId merged = id_of(a + b, rank, a, b);
    t->merges[detail::pair_key(left, right)] = {static_cast<uint32_t>(rank), merged};
  }
  if (t->options.unk_token) {
    auto it = t->by_spelling.find(*t->options.unk_token);
    NF_CHECK(it != t->by_spelling.end(), "unk_token '", *t->options.unk_token, "' is not in the vocabulary");
    t->unk = it->second;
  }
  t_ = std::move(t);
}

size_t BpeModel::size() const { return t_->spelling.size(); }
bool BpeModel::contains(TokenId id) const { return id < t_->present.size() && t_->present[id]; }

std::string_view BpeModel::bytes(TokenId id) const {
  if (id >= t_->spelling.size()) return {};
  return std::string_view(t_->bytes).substr(t_->offset[id], t_->offset[id + 1] - t_->offset[id]);
}

const std::string& BpeModel::spelling(TokenId id) const {
  static const std::string empty;
  return id < t_->spelling.size() ? t_->spelling[id] : empty;
}

std::optional<TokenId> BpeModel::spelling_to_id(std::string_view spelling) const {
  auto it = t_->by_spelling.find(std::string(spelling));
  if (it == t_->by_spelling.end()) return std::nullopt;
  return it->second;
}

std::vector<std::pair<TokenId, TokenId>> BpeModel::merges() const {
  std::vector<std::pair<uint32_t, uint64_t>> ranked;
  ranked.reserve(t_->merges.size());
  t_->merges.for_each([&](uint64_t key, const MergeInfo& m) { ranked.emplace_back(m.rank, key); });
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::pair<TokenId, TokenId>> out;
  out.reserve(ranked.size());
  for (auto [rank, key] : ranked) out.emplace_back(static_cast<TokenId>(key >> 32), static_cast<TokenId>(key));
  return out;
}

const BpeOptions& BpeModel::options() const { return t_->options; }

// Short words: keep the symbols and the merge of each adjacent pair in two arrays; each step
// scans for the lowest rank (leftmost on ties), merges that pair and refreshes the two pairs
// around it. O(n^2) in the word length, but n is small and everything stays in registers/L1.
void BpeModel::Tables::encode_short(TokenId* sym, size_t n, std::vector<TokenId>& out) const {
  MergeInfo pair[kShortWord];
  for (size_t i = 0; i + 1 < n; ++i) pair[i] = merge(sym[i], sym[i + 1]);
  while (n > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i)
      if (pair[i].rank < pair[best].rank) best = i;
    if (pair[best].rank == kNoRank) break;
    sym[best] = pair[best].merged;
    std::copy(sym + best + 2, sym + n, sym + best + 1);
    if (best + 2 < n - 1) std::copy(pair + best + 2, pair + n - 1, pair + best + 1);
    --n;
    if (best > 0) pair[best - 1] = merge(sym[best - 1], sym[best]);
    if (best + 1 < n) pair[best] = merge(sym[best], sym[best + 1]);
  }
  out.insert(out.end(), sym, sym + n);
}

// Long words: a doubly linked list of symbols and a min-heap of candidate merges ordered by
// (rank, position). A popped entry is stale when its left symbol was merged away or its pair
// changed; otherwise merge and push the two new neighbouring pairs. O(n log n).
void BpeModel::Tables::encode_long(std::vector<TokenId>& sym, std::vector<TokenId>& out) const {
  const size_t n = sym.size();
  std::vector<int32_t> prev(n), next(n);
  std::vector<uint8_t> alive(n, 1);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
  }
  using Entry = std::pair<uint32_t, uint32_t>;  // (rank, position of the left symbol)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  for (size_t i = 0; i + 1 < n; ++i) {
    const MergeInfo m = merge(sym[i], sym[i + 1]);
    if (m.rank != kNoRank) heap.emplace(m.rank, static_cast<uint32_t>(i));
  }
  while (!heap.empty()) {
    const auto [rank, pos] = heap.top();
    heap.pop();
    if (!alive[pos] || next[pos] < 0) continue;
    const int32_t right = next[pos];
    const MergeInfo m = merge(sym[pos], sym[right]);
    if (m.rank != rank) continue;
    sym[pos] = m.merged;
    alive[right] = 0;
    next[pos] = next[right];
    if (next[pos] >= 0) prev[next[pos]] = static_cast<int32_t>(pos);
    if (prev[pos] >= 0) {
      const MergeInfo left = merge(sym[prev[pos]], sym[pos]);
      if (left.rank != kNoRank) heap.emplace(left.rank, static_cast<uint32_t>(prev[pos]));
    }
    if (next[pos] >= 0) {
      const MergeInfo after = merge(sym[pos], sym[next[pos]]);
      if (after.rank != kNoRank) heap.emplace(after.rank, pos);
    }
  }
  for (int32_t i = 0; i >= 0; i = next[i]) out.push_back(sym[i]);
}

void BpeModel::encode_word(std::string_view word, std::vector<TokenId>& out) const {
  const Tables& t = *t_;
  if (word.empty()) return;
  if (t.options.ignore_merges && word.size() > 1) {
    auto it = t.by_bytes.find(std::string(word));
    if (it != t.by_bytes.end()) {
      out.push_back(it->second);
      return;
    }
  }
  // Initial symbols: one token per byte; a byte without a token becomes unk (fused into the
  // previous unk when fuse_unk) or is dropped, as in HF's BPE.
  TokenId small[kShortWord];
  std::vector<TokenId> large;
  const bool is_short = word.size() <= kShortWord;
  if (!is_short) large.reserve(word.size());
  size_t n = 0;
  bool last_unk = false;
  for (unsigned char b : word) {
    int64_t id = t.byte_token[b];
    if (id == kNoToken) {
      if (t.unk == kNoToken || (t.options.fuse_unk && last_unk)) continue;
      id = t.unk;
      last_unk = true;
    } else {
      last_unk = false;
    }
    if (is_short)
      small[n++] = static_cast<TokenId>(id);
    else
      large.push_back(static_cast<TokenId>(id));
  }
  if (is_short) {
    if (n > 0) t.encode_short(small, n, out);
  } else if (!large.empty()) {
    t.encode_long(large, out);
  }
}

}  // namespace nf::tokenizer
