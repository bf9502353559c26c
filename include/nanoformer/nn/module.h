#pragma once
// Module: a node of a model tree that owns named parameters, buffers and child modules, so that
// dotted names equal what PyTorch's state_dict() gives for the same structure
// ("layers.0.attention.wq.weight").
//
// Design (see docs/internals.md, "Modules"): as in PyTorch's C++ frontend, a module registers
// its tensors and children by name in its constructor and keeps typed handles to them in members;
// the registry is what named_parameters(), state_dict() and load_state_dict() walk. A Tensor is a
// shared handle, so the member and the registry see the same parameter, and loading copies values
// into it in place (optimizers and members stay valid). Unlike candle's VarBuilder, where a model
// is built by asking a weight source for each tensor by name, parameters here are owned, mutable
// and trainable; loading a checkpoint of another naming is a name map over state_dict() instead.
// forward() is not virtual here because its signature differs by kind; modules with one tensor in
// and one out derive from UnaryModule, so a block can hold "a norm" or "an MLP" of any kind.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nanoformer/core/generator.h"
#include "nanoformer/core/quantized_tensor.h"
#include "nanoformer/core/tensor.h"

namespace nf::nn {

using NamedTensor = std::pair<std::string, Tensor>;
using StateDict = std::map<std::string, Tensor>;
using NamedQuantized = std::pair<std::string, QuantizedTensor>;

// How load_state_dict fills a tensor. copy: its values are copied into the tensor's own storage.
// adopt: the tensor takes the state tensor's storage instead (its handle, members and optimizers
// stay valid; its old storage is freed and the allocator's cache emptied) when both have one
// dtype, shape and device, the state's is contiguous and no other tensor views the module's
// storage; otherwise it is copied. A loader's views of a mapped file (io/mapped_file.h, mapped
// copy-on-write) so become the parameters without a copy. The caller hands the state's tensors
// over: writing the module writes them.
enum class LoadMode { copy, adopt };

class Module {
 public:
  explicit Module(std::string type_name) : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The kind of module ("Linear"), for messages and printing.
  const std::string& type_name() const { return type_name_; }

  // Registration order, children after own tensors, names dotted from this module (no prefix).
  std::vector<NamedTensor> named_parameters() const;
  std::vector<Tensor> parameters() const;
  std::vector<NamedTensor> named_buffers() const;  // persistent and not
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  // This module (name "") and every descendant, depth first.
  std::vector<std::pair<std::string, const Module*>> named_modules() const;

  // Weights held block-quantised (Linear::set_quantized_weight ...), by dotted name, in registration
  // order. They are frozen and outside named_parameters() and state_dict().
  std::vector<NamedQuantized> named_quantized() const;
  // Calls fn(dotted name, module) on this module (name "") and every descendant, depth first.
  void apply(const std::function<void(const std::string&, Module&)>& fn, const std::string& prefix = "");

  // Every random generator of this module and its descendants (dropout masks), by dotted name of
  // its module ("layers.0.attention"), so that a training checkpoint can store their positions.
  std::vector<std::pair<std::string, Generator*>> named_generators();

  // Parameters and persistent buffers, by dotted name (the tensors themselves, not copies).
  StateDict state_dict() const;
  // Copies every tensor of `state` into this module's tensor of the same name (in place, dtype
  // converted), or adopts its storage (LoadMode above). Throws one nf::Error listing every missing,
  // unexpected and mis-shaped name; with strict = false missing and unexpected names are allowed,
  // mis-shaped ones never.
  void load_state_dict(const StateDict& state, bool strict = true, LoadMode mode = LoadMode::copy);

  // Training mode (dropout active) for this module and all descendants.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // requires_grad of every parameter (freeze with false).
  void requires_grad_(bool on);
  void zero_grad() const;
  // Number of parameter elements, quantised weights included; trainable_only counts those with requires_grad.
  int64_t num_parameters(bool trainable_only = false) const;

 protected:
  // Registers a parameter (a leaf; requires_grad set to `requires_grad`) and names it for errors.
  Tensor register_parameter(const std::string& name, Tensor value, bool requires_grad = true);
  // Registers a buffer; persistent buffers are part of state_dict().
  Tensor register_buffer(const std::string& name, Tensor value, bool persistent = true);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> child) {
    add_child(name, child);
    return child;
  }
  // Unregisters a child (e.g. a LoRA adapter once merged); throws when there is none of that name.
  void remove_module(const std::string& name);
  // Replaces a registered parameter or buffer's tensor (e.g. after LoRA merging changes shape); a
  // quantised parameter becomes dense again.
  void replace_tensor(const std::string& name, Tensor value);
  // Holds parameter `name` as `quantized` from now on: it leaves named_parameters() and state_dict()
  // for named_quantized(). Throws when `name` is no parameter or the shapes differ.
  void quantize_parameter(const std::string& name, QuantizedTensor quantized);
  // The generator this module draws from itself, or null (the default).
  virtual Generator* own_generator() { return nullptr; }

 private:
  struct Entry {
    std::string name;
    Tensor tensor;               // undefined while quantized is set
    QuantizedTensor quantized;
    bool is_parameter = true;
    bool persistent = true;
  };
  void add_child(const std::string& name, std::shared_ptr<Module> child);
  void check_new_name(const std::string& name) const;
  void collect(const std::string& prefix, bool parameters, bool buffers, bool persistent_only,
               std::vector<NamedTensor>& out) const;

  std::string type_name_;
  bool training_ = true;
  std::vector<Entry> tensors_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

// A module with one tensor in and one out: norms, activations, MLPs, positional encodings that
// add to x. Blocks hold these through make_* factories, never asking which kind they hold.
class UnaryModule : public Module {
 public:
  using Module::Module;
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }
};

// A list of children named "0", "1", ... (torch.nn.ModuleList).
template <class M>
class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  std::shared_ptr<M> push_back(std::shared_ptr<M> m) {
    items_.push_back(register_module(std::to_string(items_.size()), std::move(m)));
    return items_.back();
  }
  size_t size() const { return items_.size(); }
  const std::shared_ptr<M>& operator[](size_t i) const { return items_.at(i); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<std::shared_ptr<M>> items_;
};

// One line per module with its type and parameter shapes, indented by depth (like print(model)).
std::string describe(const Module& m);

// Saves the state dict (parameters and persistent buffers) as safetensors, atomically, in
// registration order; loads one into a module (names must match, see load_state_dict).
void save_module(const Module& m, const std::string& path);
void load_module(Module& m, const std::string& path, bool strict = true);

}  // namespace nf::nn
