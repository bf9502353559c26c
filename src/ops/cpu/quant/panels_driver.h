#pragma once
// Decode's product on panels (panels.h), shared by the panel tiles of each type (panels.cpp: Q8_0,
// Q4_0, Q4_1, Q5_0, Q5_1; panels_k.cpp: Q4_K, Q5_K; panels_q6_k.cpp: Q6_K): the panels split across the threads, each panel
// read once for the m rows of x, 4 rows at a time. A Tiles policy gives a panel's bytes, bytes(k),
// and its tiles, portable<R>(panel, x, r0, out) and (built with AVX2, where the VNNI kernels are)
// vnni<R>: out[i][c] = row r0 + i of x times row c of the panel; and for decode (one row of x)
// streams(panels, x, r, out), kStreams panels at once: a thread's range cut in kStreams parts read
// side by side, each asking for its lines ahead (panels.h). Q8_0, the 5-bit types and the K types read one stream, which measured faster than
// four side by side from memory (panels.h; Q5_0's 2304 x 768 from memory 88-92 -> 76-77 us, level
// in the cache); Q4_0 and Q4_1, whose blocks are half Q8_0's lines, keep four (one was 0.96x on
// minimind2-small Q4_0 in the cache, level from memory).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>

#include "ops/cpu/loops/loops.h"
#include "ops/cpu/quant/activation_quant.h"
#include "ops/cpu/quant/gemv_driver.h"
#include "ops/cpu/quant/panels.h"

namespace nf::cpu {

// x of one call: its blocks (activation_quant.h) and, for the 32-value types, per row and block
// -offset sum q_x (the lanes' start) and d_x sum q_x (the types with a min: m_w times it)
struct PanelX {
  const QuantizedActivations* a;
  const int32_t* start;  // (rows, nb), or null (the K types: their sub-blocks' sums of x in pairs, (rows, nb, 4))
  const float* sums;     // (rows, nb), or null
  int64_t nb;
  int32_t word(int64_t r, int64_t at) const {  // the 4 bytes of row r's values at .. at + 3
    int32_t v;
    std::memcpy(&v, a->row_q(r) + at, 4);
    return v;
  }
};

// Packing (pack_panels of each type): the ceil(n / 16) panels of `bytes` each, split across the
// threads, each cleared and then pack_row(panel, r, row) for its rows r, row the file's blocks of
// that row (`Block`s, nb of them), or null for a padding row past n.
template <class Block, class PackRow>
void pack_each_row(const void* rows, int64_t n, int64_t nb, size_t bytes, void* panels, PackRow pack_row) {
  parallel_for((n + kPanelRows - 1) / kPanelRows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      auto* panel = static_cast<uint8_t*>(panels) + static_cast<size_t>(p) * bytes;
      std::memset(panel, 0, bytes);
      for (int64_t r = 0; r < kPanelRows; ++r)
        pack_row(panel, r, p * kPanelRows + r < n ? static_cast<const Block*>(rows) + (p * kPanelRows + r) * nb : nullptr);
    }
  });
}

// Which of a Tiles policy's tiles a product runs: portable<R>, vnni<R> (AVX512-VNNI) or avx2<R>
// (AVX2's maddubs, a line as two halves of 8 rows; the types that have them, panels_pay)
enum class PanelTiles { portable, avx2, vnni };

namespace {

// Panels [p0, p1) of `base` against the m rows of x, 4 rows of x at a time (each panel read from
// memory once, its lines in L1 for the later passes)
template <class Tiles, PanelTiles kTiles>
void panel_range(const TileArgs& base, const PanelX& x, int64_t m, int64_t p0, int64_t p1) {
  const size_t bytes = Tiles::bytes(base.k);
  const auto store = [&](const float* out, int64_t p, int64_t r) {  // panel p's 16 sums for row r of x
    const int64_t row0 = p * kPanelRows, cols = std::min(kPanelRows, base.ldy - row0);
    for (int64_t c = 0; c < cols; ++c) base.y[r * base.ldy + row0 + c] = out[c] + (base.bias ? base.bias[row0 + c] : 0.0f);
  };
  const auto pass = [&]<int R>(const uint8_t* panel, int64_t p, int64_t r0) {
    float out[R][kPanelRows];
    if constexpr (kTiles == PanelTiles::vnni) Tiles::template vnni<R>(panel, x, r0, out);
    else if constexpr (kTiles == PanelTiles::avx2) Tiles::template avx2<R>(panel, x, r0, out);
    else Tiles::template portable<R>(panel, x, r0, out);
    for (int i = 0; i < R; ++i) store(out[i], p, r0 + i);
  };
  if constexpr (kTiles == PanelTiles::vnni) {
    if (m == 1) {  // decode: the range cut in S parts read side by side, S streams
      constexpr int S = Tiles::kStreams;
      const int64_t part = (p1 - p0) / S;
      for (int64_t i = 0; i < part; ++i) {
        const uint8_t* panels[S];
        for (int s = 0; s < S; ++s) panels[s] = base.w + static_cast<size_t>(p0 + s * part + i) * bytes;
        float out[S][kPanelRows];
        Tiles::streams(panels, x, 0, out);
        for (int s = 0; s < S; ++s) store(out[s], p0 + s * part + i, 0);
      }
      p0 += S * part;
    }
  }
  for (int64_t p = p0; p < p1; ++p) {
    const uint8_t* panel = base.w + static_cast<size_t>(p) * bytes;
    for (int64_t r0 = 0; r0 < m; r0 += 4) {
      switch (std::min<int64_t>(4, m - r0)) {
        case 1: pass.template operator()<1>(panel, p, r0); break;
        case 2: pass.template operator()<2>(panel, p, r0); break;
        case 3: pass.template operator()<3>(panel, p, r0); break;
        default: pass.template operator()<4>(panel, p, r0); break;
      }
    }
  }
}

// The panels of every base against x: one product's split across the threads (or on one when it
// is small); several (q, k and v; gate and up) in one hand-off, each thread taking its share of
// every one.
template <class Tiles, PanelTiles kTiles>
void gemv_panels_on(std::span<TileArgs> bases, const PanelX& x, int64_t m) {
  const auto panels = [](const TileArgs& base) { return (base.ldy + kPanelRows - 1) / kPanelRows; };
  if (bases.size() == 1) {
    const TileArgs& base = bases[0];
    const int64_t grain = std::max<int64_t>(1, kGrainWeights / std::max<int64_t>(base.k * kPanelRows, 1));
    parallel_for(panels(base), grain, [&](int64_t begin, int64_t end) { panel_range<Tiles, kTiles>(base, x, m, begin, end); });
    return;
  }
  const int64_t threads = num_threads();
  parallel_for(threads, 1, [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t)
      for (const TileArgs& base : bases)
        panel_range<Tiles, kTiles>(base, x, m, panels(base) * t / threads, panels(base) * (t + 1) / threads);
  });
}

}  // namespace

}  // namespace nf::cpu
