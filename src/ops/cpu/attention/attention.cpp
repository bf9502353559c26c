#include "ops/cpu/attention/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "nanoformer/ops/factory.h"
#include "ops/cpu/attention/attention_decode.h"
#include "ops/cpu/attention/attention_tiles.h"
#include "ops/cpu/loops/elementwise_loops.h"
#include "ops/cpu/simd/row_reductions.h"
#include "ops/cpu/simd/vector_math.h"

namespace nf::cpu {
namespace {

using attention_tiles::balanced_tile;
using attention_tiles::dropout_keeps;
using attention_tiles::gemm;
using attention_tiles::ScoreMasks;

int64_t blocks(int64_t n, int64_t block) { return (n + block - 1) / block; }

// Element pointers of (B, H, T, D) tensors with the last dim contiguous: row i of head (b, h).
// P is the element type, const for inputs.
template <class P>
struct Rows {
  P* data;
  int64_t sb, sh, st;
  explicit Rows(const Tensor& t)
      : data(t.data<std::remove_const_t<P>>()), sb(t.stride(0)), sh(t.stride(1)), st(t.stride(2)) {}
  P* at(int64_t b, int64_t h, int64_t i) const { return data + b * sb + h * sh + i * st; }
};

// Counter of weight (b, h, i, j) in the dropout draw: its index in the contiguous (B, H, Tq, Tk).
uint64_t weight_index(const AttentionProblem& p, int64_t b, int64_t h, int64_t i, int64_t j) {
  return static_cast<uint64_t>(((b * p.H + h) * p.Tq + i) * p.Tk + j);
}

// ---- forward: one task per (b, h, query tile), online softmax over key tiles ----

template <class T>
void forward_typed(const AttentionProblem& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                   const Tensor& lse) {
  constexpr T kInf = std::numeric_limits<T>::infinity();
  const ScoreMasks<T> masks(p);
  const Rows<const T> Q(q), K(k), V(v);
  const Rows<T> O(out);
  T* L = lse.data<T>();
  const int64_t D = p.D, group = p.H / p.Hkv, q_tiles = blocks(p.Tq, kQueryBlock);
  const bool dropout = p.keep_prob < 1.0;
  const T keep_scale = static_cast<T>(1.0 / p.keep_prob);

  parallel_for(p.B * p.H * q_tiles, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> s(kQueryBlock * kKeyBlock), acc(kQueryBlock * D), m(kQueryBlock), l(kQueryBlock);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t bh = task / q_tiles, b = bh / p.H, h = bh % p.H, hk = h / group;
      const int64_t i0 = balanced_tile(task % q_tiles, q_tiles) * kQueryBlock, nq = std::min(kQueryBlock, p.Tq - i0);
      std::fill(m.begin(), m.end(), -kInf);
      std::fill(l.begin(), l.end(), T(0));
      std::fill(acc.begin(), acc.end(), T(0));
      // only the keys some query of the tile sees: none above the causal diagonal, none below the window
      const int64_t key_end = masks.key_end(i0, nq);
      for (int64_t j0 = masks.key_begin(i0); j0 < key_end; j0 += kKeyBlock) {
        const int64_t nk = std::min(kKeyBlock, key_end - j0);
        // S = Q_tile K_tile^T  (nq, nk)
        gemm<T>(false, true, nq, nk, D, T(1), Q.at(b, h, i0), Q.st, K.at(b, hk, j0), K.st, T(0), s.data(), kKeyBlock);
        for (int64_t r = 0; r < nq; ++r) {
          T* row = s.data() + r * kKeyBlock;
          const int64_t i = i0 + r;
          masks.apply(row, nk, b, h, i, j0);
          const T m_new = std::max(m[r], row_max(row, nk));
          if (m_new == -kInf) {  // every key so far masked: contributes nothing
            std::fill_n(row, nk, T(0));
            continue;
          }
          // online softmax: p = e^(s - m_new), l = l e^(m - m_new) + sum p, acc = acc e^(m - m_new)
          const T alpha = vmath::exp(m[r] - m_new);
          const T row_sum = lane_sum<T>(nk, [&](int64_t c) { return row[c] = vmath::exp(row[c] - m_new); });
          l[r] = l[r] * alpha + row_sum;
          m[r] = m_new;
          if (alpha != T(1)) {
            T* a = acc.data() + r * D;
            for (int64_t d = 0; d < D; ++d) a[d] *= alpha;
          }
          if (dropout) {  // p z with z = keep / keep_prob (the normaliser l uses p undropped)
            const uint64_t at = weight_index(p, b, h, i, j0);
            for (int64_t c = 0; c < nk; ++c) row[c] = dropout_keeps<T>(p.seed, p.first + at + c, p.keep_prob) ? row[c] * keep_scale : T(0);
          }
        }
        // acc += P V_tile  (nq, D)
        gemm<T>(false, false, nq, D, nk, T(1), s.data(), kKeyBlock, V.at(b, hk, j0), V.st, T(1), acc.data(), D);
      }
      // O = acc / l, lse = m + log l; a row with every key masked gives O = 0, lse = +inf
      for (int64_t r = 0; r < nq; ++r) {
        const int64_t row = bh * p.Tq + i0 + r;
        T* o = O.at(b, h, i0 + r);
        const T inv = l[r] > T(0) ? T(1) / l[r] : T(0);
        for (int64_t d = 0; d < D; ++d) o[d] = acc[r * D + d] * inv;
        L[row] = l[r] > T(0) ? m[r] + std::log(l[r]) : kInf;
      }
    }
  });
}

// ---- backward: one task per (b, kv head, key tile), over every query tile of the group's heads ----

// delta_i = sum_d dO_id O_id  (B, H, Tq)
template <class T>
std::vector<T> output_dot_grad(const Tensor& out, const Tensor& dout, int64_t H, int64_t Tq, int64_t D) {
  const int64_t rows = out.size(0) * H * Tq;
  std::vector<T> delta(rows);
  const Rows<const T> O(out), dO(dout);
  parallel_for(rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(D, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t b = r / (H * Tq), h = r / Tq % H, i = r % Tq;
      const T* o = O.at(b, h, i);
      const T* g = dO.at(b, h, i);
      delta[r] = lane_sum<T>(D, [&](int64_t d) { return o[d] * g[d]; });
    }
  });
  return delta;
}

template <class T>
void backward_typed(const AttentionProblem& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                    const Tensor& lse, const Tensor& dout, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                    const Tensor& dbias) {
  const ScoreMasks<T> masks(p);
  const Rows<const T> Q(q), K(k), V(v), dO(dout);
  const Rows<T> dK(dk), dV(dv);
  const T* L = lse.data<T>();
  const int64_t D = p.D, group = p.H / p.Hkv, k_tiles = blocks(p.Tk, kKeyBlock);
  const std::vector<T> delta = output_dot_grad<T>(out, dout, p.H, p.Tq, D);
  const bool dropout = p.keep_prob < 1.0;
  const T keep_scale = static_cast<T>(1.0 / p.keep_prob), scale = static_cast<T>(p.scale);
  T* dbias_data = dbias.defined() ? dbias.data<T>() : nullptr;

  // dK and dV rows belong to one task each; dQ rows receive from every key tile, so each piece of
  // the task range accumulates into its own copy (dq itself for the first), summed at the end.
  const int64_t tasks = p.B * p.Hkv * k_tiles;
  const int64_t pieces = std::max<int64_t>(1, std::min<int64_t>(num_threads(), tasks));
  std::vector<Tensor> dq_parts{dq};
  for (int64_t i = 1; i < pieces; ++i) dq_parts.push_back(empty_like(dq));  // dense, dq's strides
  for (const Tensor& part : dq_parts) std::fill_n(part.data<T>(), part.numel(), T(0));

  parallel_for(pieces, 1, [&](int64_t piece_begin, int64_t piece_end) {
    std::vector<T> prob(kQueryBlock * kKeyBlock), dropped(kQueryBlock * kKeyBlock), zs(kQueryBlock * kKeyBlock),
        ds(kQueryBlock * kKeyBlock);
    for (int64_t piece = piece_begin; piece < piece_end; ++piece) {
      const Rows<T> dQ(dq_parts[piece]);
      for (int64_t task = tasks * piece / pieces; task < tasks * (piece + 1) / pieces; ++task) {
        const int64_t bk = task / k_tiles, b = bk / p.Hkv, hk = bk % p.Hkv;
        const int64_t j0 = balanced_tile(task % k_tiles, k_tiles) * kKeyBlock, nk_tile = std::min(kKeyBlock, p.Tk - j0);
        T* dK_tile = dK.at(b, hk, j0);
        T* dV_tile = dV.at(b, hk, j0);
        for (int64_t j = 0; j < nk_tile; ++j) {
          std::fill_n(dK_tile + j * dK.st, D, T(0));
          std::fill_n(dV_tile + j * dV.st, D, T(0));
        }
        // the query tiles that see some key of this tile: none before the causal diagonal, none past the window
        const int64_t i_end = masks.query_end(j0, nk_tile);
        for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
          for (int64_t i0 = masks.first_query(j0) / kQueryBlock * kQueryBlock; i0 < i_end; i0 += kQueryBlock) {
            const int64_t nq = std::min(kQueryBlock, p.Tq - i0), row0 = (b * p.H + h) * p.Tq + i0;
            // keys [j1, j1 + nk) of the tile that some query of this query tile sees (the rest pass no gradient)
            const int64_t j1 = std::max(j0, masks.key_begin(i0));
            const int64_t nk = std::min(j0 + nk_tile, masks.key_end(i0, nq)) - j1;
            if (nk <= 0) continue;
            const T* dO_tile = dO.at(b, h, i0);
            T* dK_rows = dK_tile + (j1 - j0) * dK.st;
            T* dV_rows = dV_tile + (j1 - j0) * dV.st;
            // S = Q_tile K_tile^T, P = e^(masked S - lse)  (nq, nk)
            gemm<T>(false, true, nq, nk, D, T(1), Q.at(b, h, i0), Q.st, K.at(b, hk, j1), K.st, T(0), prob.data(), kKeyBlock);
            for (int64_t r = 0; r < nq; ++r) {
              T* row = prob.data() + r * kKeyBlock;
              masks.apply(row, nk, b, h, i0 + r, j1);
              const T row_lse = L[row0 + r];
              for (int64_t c = 0; c < nk; ++c) row[c] = vmath::exp(row[c] - row_lse);
              if (dropout) {  // Pd = P z, z = keep / keep_prob
                const uint64_t at = weight_index(p, b, h, i0 + r, j1);
                T* z = zs.data() + r * kKeyBlock;
                T* pd = dropped.data() + r * kKeyBlock;
                for (int64_t c = 0; c < nk; ++c) {
                  z[c] = dropout_keeps<T>(p.seed, p.first + at + c, p.keep_prob) ? keep_scale : T(0);
                  pd[c] = row[c] * z[c];
                }
              }
            }
            const T* pd = dropout ? dropped.data() : prob.data();
            // dV_tile += Pd^T dO_tile  (nk, D)
            gemm<T>(true, false, nk, D, nq, T(1), pd, kKeyBlock, dO_tile, dO.st, T(1), dV_rows, dV.st);
            // dPd = dO_tile V_tile^T  (nq, nk)
            gemm<T>(false, true, nq, nk, D, T(1), dO_tile, dO.st, V.at(b, hk, j1), V.st, T(0), ds.data(), kKeyBlock);
            for (int64_t r = 0; r < nq; ++r) {
              // dS = P (dPd z - delta_i)
              const T* pr = prob.data() + r * kKeyBlock;
              const T* z = zs.data() + r * kKeyBlock;
              T* g = ds.data() + r * kKeyBlock;
              const T d_i = delta[row0 + r];
              if (dropout) {
                for (int64_t c = 0; c < nk; ++c) g[c] = pr[c] * (g[c] * z[c] - d_i);
              } else {
                for (int64_t c = 0; c < nk; ++c) g[c] = pr[c] * (g[c] - d_i);
              }
              if (dbias_data) std::copy_n(g, nk, dbias_data + (row0 + r) * p.Tk + j1);
            }
            // dK_tile += scale dS^T Q_tile  (nk, D);  dQ_tile += scale dS K_tile  (nq, D)
            gemm<T>(true, false, nk, D, nq, scale, ds.data(), kKeyBlock, Q.at(b, h, i0), Q.st, T(1), dK_rows, dK.st);
            gemm<T>(false, false, nq, D, nk, scale, ds.data(), kKeyBlock, K.at(b, hk, j1), K.st, T(1), dQ.at(b, h, i0),
                    dQ.st);
          }
        }
      }
    }
  });

  // dq = sum of the pieces' partial dQ
  if (pieces > 1) {
    T* dst = dq.data<T>();
    parallel_for(dq.numel(), kParallelGrain, [&](int64_t begin, int64_t end) {
      for (size_t part = 1; part < dq_parts.size(); ++part) {
        const T* src = dq_parts[part].data<T>();
        for (int64_t e = begin; e < end; ++e) dst[e] += src[e];
      }
    });
  }
}

}  // namespace

void attention_forward(const AttentionProblem& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                       const Tensor& lse) {
  if (attention_decode_applies(p, q.dtype())) return attention_decode_forward(p, q, k, v, out, lse);
  visit_floating(q.dtype(), "scaled_dot_product_attention", [&](auto tag) {
    using T = decltype(tag);
    forward_typed<T>(p, q, k, v, out, lse);
  });
}

void attention_backward(const AttentionProblem& p, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                        const Tensor& lse, const Tensor& dout, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                        const Tensor& dbias) {
  visit_floating(q.dtype(), "scaled_dot_product_attention backward", [&](auto tag) {
    using T = decltype(tag);
    backward_typed<T>(p, q, k, v, out, lse, dout, dq, dk, dv, dbias);
  });
}

}  // namespace nf::cpu
