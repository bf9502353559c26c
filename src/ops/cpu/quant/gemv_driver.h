#pragma once
// The decode product's driver, shared by the tiles of every weight type (tiles_*.cpp instantiate it
// with their tiles): W's rows split across the threads, each thread's range read as streams, the
// tiles run over them a few rows of x at a time. A Kernel<R, C, P> computes a tile of R rows of x
// (R <= 4) and C rows of W (prefetching ahead when P); kFourRows, where it has it: the tile always
// takes 4 rows of W, any R (a single row is its row repeated).
#include <algorithm>
#include <cstdint>
#include <span>

#include "ops/cpu/loops/loops.h"
#include "ops/cpu/quant/activation_quant.h"
#include "ops/cpu/quant/gemv_tile.h"

namespace nf::cpu {

// Each thread takes a contiguous range of W's rows and reads it as kStreams streams: the range cut
// in kStreams equal parts, a tile takes row i of every part, so each part is read front to back.
// Short rows (a Q8_0 row of 512 values is 544 bytes) read 4 at a time side by side would be one
// stream of 2 KiB steps; four streams far apart keep more reads in flight (measured on one Zen 4
// core of a shared VM, Q8_0 1408 x 512 read from memory: 13 -> 21 GB/s). With several rows of x,
// the rows D steps ahead in each stream (about kPrefetchBytes) are prefetched into L2 meanwhile; at
// one row (decode) the hardware's prefetchers do as well, and the prefetches' own loads cost more
// than they gained once a thread's tiles ran in one call (minimind2-small Q8_0 decode 1,099 ->
// 1,159 tok/s without them, medians of 6 interleaved runs on Zen 4; gpt2-124m 235 -> 252). Each
// tile meets the rows of x kPassRows at a time, so rows read from memory once stay in L1 for every
// later pass. The 32-value types' tiles take the four streams in one (tile_*_x4), any R; the
// others (per-row accumulators) cover them whole (C = 4) for R <= 2, in halves (C = 2) above,
// keeping R * C accumulators in registers. The rows left over (range % kStreams) go one at a time.
inline constexpr int64_t kStreams = 4;
inline constexpr int64_t kPassRows = 4;
inline constexpr int64_t kPrefetchBytes = 2048;
// Weights below which a product runs on one thread: waking the second costs a few microseconds,
// what a Q8_0 or Q4_0 matrix of 128 x 512 takes alone (measured: 3.4-3.8 us on one thread, 4.4 on two)
inline constexpr int64_t kGrainWeights = 2 * kParallelGrain;

// (in an unnamed namespace, as they were in the one file that held them with the tiles: local to
// each file of tiles, so the compiler's inliner treats them as it did)
namespace {

template <template <int, int, bool> class Kernel>
constexpr bool four_rows() {
  if constexpr (requires { Kernel<1, kStreams, false>::kFourRows; }) return Kernel<1, kStreams, false>::kFourRows;
  return false;
}

template <template <int, int, bool> class Kernel, int C>
void run_tile(const TileArgs& t, int64_t rows, bool fetch) {
  const auto run = [&]<int R, int Cols>(const TileArgs& u) {
    fetch ? Kernel<R, Cols, true>::run(u) : Kernel<R, Cols, false>::run(u);
  };
  if constexpr (four_rows<Kernel>()) {
    switch (rows) {
      case 1: run.template operator()<1, C>(t); break;
      case 2: run.template operator()<2, C>(t); break;
      case 3: run.template operator()<3, C>(t); break;
      default: run.template operator()<4, C>(t); break;
    }
    return;
  }
  const auto halves = [&]<int R>() {
    for (int h = 0; h < C / 2; ++h) {
      TileArgs half = t;
      half.w += 2 * h * t.row_bytes, half.ahead += 2 * h * t.row_bytes, half.y += 2 * h * t.ystride;
      half.bias = t.bias ? t.bias + 2 * h * t.ystride : nullptr;
      run.template operator()<R, 2>(half);
    }
  };
  switch (rows) {
    case 1: run.template operator()<1, C>(t); break;
    case 2: run.template operator()<2, C>(t); break;
    case 3:
      if constexpr (C == 4) halves.template operator()<3>();
      else run.template operator()<3, C>(t);
      break;
    default:
      if constexpr (C == 4) halves.template operator()<4>();
      else run.template operator()<4, C>(t);
      break;
  }
}

// Rows [begin, end) of W (and of y) for the m rows of x: the range read as kStreams streams.
template <template <int, int, bool> class Kernel>
void gemv_range(const TileArgs& base, int64_t m, int64_t begin, int64_t end) {
  const int64_t ahead = std::clamp<int64_t>(kPrefetchBytes / static_cast<int64_t>(base.row_bytes), 1, 16);
  const int64_t part = (end - begin) / kStreams;
  const auto tile = [&](int64_t row, int64_t r0, int64_t stride) {
    TileArgs t = base;
    t.r0 = r0;
    t.w = base.w + row * base.row_bytes;
    t.row_bytes = stride * base.row_bytes;
    t.ahead = t.w + ahead * base.row_bytes;
    t.y = base.y + r0 * base.ldy + row;
    t.ystride = stride;
    t.bias = base.bias ? base.bias + row : nullptr;
    return t;
  };
  if (four_rows<Kernel>() && m == 1) {  // decode: the range's tiles in one call, without software prefetches
    if (part > 0) {
      TileArgs t = tile(begin, 0, part);
      t.count = part, t.next = base.row_bytes;
      run_tile<Kernel, kStreams>(t, 1, false);
    }
  } else {
    for (int64_t i = 0; i < part; ++i)
      for (int64_t r0 = 0; r0 < m; r0 += kPassRows) {
        const bool fetch = r0 == 0 && i + ahead < part;  // the first pass brings the rows in
        run_tile<Kernel, kStreams>(tile(begin + i, r0, part), std::min(kPassRows, m - r0), fetch);
      }
  }
  for (int64_t row = begin + kStreams * part; row < end; ++row)
    for (int64_t r0 = 0; r0 < m; r0 += kPassRows) run_tile<Kernel, 1>(tile(row, r0, 1), std::min(kPassRows, m - r0), false);
}

// The products of one x with each of `bases` (base.ldy of W's rows each). One product: its rows
// split across the threads, or on one when it is small. Several (q, k and v; gate and up): one
// hand-off for all, each thread taking its share of every one. (Handing out chunks of rows in turn
// instead, so a thread that starts late takes fewer, measured slower: minimind2-small Q8_0 decode
// 930 tok/s against 1,070 with chunks of 32 KiB, 890 against 980 with 128 KiB.)
template <template <int, int, bool> class Kernel>
void gemv_rows(std::span<const TileArgs> bases, int64_t m) {
  if (bases.size() == 1) {
    const TileArgs& base = bases[0];
    const int64_t grain = std::max<int64_t>(1, kGrainWeights / std::max<int64_t>(base.k, 1));
    parallel_for(base.ldy, grain, [&](int64_t begin, int64_t end) { gemv_range<Kernel>(base, m, begin, end); });
    return;
  }
  const int64_t threads = num_threads();
  parallel_for(threads, 1, [&](int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p)
      for (const TileArgs& base : bases) gemv_range<Kernel>(base, m, base.ldy * p / threads, base.ldy * (p + 1) / threads);
  });
}

}  // namespace

// The m rows of the bases' x quantised once in blocks of `block` (the calling thread's buffer,
// reused across calls: no allocation per token), and handed to every base.
inline const QuantizedActivations& quantise_x(std::span<TileArgs> bases, int64_t m, int64_t block, bool scalar) {
  thread_local QuantizedActivations a;
  quantize_activations(bases[0].x, bases[0].ldx, m, bases[0].k, block, a, scalar);
  for (TileArgs& base : bases) base.a = &a;
  return a;
}

}  // namespace nf::cpu
