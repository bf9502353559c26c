#pragma once
// x as prefill's integer GEMMs read it (quant_gemm.cpp over Q8_0 blocks, quant_gemm_k.cpp over
// Q8_K): rows of quantised blocks packed per work unit of kUnitRows rows (the last padded with
// zeros): the 4 bytes of group g of block b of the unit's row i at
// words[((unit nb + b) groups + g) kUnitRows + i], the block's info (its scale, sums) at
// info[(unit nb + b) kUnitRows + i]; so a tile's loads are one pointer per block and constants.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/cpu/loops/loops.h"

namespace nf::cpu {

inline constexpr int64_t kUnitRows = 48;  // rows of x per work unit

inline int32_t load_word(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The m rows of xq (nb blocks each) packed as above, threaded over rows; info_of(block) -> Info.
template <class Block, class Info, class InfoOf>
void pack_x_units(const Block* xq, int64_t m, int64_t nb, std::vector<int32_t>& words, std::vector<Info>& info,
                  InfoOf info_of) {
  constexpr int kGroups = sizeof(Block::qs) / 4;
  const int64_t units = (m + kUnitRows - 1) / kUnitRows, k = nb * 4 * kGroups;
  words.assign(static_cast<size_t>(units * nb * kGroups * kUnitRows), 0);
  info.assign(static_cast<size_t>(units * nb * kUnitRows), Info{});
  parallel_for(m, std::max<int64_t>(1, kParallelGrain / k), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t unit = i / kUnitRows, r = i % kUnitRows;
      for (int64_t b = 0; b < nb; ++b) {
        const Block& block = xq[i * nb + b];
        info[static_cast<size_t>((unit * nb + b) * kUnitRows + r)] = info_of(block);
        for (int g = 0; g < kGroups; ++g)
          words[static_cast<size_t>(((unit * nb + b) * kGroups + g) * kUnitRows + r)] = load_word(block.qs + 4 * g);
      }
    }
  });
}

}  // namespace nf::cpu
