#include "nanoformer/tokenizer/bpe_tokenizer.h"

#include <atomic>
#include <cstring>

#include "nanoformer/core/error.h"
#include "nanoformer/tokenizer/byte_level.h"
#include "nanoformer/tokenizer/tokenizer_json.h"

namespace nf::tokenizer {
namespace {

enum : uint8_t { kUsed = 1, kSpecial = 2 };

uint64_t hash_bytes(const char* p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    h = (h ^ v) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  }
  if (n > 0) {
    uint64_t v = 0;
    std::memcpy(&v, p, n);
    h = (h ^ v) * 0x94D049BB133111EBull;
    h ^= h >> 29;
  }
  return h * 0x9E3779B97F4A7C15ull;
}

// The per-thread word cache: open addressing over (word bytes -> ids), with the keys and ids in
// two arenas. Its table starts small and doubles while half full, up to 2^17 slots (3 MiB): a
// server's connection threads, each tokenizing a prompt or two, hold a few KiB each (64 of them
// held 192 MiB when every table had its full size), a thread tokenizing a corpus grows it whole.
// When the largest table fills up it is simply emptied (natural text reuses a small set of words,
// so the hit rate stays high). Entries belong to one tokenizer; another one takes it over.
class WordCache {
 public:
  static constexpr int kFirstSlotBits = 10;
  static constexpr int kMaxSlotBits = 17;
  static constexpr size_t kMaxWord = 255;

  void claim(uint64_t owner) {
    if (owner != owner_) {
      clear();
      owner_ = owner;
    }
  }

  // Appends the cached ids of word to out; false when it is not cached.
  bool find(std::string_view word, uint64_t hash, std::vector<TokenId>& out) const {
    if (slots_.empty()) return false;
    for (size_t i = slot(hash);; i = (i + 1) & mask()) {
      const Slot& s = slots_[i];
      if (s.key_len == 0) return false;
      if (s.hash == hash && s.key_len == word.size() &&
          std::memcmp(keys_.data() + s.key_off, word.data(), word.size()) == 0) {
        out.insert(out.end(), ids_.begin() + s.ids_off, ids_.begin() + s.ids_off + s.ids_len);
        return true;
      }
    }
  }

  void insert(std::string_view word, uint64_t hash, const TokenId* ids, size_t n) {
    if (word.empty() || word.size() > kMaxWord || n > 0xFFFF) return;
    if (slots_.empty()) slots_.resize(size_t{1} << bits_);
    if (2 * entries_ >= slots_.size()) {  // half full: a table twice the size, or empty at the largest
      if (bits_ < kMaxSlotBits) grow();
      else clear();
    }
    place({hash, static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(ids_.size()),
           static_cast<uint16_t>(word.size()), static_cast<uint16_t>(n)});
    keys_.append(word);
    ids_.insert(ids_.end(), ids, ids + n);
    ++entries_;
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t key_off = 0;
    uint32_t ids_off = 0;
    uint16_t key_len = 0;  // 0: empty slot
    uint16_t ids_len = 0;
  };
  // The table index: the hash's top bits, which the final multiplication mixes best.
  size_t slot(uint64_t hash) const { return static_cast<size_t>(hash >> (64 - bits_)); }
  size_t mask() const { return slots_.size() - 1; }
  void place(const Slot& entry) {
    size_t i = slot(entry.hash);
    while (slots_[i].key_len != 0) i = (i + 1) & mask();
    slots_[i] = entry;
  }
  void grow() {
    std::vector<Slot> old(size_t{1} << ++bits_);
    old.swap(slots_);
    for (const Slot& s : old)
      if (s.key_len != 0) place(s);
  }
  void clear() {
    if (entries_ > 0) std::fill(slots_.begin(), slots_.end(), Slot{});
    keys_.clear();
    ids_.clear();
    entries_ = 0;
  }

  int bits_ = kFirstSlotBits;
  std::vector<Slot> slots_;
  std::string keys_;
  std::vector<TokenId> ids_;
  size_t entries_ = 0;
  uint64_t owner_ = 0;
};

thread_local WordCache t_cache;
std::atomic<uint64_t> g_next_owner{1};

}  // namespace

BpeTokenizer::BpeTokenizer(BpeModel model, std::vector<AddedToken> added, PreTokenizerOptions pre)
    : model_(std::move(model)), added_(std::move(added)), pre_(pre), cache_owner_(g_next_owner++) {
  vocab_size_ = model_.size();
  // The decoding tables are sized by the largest id: an id alone must not size them.
  const size_t id_bound = model_.size() + added_.tokens().size();
  for (const AddedToken& t : added_.tokens()) {
    NF_CHECK(t.id < id_bound, "added token '", t.content, "' has id ", t.id, ", beyond the ", model_.size(),
             " ids of the vocabulary and the ", added_.tokens().size(), " added tokens");
    if (t.id < model_.size() && model_.contains(t.id))
      NF_CHECK(model_.spelling(t.id) == t.content, "added token '", t.content, "' has id ", t.id,
               ", which the vocabulary gives to '", model_.spelling(t.id), "'");
    if (auto other = model_.spelling_to_id(t.content))
      NF_CHECK(*other == t.id, "added token '", t.content, "' has id ", t.id, " but the vocabulary gives it id ",
               *other);
    vocab_size_ = std::max<size_t>(vocab_size_, size_t{t.id} + 1);
  }
  // Decoding table: model tokens first, then added tokens decode to their literal content.
  std::vector<const AddedToken*> added_at(vocab_size_, nullptr);
  for (const AddedToken& t : added_.tokens()) added_at[t.id] = &t;
  offset_.resize(vocab_size_ + 1);
  flags_.assign(vocab_size_, 0);
  for (TokenId id = 0; id < vocab_size_; ++id) {
    offset_[id] = static_cast<uint32_t>(bytes_.size());
    if (added_at[id]) {
      bytes_ += added_at[id]->content;
      flags_[id] = static_cast<uint8_t>(kUsed | (added_at[id]->special ? kSpecial : 0));
    } else if (model_.contains(id)) {
      bytes_ += model_.bytes(id);
      flags_[id] = kUsed;
    }
  }
  offset_[vocab_size_] = static_cast<uint32_t>(bytes_.size());
}

void BpeTokenizer::encode(std::string_view text, std::vector<TokenId>& out) const {
  if (added_.empty()) return encode_span(text, out);
  std::vector<AddedVocabulary::Segment> segments;
  added_.split(text, segments);
  for (const AddedVocabulary::Segment& s : segments) {
    if (s.is_token)
      out.push_back(s.id);
    else
      encode_span(text.substr(s.begin, s.end - s.begin), out);
  }
}

void BpeTokenizer::encode_ordinary(std::string_view text, std::vector<TokenId>& out) const { encode_span(text, out); }

// One span between added tokens: prefix space, split into words, each word through the cache.
void BpeTokenizer::encode_span(std::string_view text, std::vector<TokenId>& out) const {
  if (text.empty()) return;
  std::string prefixed;
  if (pre_.add_prefix_space && text[0] != ' ') {
    prefixed.reserve(text.size() + 1);
    prefixed += ' ';
    prefixed += text;
    text = prefixed;
  }
  WordCache& cache = t_cache;
  cache.claim(cache_owner_);
  for_each_piece(text, pre_.pattern, [&](std::string_view word) {
    if (word.size() == 1) return model_.encode_word(word, out);
    const uint64_t h = hash_bytes(word.data(), word.size());
    if (cache.find(word, h, out)) return;
    const size_t start = out.size();
    model_.encode_word(word, out);
    cache.insert(word, h, out.data() + start, out.size() - start);
  });
}

void BpeTokenizer::bad_id(TokenId id) const {
  if (id >= vocab_size_) NF_FAIL("token id ", id, " is out of range (vocabulary size ", vocab_size_, ")");
  NF_FAIL("token id ", id, " has no token (a gap in the vocabulary)");
}

std::string_view BpeTokenizer::token_bytes(TokenId id) const {
  if (id >= vocab_size_ || !(flags_[id] & kUsed)) bad_id(id);
  return std::string_view(bytes_).substr(offset_[id], offset_[id + 1] - offset_[id]);
}

void BpeTokenizer::decode(std::span<const TokenId> ids, std::string& out) const { decode(ids, out, false); }

void BpeTokenizer::decode(std::span<const TokenId> ids, std::string& out, bool skip_special) const {
  out.reserve(out.size() + ids.size() * 4);
  for (TokenId id : ids) {
    if (id >= vocab_size_ || !(flags_[id] & kUsed)) bad_id(id);
    if (skip_special && (flags_[id] & kSpecial)) continue;
    out.append(bytes_.data() + offset_[id], offset_[id + 1] - offset_[id]);
  }
}

bool BpeTokenizer::is_special(TokenId id) const { return id < vocab_size_ && (flags_[id] & kSpecial); }

std::optional<TokenId> BpeTokenizer::token_id(std::string_view content) const {
  for (const AddedToken& t : added_.tokens())
    if (t.content == content) return t.id;
  if (auto id = model_.spelling_to_id(byte_level::encode(content))) return id;
  return model_.spelling_to_id(content);
}

// Cutting after '\n' before an ASCII letter or digit never changes the ids when both patterns
// end a word there, no added token can span or absorb the cut (no '\n' inside, no lstrip), no
// prefix space would be added at the cut, and the text is split at all.
bool BpeTokenizer::splittable_after_newline() const {
  return pre_.pattern != SplitPattern::kNone && !pre_.add_prefix_space && !added_.any_contains('\n') &&
         !added_.any_lstrip();
}

void BpeTokenizer::save(const std::string& path) const { save_tokenizer_json(*this, path); }

}  // namespace nf::tokenizer
