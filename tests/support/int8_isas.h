#pragma once
// Running a computation on each int8 instruction set the CPU has (ops/cpu/quant/int8_isa.h), for tests
// that they all give the same bits.
#include <cstdlib>
#include <optional>
#include <string>
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

// AVX2 and each VNNI form this CPU has: every set the int8 kernels can be forced to
inline std::vector<cpu::Int8Isa> all_int8_isas() {
  std::vector<cpu::Int8Isa> isas{cpu::Int8Isa::avx2};
  for (cpu::Int8Isa isa : vnni_isas()) isas.push_back(isa);
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

// NANOFORMER_PANELS (ops/cpu/quant/panels.h) set to `value` for a scope, restored after
class ScopedPanels {
 public:
  explicit ScopedPanels(const char* value) {  // "": unset (the default)
    if (const char* old = std::getenv("NANOFORMER_PANELS")) old_ = old;
    if (*value == '\0') ::unsetenv("NANOFORMER_PANELS");
    else ::setenv("NANOFORMER_PANELS", value, 1);
  }
  ~ScopedPanels() {
    if (old_) ::setenv("NANOFORMER_PANELS", old_->c_str(), 1);
    else ::unsetenv("NANOFORMER_PANELS");
  }
  ScopedPanels(const ScopedPanels&) = delete;
  ScopedPanels& operator=(const ScopedPanels&) = delete;

 private:
  std::optional<std::string> old_;
};

}  // namespace nf::testing
