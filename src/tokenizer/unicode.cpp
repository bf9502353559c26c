// Unicode class lookup: the generated ranges are expanded once into a two-level table. The code
// point's high bits (cp >> 8) select a 256-entry block; identical blocks (most of the planes)
// are stored once, so the table is small and a lookup is two loads.
#include "nanoformer/tokenizer/unicode.h"

#include <algorithm>
#include <array>
#include <map>
#include <vector>

#include "unicode_tables.h"

namespace nf::tokenizer::unicode {
namespace {

constexpr uint32_t kBlockBits = 8;
constexpr uint32_t kBlockSize = 1u << kBlockBits;
constexpr uint32_t kBlockCount = 0x110000 >> kBlockBits;

struct ClassTable {
  std::vector<uint16_t> block_of;  // kBlockCount entries: index of the block holding cp >> 8
  std::vector<uint8_t> blocks;     // unique 256-entry blocks, back to back

  ClassTable() : block_of(kBlockCount) {
    std::vector<uint8_t> flat(0x110000, 0);
    for (unsigned r = 0; r < kUnicodeRangeCount; ++r)
      for (uint32_t cp = kUnicodeRanges[r].first; cp <= kUnicodeRanges[r].last; ++cp) flat[cp] = kUnicodeRanges[r].bits;
    std::map<std::array<uint8_t, kBlockSize>, uint16_t> seen;
    for (uint32_t b = 0; b < kBlockCount; ++b) {
      std::array<uint8_t, kBlockSize> block;
      for (uint32_t i = 0; i < kBlockSize; ++i) block[i] = flat[(b << kBlockBits) + i];
      auto [it, inserted] = seen.try_emplace(block, static_cast<uint16_t>(seen.size()));
      if (inserted) blocks.insert(blocks.end(), block.begin(), block.end());
      block_of[b] = it->second;
    }
  }
};

const ClassTable& table() {
  static const ClassTable t;
  return t;
}

}  // namespace

uint8_t classify_non_ascii(uint32_t cp) {
  if (cp >= 0x110000) return 0;
  const ClassTable& t = table();
  return t.blocks[(static_cast<size_t>(t.block_of[cp >> kBlockBits]) << kBlockBits) | (cp & (kBlockSize - 1))];
}

namespace {

// The mapping of cp in a sorted table, or nullptr.
const CodePointMapping* find_mapping(const CodePointMapping* table, unsigned count, uint32_t cp) {
  const CodePointMapping* end = table + count;
  const CodePointMapping* it =
      std::lower_bound(table, end, cp, [](const CodePointMapping& m, uint32_t v) { return m.cp < v; });
  return it != end && it->cp == cp ? it : nullptr;
}

void append_pool(const CodePointMapping& m, std::u32string& out) {
  for (uint32_t k = 0; k < m.length; ++k) out += static_cast<char32_t>(kMappingPool[m.offset + k]);
}

// Hangul syllables decompose by formula (Unicode 3.12): S = SBase + (L * VCount + V) * TCount + T.
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kVCount = 21, kTCount = 28, kSCount = 19 * kVCount * kTCount;

}  // namespace

void append_nfd(uint32_t cp, std::u32string& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const uint32_t s = cp - kSBase;
    out += static_cast<char32_t>(kLBase + s / (kVCount * kTCount));
    out += static_cast<char32_t>(kVBase + (s % (kVCount * kTCount)) / kTCount);
    if (s % kTCount) out += static_cast<char32_t>(kTBase + s % kTCount);
    return;
  }
  if (const CodePointMapping* m = find_mapping(kDecompositions, kDecompositionsCount, cp))
    append_pool(*m, out);
  else
    out += static_cast<char32_t>(cp);
}

uint8_t combining_class(uint32_t cp) {
  const CombiningClassRange* end = kCombiningClasses + kCombiningClassCount;
  const CombiningClassRange* it = std::lower_bound(
      kCombiningClasses, end, cp, [](const CombiningClassRange& r, uint32_t v) { return r.last < v; });
  return it != end && it->first <= cp ? it->ccc : 0;
}

void canonical_order(std::u32string& s) {
  for (size_t i = 0; i < s.size();) {
    if (combining_class(s[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && combining_class(s[j]) != 0) ++j;
    std::stable_sort(s.begin() + static_cast<std::ptrdiff_t>(i), s.begin() + static_cast<std::ptrdiff_t>(j),
                     [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    i = j;
  }
}

void append_lowercase(uint32_t cp, std::u32string& out) {
  if (cp < 128) {
    out += static_cast<char32_t>(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
  } else if (const CodePointMapping* m = find_mapping(kLowercase, kLowercaseCount, cp)) {
    append_pool(*m, out);
  } else {
    out += static_cast<char32_t>(cp);
  }
}

size_t encode_utf8(uint32_t cp, char* out) {
  if (cp < 0x80) {
    out[0] = static_cast<char>(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = static_cast<char>(0xC0 | (cp >> 6));
    out[1] = static_cast<char>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = static_cast<char>(0xE0 | (cp >> 12));
    out[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<char>(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = static_cast<char>(0xF0 | (cp >> 18));
  out[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
  out[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
  out[3] = static_cast<char>(0x80 | (cp & 0x3F));
  return 4;
}

}  // namespace nf::tokenizer::unicode
