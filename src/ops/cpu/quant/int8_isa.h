#pragma once
// Which instructions prefill's int8 kernels (quant_gemm, over quantised weights) multiply bytes
// with. Chosen once, at run time, from what the CPU reports (CPUID), so a binary built with
// -march=native on an AVX2 machine still uses VNNI where it runs on one:
//   avx512_vnni  vpdpbusd, EVEX: 512-bit panels (Intel since Cascade Lake / Ice Lake, AMD Zen 4)
//   avx_vnni     vpdpbusd, VEX: 256 bits (Intel client cores without AVX-512, Alder Lake on)
//   avx2         vpmaddubsw then vpmaddwd (two instructions for what vpdpbusd does in one)
// (Decode's matrix-vector tiles over a file's rows, quant_gemv: the 32-value types' stay on AVX2's,
// in VNNI form they measured no faster, docs/quantisation.md; the K types' take AVX512-VNNI's,
// tiles_k_vnni.cpp. Over the panels made at load, panels.h, where a register holds 16 rows and no
// horizontal sums are left, they take AVX512-VNNI's; on AVX2 Q4_0's, Q4_1's, Q4_K's and Q6_K's
// panels are made too, read as halves of 8 rows by AVX2's tiles.)
// Every integer sum is exact on all three, so they give the same bits.
// NANOFORMER_INT8=avx2 | avx-vnni | avx512-vnni in the environment (or force_int8_isa) picks one
// the CPU has, to compare or test them.
#include <optional>
#include <string_view>

namespace nf::cpu {

enum class Int8Isa { avx2, avx_vnni, avx512_vnni };

// Whether the CPU (and the build: AVX2 at least) has `isa`.
bool int8_isa_available(Int8Isa isa);
// The best the CPU has (avx2 also stands for the portable kernels of a build without AVX2).
Int8Isa int8_isa_of_cpu();
// The one the kernels use: the CPU's best, or the one forced.
Int8Isa int8_isa();
// Forces `isa` (nullopt: back to the CPU's best); one the CPU lacks is an error naming it.
void force_int8_isa(std::optional<Int8Isa> isa);

std::string_view int8_isa_name(Int8Isa isa);  // "AVX2", "AVX-VNNI", "AVX512-VNNI"
// "avx2", "avx-vnni", "avx512-vnni" -> the ISA; anything else is an error naming `what`
Int8Isa parse_int8_isa(std::string_view text, std::string_view what);

}  // namespace nf::cpu
