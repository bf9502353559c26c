#include "ops/cpu/matmul/onednn_gemm.h"

#include <array>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>

#include "nanoformer/core/error.h"

namespace nf::cpu {
namespace {

using Dims = dnnl::memory::dims;
using DataType = dnnl::memory::data_type;

// A (rows, cols) matrix stored row-major with leading dimension ld, or as the transpose of one.
dnnl::memory::desc matrix(int64_t rows, int64_t cols, bool trans, int64_t ld, DataType type) {
  return {Dims{rows, cols}, type, trans ? Dims{1, ld} : Dims{ld, 1}};
}

// The CPU engine and a primitive per GEMM shape: creating one costs about half a millisecond
// (oneDNN generates its kernel). Bounded, since a generation loop whose lengths grow would
// otherwise add one per step. Members are destroyed in reverse order: primitives before engine.
class OneDnn {
 public:
  using Key = std::array<int64_t, 8>;
  static constexpr size_t kCapacity = 256;

  const dnnl::engine& engine() const { return engine_; }

  dnnl::matmul::primitive_desc describe(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, int64_t lda,
                                        int64_t ldb, int64_t ldc) const {
    const dnnl::matmul::desc desc(matrix(M, K, trans_a, lda, DataType::bf16), matrix(K, N, trans_b, ldb, DataType::bf16),
                                  matrix(M, N, false, ldc, DataType::f32));
    return {desc, engine_};
  }

  dnnl::matmul primitive(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                         int64_t ldc) {
    const Key key{trans_a, trans_b, M, N, K, lda, ldb, ldc};
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = primitives_.find(key); it != primitives_.end()) return it->second;
    if (primitives_.size() >= kCapacity) primitives_.clear();
    return primitives_.emplace(key, dnnl::matmul(describe(trans_a, trans_b, M, N, K, lda, ldb, ldc))).first->second;
  }

 private:
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  std::mutex mutex_;
  std::map<Key, dnnl::matmul> primitives_;
};

OneDnn& onednn() {
  static OneDnn instance;
  return instance;
}

}  // namespace

bool onednn_bf16_native() {
  static const bool native = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    return (isa & bf16) == bf16;  // ISAs are cumulative bit sets; AMX includes AVX512-BF16
  }();
  return native;
}

const std::string& onednn_bf16_info() {
  static const std::string info = [] {
    const dnnl_version_t* v = dnnl_version();
    std::string s = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
    try {
      s += ", " + std::string(onednn().describe(false, true, 64, 64, 64, 64, 64, 64).impl_info_str());
    } catch (const dnnl::error& e) {
      s += std::string(", no bf16 matmul: ") + e.what();
    }
    return s;
  }();
  return info;
}

void onednn_gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const uint16_t* a, int64_t lda,
                      const uint16_t* b, int64_t ldb, float* c, int64_t ldc) {
  try {
    OneDnn& dnn = onednn();
    const dnnl::matmul gemm = dnn.primitive(trans_a, trans_b, M, N, K, lda, ldb, ldc);
    thread_local dnnl::stream stream(dnn.engine());
    // oneDNN's memory handles are non-const; the primitive only reads A and B
    const dnnl::memory A(matrix(M, K, trans_a, lda, DataType::bf16), dnn.engine(), const_cast<uint16_t*>(a));
    const dnnl::memory B(matrix(K, N, trans_b, ldb, DataType::bf16), dnn.engine(), const_cast<uint16_t*>(b));
    const dnnl::memory C(matrix(M, N, false, ldc, DataType::f32), dnn.engine(), c);
    gemm.execute(stream, {{DNNL_ARG_SRC, A}, {DNNL_ARG_WEIGHTS, B}, {DNNL_ARG_DST, C}});
    stream.wait();
  } catch (const dnnl::error& e) {
    NF_FAIL("matmul: oneDNN bf16 GEMM (", M, " x ", K, ") @ (", K, " x ", N, ") failed: ", e.what());
  }
}

}  // namespace nf::cpu
