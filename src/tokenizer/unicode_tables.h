#pragma once
// The generated Unicode class ranges and mappings (see tools/tokenizer/gen_unicode_tables.py); private to the
// tokenizer sources. unicode.cpp expands them into a two-level lookup table.
#include <cstdint>

namespace nf::tokenizer::unicode {

struct UnicodeRange {
  uint32_t first;
  uint32_t last;
  uint8_t bits;
};

extern const UnicodeRange kUnicodeRanges[];
extern const unsigned kUnicodeRangeCount;

// A code point mapped to kMappingPool[offset, offset + length) (unicode_mapping_tables.cpp).
struct CodePointMapping {
  uint32_t cp;
  uint32_t offset;
  uint32_t length;
};
struct CombiningClassRange {
  uint32_t first;
  uint32_t last;
  uint8_t ccc;
};

extern const CodePointMapping kDecompositions[];  // NFD, sorted by cp, Hangul syllables excluded
extern const unsigned kDecompositionsCount;
extern const CodePointMapping kLowercase[];  // full lowercase mapping, sorted by cp
extern const unsigned kLowercaseCount;
extern const CombiningClassRange kCombiningClasses[];  // nonzero classes, sorted
extern const unsigned kCombiningClassCount;
extern const uint32_t kMappingPool[];

}  // namespace nf::tokenizer::unicode
