// Selection: where(cond, a, b) and masked_fill(x, mask, value), with broadcasting.
#include <algorithm>
#include <initializer_list>

#include "nanoformer/autograd/node.h"
#include "nanoformer/core/dispatch.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/elementwise.h"
#include "nanoformer/ops/reduce.h"
#include "ops/cpu/elementwise.h"
#include "ops/elementwise_internal.h"

namespace nf {
namespace {

using WhereKernel = void (*)(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);
using MaskedFillKernel = void (*)(const Tensor& out, const Tensor& x, const Tensor& mask, double value);
const DeviceKernels<WhereKernel> kWhere{.cpu = cpu::where};
const DeviceKernels<MaskedFillKernel> kMaskedFill{.cpu = cpu::masked_fill};

// numpy broadcasting of several shapes; false when some dim has two different sizes other than 1.
bool broadcast_all(std::initializer_list<const Shape*> shapes, Shape& out) {
  size_t n = 0;
  for (const Shape* s : shapes) n = std::max(n, s->size());
  out.assign(n, 1);
  for (const Shape* s : shapes) {
    const size_t lead = n - s->size();
    for (size_t d = 0; d < s->size(); ++d) {
      const int64_t size = (*s)[d];
      if (size == 1) continue;
      if (out[lead + d] != 1 && out[lead + d] != size) return false;
      out[lead + d] = size;
    }
  }
  return true;
}

void check_mask(const char* op, const char* what, const Tensor& mask, const Tensor& like) {
  NF_CHECK(mask.defined(), op, ": ", what, " is undefined");
  NF_CHECK(mask.dtype() == DType::boolean, op, ": ", what, " must be bool, got ", dtype_name(mask.dtype()), " ",
           shape_str(mask.shape()));
  NF_CHECK(mask.device() == like.device(), op, ": devices differ: ", what, " on ", mask.device().str(), ", input on ",
           like.device().str());
}

// Integer dtypes take a finite value in their range (converted toward zero, as PyTorch); floating
// and bool dtypes take any value.
bool fits_dtype(double value, DType t) {
  switch (t) {
    case DType::i32: return value > -2147483649.0 && value < 2147483648.0;
    case DType::i64: return value >= -9223372036854775808.0 && value < 9223372036854775808.0;
    default: return true;
  }
}

}  // namespace

// out = a where cond else b;  da = dout where cond, db = dout elsewhere (each summed to its shape)
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_binary_operands("where", a, b);
  check_mask("where", "cond", cond, a);
  Shape shape;
  NF_CHECK(broadcast_all({&cond.shape(), &a.shape(), &b.shape()}, shape), "where: shapes of cond ",
           shape_str(cond.shape()), ", a ", shape_str(a.shape()), " and b ", shape_str(b.shape()), " do not broadcast");
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  kWhere.get(a.device(), "where")(out, cond, a, b);
  autograd::record("where", out, {a, b},
                   [cond = cond.detach(), sa = a.shape(), sb = b.shape()](const Tensor& g, const autograd::Node& n) {
                     const Tensor zero = Tensor::scalar(0.0, g.dtype());
                     return std::vector<Tensor>{n.needs_input_grad(0) ? sum_to(where(cond, g, zero), sa) : Tensor(),
                                                n.needs_input_grad(1) ? sum_to(where(cond, zero, g), sb) : Tensor()};
                   });
  return out;
}

// out = value where mask else x;  dx = dout where not mask, 0 where filled
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  NF_CHECK(x.defined(), "masked_fill: tensor is undefined");
  check_mask("masked_fill", "mask", mask, x);
  Shape shape;
  NF_CHECK(broadcast_all({&x.shape(), &mask.shape()}, shape) && shape == x.shape(), "masked_fill: mask of shape ",
           shape_str(mask.shape()), " does not broadcast to the input's shape ", shape_str(x.shape()));
  NF_CHECK(fits_dtype(value, x.dtype()), "masked_fill: value ", value, " does not fit the input's dtype ",
           dtype_name(x.dtype()), " ", shape_str(x.shape()));
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  kMaskedFill.get(x.device(), "masked_fill")(out, x, mask, value);
  autograd::record("masked_fill", out, {x}, [mask = mask.detach()](const Tensor& g, const autograd::Node&) {
    return std::vector<Tensor>{masked_fill(g, mask, 0.0)};
  });
  return out;
}

}  // namespace nf
