// Printing in PyTorch's style: nested brackets, fixed precision, long dims summarised with "...".
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "nanoformer/core/tensor.h"

namespace nf {
namespace {

constexpr int64_t kEdgeItems = 3;      // elements shown at each end of a summarised dim
constexpr int64_t kSummariseAbove = 1000;

std::string format_element(double v, DType dtype) {
  char buf[64];
  if (dtype == DType::boolean) return v != 0.0 ? "true" : "false";
  if (!is_floating(dtype)) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  } else if (std::isnan(v) || std::isinf(v)) {
    return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  } else if (v != 0.0 && (std::fabs(v) >= 1e6 || std::fabs(v) < 1e-4)) {
    std::snprintf(buf, sizeof buf, "%.4e", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.4f", v);
  }
  return buf;
}

void print_dim(std::ostream& os, const Tensor& t, std::vector<int64_t>& index, size_t d, bool summarise) {
  if (d == index.size()) {
    os << format_element(t.at(index), t.dtype());
    return;
  }
  const int64_t n = t.shape()[d];
  os << "[";
  for (int64_t i = 0; i < n; ++i) {
    if (summarise && n > 2 * kEdgeItems && i == kEdgeItems) {
      os << "..., ";
      i = n - kEdgeItems;
    }
    index[d] = i;
    print_dim(os, t, index, d + 1, summarise);
    if (i + 1 < n) os << (d + 1 == index.size() ? ", " : ",\n" + std::string(d + 8, ' '));
  }
  os << "]";
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "tensor(undefined)";
  os << "tensor(";
  std::vector<int64_t> index(t.shape().size(), 0);
  if (t.numel() == 0) {
    os << "[]";
  } else {
    print_dim(os, t, index, 0, t.numel() > kSummariseAbove);
  }
  os << ", shape=" << shape_str(t.shape()) << ", dtype=" << dtype_name(t.dtype());
  if (t.requires_grad()) os << ", requires_grad=true";
  return os << ")";
}

std::string to_string(const Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

}  // namespace nf
