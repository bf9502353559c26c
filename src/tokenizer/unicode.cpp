// Unicode class lookup: the generated ranges are expanded once into a two-level table. The code
// point's high bits (cp >> 8) select a 256-entry block; identical blocks (most of the planes)
// are stored once, so the table is small and a lookup is two loads.
#include "nanoformer/tokenizer/unicode.h"

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
