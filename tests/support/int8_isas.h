#pragma once
// Running a computation on each int8 instruction set the CPU has (ops/cpu/quant/int8_isa.h), for tests
// that they all give the same bits.
#include <vector>

#include "ops/cpu/quant/int8_isa.h"

namespace nf::testing {

// The VNNI forms this CPU has (none on a CPU with AVX2 alone: the tests using them skip there).
inline std::vector<cpu::Int8Isa> vnni_isas() {
  std::vector<cpu::Int8Isa> isas;
  for (cpu::Int8Isa isa : {cpu::Int8Isa::avx_vnni, cpu::Int8Isa::avx512_vnni})
    if (cpu::int8_isa_available(isa)) isas.push_back(isa);
  return isas;
}

// f() with `isa` forced; the CPU's own choice is restored after, also when f throws
template <class F>
auto on_int8_isa(cpu::Int8Isa isa, F&& f) {
  struct Restore {
    ~Restore() { cpu::force_int8_isa(std::nullopt); }
  } restore;
  cpu::force_int8_isa(isa);
  return f();
}

}  // namespace nf::testing
