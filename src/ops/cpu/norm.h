#pragma once
// CPU kernels of layer_norm and rms_norm. Every tensor is contiguous; x, y, dy and dx are seen as
// (rows, n) with the norm taken along n; weight, bias and their gradients are (n) or undefined
// (no weight / no bias; an undefined gradient is not computed). Per-row statistics are (rows).
// Rows are split over threads; the weight and bias gradients are summed per thread, then across.
#include "nanoformer/core/tensor.h"
#include "nanoformer/ops/norm.h"

namespace nf::cpu {

// y = (x - mean) rstd weight + bias;  saves mean and rstd = 1 / sqrt(var + eps) per row
void layer_norm_forward(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                        const Tensor& weight, const Tensor& bias, double eps);

// xhat = (x - mean) rstd, h = dy weight:
//   dx = rstd (h - mean(h) - xhat mean(h xhat)),  dweight = sum_rows dy xhat,  dbias = sum_rows dy
void layer_norm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                         const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight);

// y = x r weight, r = rsqrt(mean(x^2) + eps) (rsqrt) or 1 / (rms + eps) (rms_plus_eps);
// saves `stat` per row: r for rsqrt, rms = sqrt(mean(x^2)) for rms_plus_eps
void rms_norm_forward(const Tensor& y, const Tensor& stat, const Tensor& x, const Tensor& weight, double eps,
                      RmsNormForm form);

// h = dy weight, s = sum(h x):  dx = r (h - x c), c = r^2 s / n (rsqrt) or r s / (n rms) (rms_plus_eps,
// 0 on an all-zero row);  dweight = sum_rows dy x r
void rms_norm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dy, const Tensor& x,
                       const Tensor& stat, const Tensor& weight, double eps, RmsNormForm form);

}  // namespace nf::cpu
