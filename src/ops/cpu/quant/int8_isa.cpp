#include "ops/cpu/quant/int8_isa.h"

#include <cpuid.h>

#include <atomic>
#include <cstdlib>

#include "nanoformer/core/error.h"

namespace nf::cpu {

bool int8_isa_available(Int8Isa isa) {
#if defined(__AVX2__) && defined(__FMA__)
  switch (isa) {
    case Int8Isa::avx512_vnni:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    case Int8Isa::avx_vnni: {  // CPUID leaf 7 sub-leaf 1, EAX bit 4 (not every compiler's __builtin_cpu_supports knows it)
      unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
      return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax >> 4 & 1u) != 0;
    }
    case Int8Isa::avx2: return true;
  }
#endif
  return isa == Int8Isa::avx2;
}

namespace {

constexpr int kNotForced = -1;

std::atomic<int>& forced() {
  static std::atomic<int> isa = [] {
    const char* env = std::getenv("NANOFORMER_INT8");
    if (env == nullptr || *env == '\0') return kNotForced;
    const Int8Isa wanted = parse_int8_isa(env, "NANOFORMER_INT8");
    NF_CHECK(int8_isa_available(wanted), "NANOFORMER_INT8=", env, ": this CPU has no ", int8_isa_name(wanted));
    return static_cast<int>(wanted);
  }();
  return isa;
}

}  // namespace

Int8Isa int8_isa_of_cpu() {
  static const Int8Isa best = int8_isa_available(Int8Isa::avx512_vnni) ? Int8Isa::avx512_vnni
                              : int8_isa_available(Int8Isa::avx_vnni)  ? Int8Isa::avx_vnni
                                                            : Int8Isa::avx2;
  return best;
}

Int8Isa int8_isa() {
  const int isa = forced().load(std::memory_order_relaxed);
  return isa == kNotForced ? int8_isa_of_cpu() : static_cast<Int8Isa>(isa);
}

void force_int8_isa(std::optional<Int8Isa> isa) {
  NF_CHECK(!isa || int8_isa_available(*isa), "force_int8_isa: this CPU has no ", int8_isa_name(*isa));
  forced().store(isa ? static_cast<int>(*isa) : kNotForced);
}

std::string_view int8_isa_name(Int8Isa isa) {
  switch (isa) {
    case Int8Isa::avx512_vnni: return "AVX512-VNNI";
    case Int8Isa::avx_vnni: return "AVX-VNNI";
    case Int8Isa::avx2: break;
  }
  return "AVX2";
}

Int8Isa parse_int8_isa(std::string_view text, std::string_view what) {
  if (text == "avx2") return Int8Isa::avx2;
  if (text == "avx-vnni") return Int8Isa::avx_vnni;
  if (text == "avx512-vnni") return Int8Isa::avx512_vnni;
  NF_FAIL(what, ": '", text, "' is not an int8 instruction set (expects avx2, avx-vnni or avx512-vnni)");
}

}  // namespace nf::cpu
