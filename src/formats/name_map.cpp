// Name maps: external state dicts <-> ours, with one error listing every problem.
#include "formats/name_map.h"

#include <cstring>
#include <sstream>

#include "nanoformer/core/error.h"

namespace nf::formats {
namespace {

bool is_float(DType t) { return t == DType::f32 || t == DType::f64 || t == DType::bf16 || t == DType::f16; }

std::string shape_text(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ")";
  return os.str();
}

void append_list(std::ostringstream& os, const char* what, const std::vector<std::string>& names) {
  if (names.empty()) return;
  os << "; " << what << " (" << names.size() << "):";
  for (const auto& n : names) os << " " << n;
}

// Rows [0, n) of the contiguous tensors `parts`, stacked: (sum n_i, ...) f32.
Tensor concat_rows(const std::vector<Tensor>& parts) {
  Shape shape = parts.front().shape();
  shape[0] = 0;
  for (const Tensor& p : parts) shape[0] += p.size(0);
  Tensor out = Tensor::empty(shape);
  float* dst = out.data<float>();
  for (const Tensor& p : parts) {
    const Tensor c = p.to(DType::f32).contiguous();
    std::memcpy(dst, c.data<float>(), static_cast<size_t>(c.numel()) * sizeof(float));
    dst += c.numel();
  }
  return out;
}

}  // namespace

void NameMapProblems::add_misshaped(const std::string& name, const Shape& actual, const Shape& expected) {
  misshaped.push_back(name + " " + shape_text(actual) + ", expected " + shape_text(expected));
}

void NameMapProblems::fail(const std::string& source, const char* mistyped_label) const {
  std::ostringstream os;
  os << source << ": the tensors do not match the model's name map";
  append_list(os, "missing", missing);
  append_list(os, "unexpected", unexpected);
  append_list(os, "mis-shaped", misshaped);
  append_list(os, mistyped_label, mistyped);
  throw Error(os.str());
}

nn::StateDict import_tensors(const NameMap& map, const std::map<std::string, Tensor>& external,
                             const std::set<std::string>& ignored, const std::string& source) {
  NameMapProblems problems;
  std::set<std::string> used;
  nn::StateDict state;
  for (const MappedTensor& m : map) {
    auto it = external.find(m.external);
    if (it == external.end()) {
      problems.missing.push_back(m.external);
      continue;
    }
    used.insert(m.external);
    const Tensor& t = it->second;
    if (!is_float(t.dtype())) {
      problems.mistyped.push_back(m.external + " (" + dtype_name(t.dtype()) + ", expected a float type)");
      continue;
    }
    if (t.shape() != m.external_shape) {
      problems.add_misshaped(m.external, t.shape(), m.external_shape);
      continue;
    }
    Tensor ours = m.transposed ? t.t() : t;  // (sum of parts, ...)
    if (!m.ours_shape.empty()) ours = ours.contiguous().reshape(m.ours_shape);
    const int64_t rows = ours.size(0) / static_cast<int64_t>(m.ours.size());
    for (size_t i = 0; i < m.ours.size(); ++i)
      state[m.ours[i]] = ours.narrow(0, static_cast<int64_t>(i) * rows, rows).to(DType::f32).contiguous();
  }
  for (const auto& [name, t] : external)
    if (!used.count(name) && !ignored.count(name)) problems.unexpected.push_back(name);
  if (!problems.empty()) problems.fail(source);
  return state;
}

std::vector<nn::NamedTensor> export_tensors(const NameMap& map, const nn::StateDict& ours) {
  std::vector<nn::NamedTensor> out;
  for (const MappedTensor& m : map) {
    std::vector<Tensor> parts;
    for (const auto& name : m.ours) {
      auto it = ours.find(name);
      NF_CHECK(it != ours.end(), "export: the model has no tensor ", name, " (for ", m.external, ")");
      parts.push_back(it->second.detach());
    }
    Tensor t = concat_rows(parts);
    if (m.transposed) t = t.t().contiguous();
    if (!m.ours_shape.empty()) t = t.reshape(m.external_shape);
    NF_CHECK(t.shape() == m.external_shape, "export: ", m.external, " would be ", shape_text(t.shape()),
             ", the map expects ", shape_text(m.external_shape));
    out.emplace_back(m.external, t);
  }
  return out;
}

}  // namespace nf::formats
