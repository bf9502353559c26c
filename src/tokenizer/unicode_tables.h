#pragma once
// The generated Unicode class ranges (see tools/tokenizer/gen_unicode_tables.py); private to the
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

}  // namespace nf::tokenizer::unicode
