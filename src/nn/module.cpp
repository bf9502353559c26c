// Module registry: names, traversal, state dicts, modes. See nn/module.h.
#include "nanoformer/nn/module.h"

#include <algorithm>
#include <sstream>

#include "nanoformer/core/error.h"
#include "nanoformer/io/safetensors.h"
#include "nanoformer/ops/view.h"

namespace nf::nn {

void Module::check_new_name(const std::string& name) const {
  NF_CHECK(!name.empty() && name.find('.') == std::string::npos, type_name_, ": invalid member name '", name,
           "' (non-empty, no dots)");
  const bool taken = std::any_of(tensors_.begin(), tensors_.end(), [&](const Entry& e) { return e.name == name; }) ||
                     std::any_of(children_.begin(), children_.end(), [&](const auto& c) { return c.first == name; });
  NF_CHECK(!taken, type_name_, ": member '", name, "' registered twice");
}

Tensor Module::register_parameter(const std::string& name, Tensor value, bool requires_grad) {
  check_new_name(name);
  NF_CHECK(value.defined(), type_name_, ": parameter '", name, "' is undefined");
  Tensor p = value.is_leaf() ? value : value.detach();
  p.set_requires_grad(requires_grad);
  p.set_name(name);
  tensors_.push_back({name, p, {}, true, true});
  return p;
}

Tensor Module::register_buffer(const std::string& name, Tensor value, bool persistent) {
  check_new_name(name);
  NF_CHECK(value.defined(), type_name_, ": buffer '", name, "' is undefined");
  Tensor b = value.detach();
  b.set_name(name);
  tensors_.push_back({name, b, {}, false, persistent});
  return b;
}

void Module::replace_tensor(const std::string& name, Tensor value) {
  for (Entry& e : tensors_) {
    if (e.name != name) continue;
    if (e.is_parameter) value.set_requires_grad(e.quantized.defined() ? false : e.tensor.requires_grad());
    value.set_name(name);
    e.tensor = value;
    e.quantized = {};
    return;
  }
  NF_FAIL(type_name_, ": no parameter or buffer named '", name, "' to replace");
}

void Module::quantize_parameter(const std::string& name, QuantizedTensor quantized) {
  for (Entry& e : tensors_) {
    if (e.name != name || !e.is_parameter) continue;
    const Shape shape = e.tensor.defined() ? e.tensor.shape() : Shape{e.quantized.rows(), e.quantized.cols()};
    NF_CHECK(quantized.defined() && shape == Shape({quantized.rows(), quantized.cols()}), type_name_, ": parameter '",
             name, "' is ", shape_str(shape), ", the quantised weight (", quantized.rows(), ", ", quantized.cols(), ")");
    e.tensor = Tensor();
    e.quantized = std::move(quantized);
    return;
  }
  NF_FAIL(type_name_, ": no parameter named '", name, "' to quantise");
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> child) {
  check_new_name(name);
  NF_CHECK(child != nullptr, type_name_, ": child module '", name, "' is null");
  child->train(training_);
  children_.emplace_back(name, std::move(child));
}

void Module::remove_module(const std::string& name) {
  auto it = std::find_if(children_.begin(), children_.end(), [&](const auto& c) { return c.first == name; });
  NF_CHECK(it != children_.end(), type_name_, ": no child module named '", name, "' to remove");
  children_.erase(it);
}

void Module::collect(const std::string& prefix, bool parameters, bool buffers, bool persistent_only,
                     std::vector<NamedTensor>& out) const {
  for (const Entry& e : tensors_) {
    if (e.quantized.defined()) continue;  // named_quantized()
    if (e.is_parameter ? !parameters : (!buffers || (persistent_only && !e.persistent))) continue;
    out.emplace_back(prefix + e.name, e.tensor);
  }
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", parameters, buffers, persistent_only, out);
}

std::vector<NamedTensor> Module::named_parameters() const {
  std::vector<NamedTensor> out;
  collect("", true, false, false, out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters()) out.push_back(t);
  return out;
}

std::vector<NamedTensor> Module::named_buffers() const {
  std::vector<NamedTensor> out;
  collect("", false, true, false, out);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const { return children_; }

std::vector<NamedQuantized> Module::named_quantized() const {
  std::vector<NamedQuantized> out;
  for (const Entry& e : tensors_)
    if (e.quantized.defined()) out.emplace_back(e.name, e.quantized);
  for (const auto& [name, child] : children_)
    for (auto& [sub, q] : child->named_quantized()) out.emplace_back(name + "." + sub, q);
  return out;
}

void Module::apply(const std::function<void(const std::string&, Module&)>& fn, const std::string& prefix) {
  fn(prefix, *this);
  for (auto& [name, child] : children_) child->apply(fn, prefix.empty() ? name : prefix + "." + name);
}

std::vector<std::pair<std::string, Generator*>> Module::named_generators() {
  std::vector<std::pair<std::string, Generator*>> out;
  if (Generator* own = own_generator()) out.emplace_back("", own);
  for (auto& [name, child] : children_)
    for (auto& [sub, gen] : child->named_generators()) out.emplace_back(sub.empty() ? name : name + "." + sub, gen);
  return out;
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, const Module*>> out{{"", this}};
  for (const auto& [name, child] : children_)
    for (auto& [sub, m] : child->named_modules()) out.emplace_back(sub.empty() ? name : name + "." + sub, m);
  return out;
}

StateDict Module::state_dict() const {
  std::vector<NamedTensor> all;
  collect("", true, true, true, all);
  return StateDict(all.begin(), all.end());
}

namespace {
// dst takes src's storage (LoadMode::adopt) when nothing is lost by it; false when it must be copied.
// The impl is shared by the module's member, its registry and any optimizer, so all see the new data.
bool adopt_storage(const Tensor& dst, const Tensor& src) {
  if (src.dtype() != dst.dtype() || src.device() != dst.device() || !src.is_contiguous() || !dst.is_contiguous())
    return false;
  if (dst.storage() == src.storage()) return dst.offset() == src.offset();
  if (dst.storage().use_count() != 1) return false;  // a view of the old storage would stop seeing the parameter
  TensorImpl& d = *dst.impl();
  d.storage = src.storage();  // the old storage is freed here
  d.strides = src.strides();
  d.offset = src.offset();
  return true;
}
}  // namespace

void Module::load_state_dict(const StateDict& state, bool strict, LoadMode mode) {
  std::vector<NamedTensor> own;
  collect("", true, true, true, own);
  std::vector<std::string> missing, unexpected, misshaped;
  for (const auto& [name, t] : own) {
    auto it = state.find(name);
    if (it == state.end()) missing.push_back(name);
    else if (it->second.shape() != t.shape())
      misshaped.push_back(name + " (expected " + shape_str(t.shape()) + ", got " + shape_str(it->second.shape()) + ")");
  }
  for (const auto& entry : state)
    if (std::none_of(own.begin(), own.end(), [&](const NamedTensor& o) { return o.first == entry.first; }))
      unexpected.push_back(entry.first);
  if (!misshaped.empty() || (strict && (!missing.empty() || !unexpected.empty()))) {
    std::ostringstream os;
    os << "load_state_dict: " << type_name_ << " does not match the state dict";
    auto list = [&](const char* what, const std::vector<std::string>& names) {
      if (names.empty()) return;
      os << "; " << what << " (" << names.size() << "):";
      for (const auto& n : names) os << " " << n;
    };
    list("mis-shaped", misshaped);
    if (strict) list("missing", missing);
    if (strict) list("unexpected", unexpected);
    throw Error(os.str());
  }
  bool adopted = false;
  for (const auto& [name, t] : own) {
    auto it = state.find(name);
    if (it == state.end()) continue;
    if (mode == LoadMode::adopt && adopt_storage(t, it->second)) {
      adopted = true;
      continue;
    }
    copy_into(t, it->second);
  }
  // The freed storages went to the allocator's cache, which blocks of the weights' sizes would fill
  // (nothing allocates them again), leaving no room for the activations': back to the system.
  if (adopted) memory::empty_cache();
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::requires_grad_(bool on) {
  for (auto& [name, p] : named_parameters()) p.set_requires_grad(on);
}

void Module::zero_grad() const {
  for (auto& [name, p] : named_parameters()) p.zero_grad();
}

int64_t Module::num_parameters(bool trainable_only) const {
  int64_t n = 0;
  for (auto& [name, p] : named_parameters())
    if (!trainable_only || p.requires_grad()) n += p.numel();
  if (!trainable_only)
    for (auto& [name, q] : named_quantized()) n += q.rows() * q.cols();
  return n;
}

namespace {
void describe_into(const Module& m, const std::string& name, int depth, std::ostringstream& os) {
  os << std::string(2 * depth, ' ') << (name.empty() ? "" : "(" + name + "): ") << m.type_name();
  bool first = true;
  for (const auto& [pname, p] : m.named_parameters()) {
    if (pname.find('.') != std::string::npos) continue;  // only this module's own
    os << (first ? " [" : ", ") << pname << " " << shape_str(p.shape()) << (p.requires_grad() ? "" : " frozen");
    first = false;
  }
  for (const auto& [qname, q] : m.named_quantized()) {
    if (qname.find('.') != std::string::npos) continue;
    os << (first ? " [" : ", ") << qname << " (" << q.rows() << ", " << q.cols() << ") " << quant_type_name(q.type());
    first = false;
  }
  os << (first ? "" : "]") << "\n";
  for (const auto& [cname, child] : m.named_children()) describe_into(*child, cname, depth + 1, os);
}
}  // namespace

std::string describe(const Module& m) {
  std::ostringstream os;
  describe_into(m, "", 0, os);
  return os.str();
}

void save_module(const Module& m, const std::string& path) {
  // registration order (parameters, then persistent buffers), not the map's alphabetical one
  std::vector<NamedTensor> ordered = m.named_parameters();
  const StateDict state = m.state_dict();
  for (auto& buffer : m.named_buffers())
    if (state.count(buffer.first)) ordered.push_back(buffer);
  io::save_safetensors(path, ordered);
}

void load_module(Module& m, const std::string& path, bool strict) {
  std::map<std::string, Tensor> tensors = io::load_safetensors(path);
  try {
    m.load_state_dict(StateDict(tensors.begin(), tensors.end()), strict);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

}  // namespace nf::nn
