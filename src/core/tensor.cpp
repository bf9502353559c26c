#include "nanoformer/core/tensor.h"

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/autograd/node.h"
#include "nanoformer/core/error.h"

namespace nf {

std::string shape_str(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + ")";
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i] > 0 ? shape[i] : 1;
  }
  return strides;
}

int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t lo = ndim == 0 ? -1 : -ndim, hi = ndim == 0 ? 0 : ndim - 1;
  NF_CHECK(dim >= lo && dim <= hi, op, ": dim ", dim, " out of range for a tensor of ", ndim,
           " dims (expected ", lo, " to ", hi, ")");
  return dim < 0 ? dim + (ndim == 0 ? 1 : ndim) : dim;
}

// ---- construction ----

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape) NF_CHECK(d >= 0, "empty: negative size in shape ", shape_str(shape));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype), device);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::from_storage(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset, DType dtype) {
  NF_CHECK(shape.size() == strides.size(), "from_storage: shape ", shape_str(shape), " and strides ",
           shape_str(strides), " differ in rank");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
  NF_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape), "from_vector: ", values.size(),
           " values do not fill shape ", shape_str(shape));
  Tensor t = empty(shape, dtype_v<T>);
  T* p = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return t;
}
template Tensor Tensor::from_vector(const std::vector<float>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<double>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<int32_t>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<int64_t>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<bf16>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<f16>&, const Shape&);

template <>
Tensor Tensor::from_vector(const std::vector<bool>& values, const Shape& shape) {
  NF_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape), "from_vector: ", values.size(),
           " values do not fill shape ", shape_str(shape));
  Tensor t = empty(shape, DType::boolean);
  bool* p = t.data<bool>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return t;
}

Tensor Tensor::of(const std::vector<double>& values, const Shape& shape, DType dtype) {
  NF_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape), "Tensor::of: ", values.size(),
           " values do not fill shape ", shape_str(shape));
  Tensor t = empty(shape, dtype);
  char* p = static_cast<char*>(t.raw_data());
  const size_t item = dtype_size(dtype);
  for (size_t i = 0; i < values.size(); ++i) store_from_double(p + i * item, dtype, values[i]);
  return t;
}

Tensor Tensor::scalar(double value, DType dtype) { return of({value}, {}, dtype); }

// ---- metadata ----

#define NF_REQUIRE_DEFINED(what) NF_CHECK(impl_ != nullptr, what, ": tensor is undefined")

const Shape& Tensor::shape() const { NF_REQUIRE_DEFINED("shape"); return impl_->shape; }
const Shape& Tensor::strides() const { NF_REQUIRE_DEFINED("strides"); return impl_->strides; }
int64_t Tensor::size(int64_t d) const { return shape()[normalize_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[normalize_dim(d, dim(), "stride")]; }
int64_t Tensor::numel() const { return shape_numel(shape()); }
int64_t Tensor::offset() const { NF_REQUIRE_DEFINED("offset"); return impl_->offset; }
DType Tensor::dtype() const { NF_REQUIRE_DEFINED("dtype"); return impl_->dtype; }
Device Tensor::device() const { NF_REQUIRE_DEFINED("device"); return impl_->storage->device(); }
const std::shared_ptr<Storage>& Tensor::storage() const { NF_REQUIRE_DEFINED("storage"); return impl_->storage; }
const std::string& Tensor::name() const { NF_REQUIRE_DEFINED("name"); return impl_->name; }
Tensor& Tensor::set_name(std::string name) { NF_REQUIRE_DEFINED("set_name"); impl_->name = std::move(name); return *this; }

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;  // no element to be out of place (as PyTorch)
  int64_t expected = 1;
  for (size_t i = shape().size(); i-- > 0;) {
    if (impl_->shape[i] == 1) continue;
    if (impl_->strides[i] != expected) return false;
    expected *= impl_->shape[i];
  }
  return true;
}

bool Tensor::shares_storage_with(const Tensor& other) const {
  return defined() && other.defined() && impl_->storage == other.impl_->storage;
}

// ---- data ----

void* Tensor::raw_data() const {
  NF_REQUIRE_DEFINED("data");
  return static_cast<char*>(impl_->storage->data()) + impl_->offset * static_cast<int64_t>(itemsize());
}

template <class T>
T* Tensor::data() const {
  NF_CHECK(dtype() == dtype_v<T>, "data<", dtype_name(dtype_v<T>), ">: tensor has dtype ", dtype_name(dtype()));
  return static_cast<T*>(raw_data());
}
template float* Tensor::data<float>() const;
template double* Tensor::data<double>() const;
template bf16* Tensor::data<bf16>() const;
template f16* Tensor::data<f16>() const;
template int32_t* Tensor::data<int32_t>() const;
template int64_t* Tensor::data<int64_t>() const;
template bool* Tensor::data<bool>() const;

namespace {
int64_t element_offset(const Tensor& t, const std::vector<int64_t>& index) {
  NF_CHECK(static_cast<int64_t>(index.size()) == t.dim(), "at: index has ", index.size(),
           " coordinates for a tensor of shape ", shape_str(t.shape()));
  int64_t off = 0;
  for (size_t d = 0; d < index.size(); ++d) {
    int64_t i = index[d];
    const int64_t n = t.shape()[d];
    if (i < 0) i += n;
    NF_CHECK(i >= 0 && i < n, "at: index ", index[d], " out of range for dim ", d, " of shape ",
             shape_str(t.shape()));
    off += i * t.strides()[d];
  }
  return off;
}
}  // namespace

double Tensor::at(const std::vector<int64_t>& index) const {
  const int64_t off = element_offset(*this, index);
  return load_as_double(static_cast<const char*>(raw_data()) + off * static_cast<int64_t>(itemsize()), dtype());
}

void Tensor::set(const std::vector<int64_t>& index, double value) const {
  const int64_t off = element_offset(*this, index);
  store_from_double(static_cast<char*>(raw_data()) + off * static_cast<int64_t>(itemsize()), dtype(), value);
}

double Tensor::item() const {
  NF_CHECK(numel() == 1, "item: tensor of shape ", shape_str(shape()), " has ", numel(), " elements, not 1");
  return load_as_double(raw_data(), dtype());
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  const int64_t n = numel();
  std::vector<T> out(static_cast<size_t>(n));
  const Shape& sh = shape();
  const Shape& st = strides();
  std::vector<int64_t> idx(sh.size(), 0);
  const char* base = static_cast<const char*>(raw_data());
  const int64_t item = static_cast<int64_t>(itemsize());
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < sh.size(); ++d) off += idx[d] * st[d];
    out[static_cast<size_t>(i)] = static_cast<T>(load_as_double(base + off * item, dtype()));
    for (size_t d = sh.size(); d-- > 0;) {
      if (++idx[d] < sh[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}
template std::vector<float> Tensor::to_vector() const;
template std::vector<double> Tensor::to_vector() const;
template std::vector<int32_t> Tensor::to_vector() const;
template std::vector<int64_t> Tensor::to_vector() const;
template std::vector<uint8_t> Tensor::to_vector() const;

// ---- autograd ----

bool Tensor::requires_grad() const { NF_REQUIRE_DEFINED("requires_grad"); return impl_->requires_grad; }

Tensor& Tensor::set_requires_grad(bool flag) {
  NF_REQUIRE_DEFINED("set_requires_grad");
  NF_CHECK(is_leaf(), "set_requires_grad: only leaf tensors can change requires_grad (this one comes from '",
           impl_->grad_fn->name(), "'; use detach())");
  NF_CHECK(!flag || is_floating(dtype()), "set_requires_grad: a ", dtype_name(dtype()),
           " tensor cannot require grad (only floating dtypes can)");
  impl_->requires_grad = flag;
  return *this;
}

bool Tensor::is_leaf() const { NF_REQUIRE_DEFINED("is_leaf"); return impl_->grad_fn == nullptr; }

Tensor Tensor::grad() const { NF_REQUIRE_DEFINED("grad"); return Tensor(impl_->grad); }

void Tensor::set_grad(const Tensor& grad) const {
  NF_REQUIRE_DEFINED("set_grad");
  if (grad.defined()) {
    NF_CHECK(grad.shape() == shape(), "set_grad: gradient of shape ", shape_str(grad.shape()),
             " for a tensor of shape ", shape_str(shape()));
  }
  impl_->grad = grad.impl_ptr();
}

void Tensor::zero_grad() const { NF_REQUIRE_DEFINED("zero_grad"); impl_->grad.reset(); }

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const { NF_REQUIRE_DEFINED("grad_fn"); return impl_->grad_fn; }

Tensor Tensor::detach() const {
  NF_REQUIRE_DEFINED("detach");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_->storage;
  impl->shape = impl_->shape;
  impl->strides = impl_->strides;
  impl->offset = impl_->offset;
  impl->dtype = impl_->dtype;
  impl->name = impl_->name;
  return Tensor(std::move(impl));
}

void Tensor::backward(const Tensor& grad, bool retain_graph) const {
  NF_REQUIRE_DEFINED("backward");
  autograd::run_backward(*this, grad, retain_graph);
}

}  // namespace nf
