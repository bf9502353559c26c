#pragma once
// Decode's tiles for the K types on AVX512-VNNI (tiles_k_vnni.cpp), run by tiles_k.cpp's gemv_T
// when int8_isa() is avx512_vnni: y = x W^T for the m rows of x of each base, x already quantised
// to Q8_K blocks (bases[i].a). Declared in a build with AVX2 only (the rest of the binary stays
// AVX2: these carry their own target attributes).
#include <cstdint>
#include <span>

#include "ops/cpu/quant/gemv_tile.h"

namespace nf::cpu {

#if defined(__AVX2__) && defined(__FMA__)
void gemv_q4_k_vnni(std::span<TileArgs> bases, int64_t m);
void gemv_q6_k_vnni(std::span<TileArgs> bases, int64_t m);
void gemv_q5_k_vnni(std::span<TileArgs> bases, int64_t m);
void gemv_q3_k_vnni(std::span<TileArgs> bases, int64_t m);
#endif

}  // namespace nf::cpu
