// The autocast mode (per thread), its cache of rounded parameters, and the bf16 GEMM choice.
#include "nanoformer/ops/autocast.h"

#include <map>
#include <utility>

#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "ops/autocast_internal.h"
#include "ops/cpu/copy.h"
#include "ops/cpu/matmul/matmul.h"

namespace nf {
namespace {

struct AutocastState {
  DType dtype = DType::f32;
  int depth = 0;  // guards alive on this thread
  // (parameter, dtype) -> (the parameter, its rounded copy); holding the parameter keeps its
  // address from being reused by another tensor while the entry lives
  std::map<std::pair<const TensorImpl*, DType>, std::pair<Tensor, Tensor>> rounded;
};

thread_local AutocastState t_state;

using RoundKernel = Tensor (*)(const Tensor& t, DType dtype);
const DeviceKernels<RoundKernel> kRound{.cpu = cpu::convert_keeping_layout};
// the bf16 GEMM's choice on a device (autocast.h asks the CPU's)
const DeviceKernels<bool (*)()> kBf16Native{.cpu = cpu::bf16_gemm_native};
const DeviceKernels<void (*)(bool)> kForceBf16Fallback{.cpu = cpu::force_bf16_gemm_fallback};
const DeviceKernels<std::string (*)()> kBf16Info{.cpu = cpu::bf16_gemm_info};

}  // namespace

DType autocast_dtype() { return t_state.dtype; }

AutocastGuard::AutocastGuard(DType dtype) : previous_(t_state.dtype) {
  NF_CHECK(dtype == DType::bf16 || dtype == DType::f16 || dtype == DType::f32, "AutocastGuard: dtype ",
           dtype_name(dtype), " is not supported (expects bf16 or f16, or f32 to switch autocast off)");
  t_state.dtype = dtype;
  ++t_state.depth;
}

AutocastGuard::~AutocastGuard() {
  t_state.dtype = previous_;
  if (--t_state.depth == 0) t_state.rounded.clear();
}

DType autocast_operand_dtype(const Tensor& a, const Tensor& b) {
  const bool f32 = a.dtype() == DType::f32 && b.dtype() == DType::f32;
  return f32 ? t_state.dtype : DType::f32;
}

Tensor autocast_round(const Tensor& t, DType dtype) {
  if (!(t.is_leaf() && t.requires_grad()) || t_state.depth == 0) return kRound.get(t.device(), "autocast")(t, dtype);
  const auto key = std::make_pair(static_cast<const TensorImpl*>(t.impl()), dtype);
  if (auto it = t_state.rounded.find(key); it != t_state.rounded.end()) return it->second.second;
  Tensor rounded = kRound.get(t.device(), "autocast")(t, dtype);
  t_state.rounded.emplace(key, std::make_pair(t, rounded));
  return rounded;
}

bool bf16_gemm_native() { return kBf16Native.get(Device::cpu(), "bf16_gemm_native")(); }

void force_bf16_gemm_fallback(bool force) { kForceBf16Fallback.get(Device::cpu(), "force_bf16_gemm_fallback")(force); }

std::string bf16_gemm_info() { return kBf16Info.get(Device::cpu(), "bf16_gemm_info")(); }

}  // namespace nf
