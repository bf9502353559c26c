#pragma once
// Tensor: a cheap, shared handle to (storage, shape, strides, offset, dtype) plus autograd state.
// Copies of a Tensor alias the same data; views (reshape, transpose, narrow, expand, ...) share
// storage and differ only in shape/strides/offset. Shapes are (outermost, ..., innermost), strides
// are in elements. Methods that compute (views with autograd, to(), contiguous(), operators) are
// declared here for convenience and defined in ops/, which owns all math.
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "nanoformer/core/device.h"
#include "nanoformer/core/dtype.h"
#include "nanoformer/core/storage.h"

namespace nf {

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& shape);      // "(2, 3)"
int64_t shape_numel(const Shape& shape);
Shape contiguous_strides(const Shape& shape);   // row-major strides for `shape`
int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op);  // -1 -> ndim-1, range-checked

namespace autograd { class Node; }

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Shape strides;
  int64_t offset = 0;  // elements from storage start
  DType dtype = DType::f32;
  std::string name;    // optional; parameters carry their dotted names for error messages

  // autograd state
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;              // accumulated gradient of a leaf
  std::shared_ptr<autograd::Node> grad_fn;       // set on results of recorded ops
  std::weak_ptr<autograd::Node> grad_accumulator;  // a leaf's AccumulateGrad node, made lazily
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- construction without math ----
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = {});
  static Tensor from_storage(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset, DType dtype);
  // Copies host values into a new contiguous tensor; T must be the C++ type of a dtype.
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape);
  // Values given as doubles, stored in `dtype` (convenient in tests): Tensor::of({1,2,3,4}, {2,2}).
  static Tensor of(const std::vector<double>& values, const Shape& shape, DType dtype = DType::f32);
  static Tensor scalar(double value, DType dtype = DType::f32);

  // ---- metadata ----
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  const Shape& strides() const;
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  int64_t size(int64_t d) const;    // negative d counts from the end
  int64_t stride(int64_t d) const;
  int64_t numel() const;
  int64_t offset() const;
  DType dtype() const;
  Device device() const;
  size_t itemsize() const { return dtype_size(dtype()); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const;
  bool shares_storage_with(const Tensor& other) const;
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  const std::string& name() const;
  Tensor& set_name(std::string name);

  // ---- data ----
  // Pointer to the first element (storage + offset). T must match dtype().
  template <class T>
  T* data() const;
  void* raw_data() const;
  // Slow, any-dtype element access by multi-index (negative indices count from the end).
  double at(const std::vector<int64_t>& index) const;
  void set(const std::vector<int64_t>& index, double value) const;
  double item() const;  // the single element of a one-element tensor, as double
  // All elements in logical (row-major) order, converted to T.
  template <class T>
  std::vector<T> to_vector() const;

  // ---- autograd ----
  bool requires_grad() const;
  Tensor& set_requires_grad(bool flag = true);  // leaves only
  bool is_leaf() const;
  Tensor grad() const;          // undefined until backward reaches this leaf
  void set_grad(const Tensor& grad) const;
  void zero_grad() const;       // drops the gradient (like PyTorch's set_to_none)
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  Tensor detach() const;        // same data, no history, requires_grad false
  // Back-propagates from this tensor. Without `grad` the tensor must hold one element.
  void backward(const Tensor& grad = {}, bool retain_graph = false) const;

  // ---- views and conversions (defined in ops/view.cpp, differentiable) ----
  Tensor reshape(const Shape& shape) const;  // view when strides allow, else copy; one -1 allowed
  Tensor view(const Shape& shape) const;     // view only; throws if strides do not allow it
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;                          // transpose of a 2-D tensor
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;  // narrow + squeeze
  Tensor expand(const Shape& shape) const;   // broadcast size-1 dims (stride 0); -1 keeps a size
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor contiguous() const;                 // itself when already contiguous, else a copy
  Tensor clone() const;                      // always a copy
  Tensor to(DType dtype) const;              // itself when dtype matches, else converted copy

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// Readable printing: tensor([[1.0000, 2.0000], [3.0000, 4.0000]], shape=(2, 2), dtype=f32)
std::ostream& operator<<(std::ostream& os, const Tensor& t);
std::string to_string(const Tensor& t);

}  // namespace nf
