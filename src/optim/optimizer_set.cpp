// OptimizerSet: the config, its JSON, the optimizers a config builds, and their named state.
#include "nanoformer/optim/optimizer_set.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "models/config/config_keys.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/factory.h"
#include "nanoformer/optim/adam.h"
#include "nanoformer/optim/muon.h"
#include "nanoformer/optim/param_groups.h"
#include "nanoformer/optim/sgd.h"
#include "util/json_input.h"

namespace nf::optim {
namespace {

using models::config_keys::check;

constexpr const char* kNames[] = {"sgd", "adam", "adamw", "muon", "nanochat"};

// Every key of the config, once: parsing and writing both walk this list.
template <class Visitor>
void visit_keys(Visitor& v, OptimizerConfig& c) {
  v.value("name", c.name);
  v.value("lr", c.lr);
  v.value("weight_decay", c.weight_decay);
  v.value("beta1", c.beta1);
  v.value("beta2", c.beta2);
  v.value("eps", c.eps);
  v.value("momentum", c.momentum);
  v.value("nesterov", c.nesterov);
  v.value("embedding_lr", c.embedding_lr);
  v.value("unembedding_lr", c.unembedding_lr);
  v.value("matrix_lr", c.matrix_lr);
  v.value("vector_lr", c.vector_lr);
  v.value("muon_momentum", c.muon_momentum);
  v.value("muon_nesterov", c.muon_nesterov);
}

bool is_rate(double x) { return x >= 0 && std::isfinite(x); }
bool is_beta(double x) { return x >= 0 && x < 1; }

std::string known_names() {
  std::string all;
  for (const char* n : kNames) all += (all.empty() ? "" : ", ") + std::string(n);
  return all;
}

// Adds an optimizer over `groups` unless there are none.
template <class Rule, class Options>
void add_optimizer(std::vector<std::unique_ptr<Optimizer>>& optimizers, std::vector<ParamGroup> groups,
                   const Options& options) {
  if (!groups.empty()) optimizers.push_back(std::make_unique<Rule>(std::move(groups), options));
}

void append_list(std::ostringstream& os, const char* what, const std::vector<std::string>& names) {
  if (names.empty()) return;
  os << "; " << what << " (" << names.size() << "):";
  for (const auto& n : names) os << " " << n;
}

}  // namespace

void validate_optimizer_config(const OptimizerConfig& c, const std::string& source) {
  const bool known = std::find(std::begin(kNames), std::end(kNames), c.name) != std::end(kNames);
  check(known, source, "name", "\"" + c.name + "\"", ("expected one of " + known_names()).c_str());
  for (const auto& [key, value] : {std::pair<const char*, double>{"lr", c.lr}, {"weight_decay", c.weight_decay},
                                   {"eps", c.eps}, {"momentum", c.momentum}, {"embedding_lr", c.embedding_lr},
                                   {"unembedding_lr", c.unembedding_lr}, {"matrix_lr", c.matrix_lr},
                                   {"vector_lr", c.vector_lr}})
    check(is_rate(value), source, key, value, "must be finite and >= 0");
  check(is_beta(c.beta1), source, "beta1", c.beta1, "must be in [0, 1)");
  check(is_beta(c.beta2), source, "beta2", c.beta2, "must be in [0, 1)");
  check(is_beta(c.muon_momentum), source, "muon_momentum", c.muon_momentum, "must be in [0, 1)");
  check(!(c.name == "sgd" && c.nesterov && c.momentum == 0), source, "nesterov", "true", "needs momentum > 0");
}

std::string optimizer_config_to_json(const OptimizerConfig& config) {
  OptimizerConfig c = config;
  models::config_keys::ObjectWriter w;
  visit_keys(w, c);
  return w.object.dump(2);
}

OptimizerConfig optimizer_config_from_json(const std::string& text, const std::string& source) {
  const nlohmann::json root = util::parse_json(text, source + ": ");
  OptimizerConfig c;
  models::config_keys::ObjectReader r(root, source);
  visit_keys(r, c);
  r.finish();
  validate_optimizer_config(c, source);
  return c;
}

double default_weight_decay(const std::string& optimizer_name) {
  return optimizer_name == "muon" || optimizer_name == "nanochat" ? 0.0 : 0.1;
}

OptimizerSet::OptimizerSet(const OptimizerConfig& config, nn::Module& model) : config_(config) {
  validate_optimizer_config(config_);
  for (auto& [name, p] : model.named_parameters()) names_.emplace(p.impl(), name);
  const OptimizerConfig& c = config_;
  const AdamOptions adam{.beta1 = c.beta1, .beta2 = c.beta2, .eps = c.eps};
  const MuonOptions muon{.momentum = c.muon_momentum, .nesterov = c.muon_nesterov};
  if (c.name == "sgd") {
    add_optimizer<SGD>(optimizers_, default_param_groups(model, c.lr, c.weight_decay),
                        SGDOptions{.momentum = c.momentum, .dampening = 0.0, .nesterov = c.nesterov});
  } else if (c.name == "adam") {
    add_optimizer<Adam>(optimizers_, default_param_groups(model, c.lr, c.weight_decay), adam);
  } else if (c.name == "adamw") {
    add_optimizer<AdamW>(optimizers_, default_param_groups(model, c.lr, c.weight_decay), adam);
  } else {
    HybridParamGroups groups =
        c.name == "muon" ? muon_param_groups(model, c.lr, c.matrix_lr, c.weight_decay)
                         : nanochat_param_groups(model, {.embedding_lr = c.embedding_lr, .unembedding_lr = c.unembedding_lr,
                                                         .matrix_lr = c.matrix_lr, .vector_lr = c.vector_lr,
                                                         .weight_decay = c.weight_decay});
    const AdamOptions nanochat_adam{.beta1 = 0.8, .beta2 = 0.95, .eps = 1e-10};
    add_optimizer<AdamW>(optimizers_, std::move(groups.adamw), c.name == "muon" ? adam : nanochat_adam);
    add_optimizer<Muon>(optimizers_, std::move(groups.muon), muon);
  }
  NF_CHECK(!optimizers_.empty(), "optimizer ", c.name, ": the model has no trainable parameters");
}

void OptimizerSet::step() {
  for (auto& o : optimizers_) o->step();
}

void OptimizerSet::zero_grad() {
  for (auto& o : optimizers_) o->zero_grad();
}

void OptimizerSet::set_lr_factor(double factor) {
  for (auto& o : optimizers_) o->set_lr_factor(factor);
}

std::vector<Tensor> OptimizerSet::parameters() const {
  std::vector<Tensor> params;
  for (const auto& o : optimizers_)
    for (const ParamGroup& g : o->groups()) params.insert(params.end(), g.params.begin(), g.params.end());
  return params;
}

std::string OptimizerSet::describe() const {
  std::ostringstream os;
  for (const auto& o : optimizers_)
    for (size_t g = 0; g < o->groups().size(); ++g) {
      const ParamGroup& group = o->groups()[g];
      int64_t values = 0;
      for (const Tensor& p : group.params) values += p.numel();
      os << o->kind() << " " << o->group_label(g) << ": " << group.params.size() << " tensors, " << values
         << " values, lr " << group.lr << ", weight_decay " << group.weight_decay << "\n";
    }
  return os.str();
}

std::string OptimizerSet::param_name(const Tensor& p) const {
  const auto it = names_.find(p.impl());
  NF_CHECK(it != names_.end(), "OptimizerSet: a parameter the model does not name");
  return it->second;
}

nn::StateDict OptimizerSet::state_dict() const { return state_dict({}); }

nn::StateDict OptimizerSet::state_dict(const SlotGather& gather) const {
  nn::StateDict out;
  for (const auto& o : optimizers_) {
    out[o->kind() + ".steps"] = Tensor::scalar(static_cast<double>(o->steps()), DType::i64);
    const std::vector<std::string> slots = o->slot_names();
    for (size_t g = 0; g < o->groups().size(); ++g)
      for (size_t i = 0; i < o->groups()[g].params.size(); ++i) {
        const Tensor& p = o->groups()[g].params[i];
        const std::string prefix = o->kind() + "." + o->group_label(g) + "." + param_name(p) + ".";
        const ParamState& state = o->param_state(g, i);
        out[prefix + "step"] = Tensor::scalar(static_cast<double>(state.step), DType::i64);
        for (size_t s = 0; s < slots.size(); ++s) {
          const bool held = s < state.slots.size() && state.slots[s].defined();
          if (gather) {
            if (Tensor value = gather(*o, g, i, held ? state.slots[s] : Tensor()); value.defined())
              out[prefix + slots[s]] = value;
          } else {
            out[prefix + slots[s]] = held ? state.slots[s] : zeros(p.shape());  // never used yet = zeros
          }
        }
      }
  }
  return out;
}

void OptimizerSet::load_state_dict(const nn::StateDict& state) {
  const nn::StateDict expected = state_dict();
  std::vector<std::string> missing, unexpected, misshaped, mistyped, negative;
  for (const auto& [name, t] : expected) {
    auto it = state.find(name);
    if (it == state.end()) {
      missing.push_back(name);
    } else if (it->second.dtype() != t.dtype()) {
      mistyped.push_back(name + " (" + dtype_name(it->second.dtype()) + ", expected " + dtype_name(t.dtype()) + ")");
    } else if (it->second.shape() != t.shape()) {
      misshaped.push_back(name + " (expected " + shape_str(t.shape()) + ", got " + shape_str(it->second.shape()) + ")");
    } else if (t.dtype() == DType::i64 && it->second.item() < 0) {
      negative.push_back(name + " (" + std::to_string(static_cast<int64_t>(it->second.item())) + ")");
    }
  }
  for (const auto& [name, t] : state)
    if (!expected.count(name)) unexpected.push_back(name);
  if (!missing.empty() || !unexpected.empty() || !misshaped.empty() || !mistyped.empty() || !negative.empty()) {
    std::ostringstream os;
    os << "optimizer state: does not match the optimizers of '" << config_.name << "'";
    append_list(os, "missing", missing);
    append_list(os, "unexpected", unexpected);
    append_list(os, "mis-shaped", misshaped);
    append_list(os, "wrong dtype", mistyped);
    append_list(os, "negative step count", negative);
    throw Error(os.str());
  }
  for (auto& o : optimizers_) {
    o->set_steps(static_cast<int64_t>(state.at(o->kind() + ".steps").item()));
    const std::vector<std::string> slots = o->slot_names();
    for (size_t g = 0; g < o->groups().size(); ++g)
      for (size_t i = 0; i < o->groups()[g].params.size(); ++i) {
        const std::string prefix = o->kind() + "." + o->group_label(g) + "." + param_name(o->groups()[g].params[i]) + ".";
        ParamState restored{.step = static_cast<int64_t>(state.at(prefix + "step").item()), .slots = {}};
        for (const std::string& slot : slots) restored.slots.push_back(state.at(prefix + slot));
        o->load_param_state(g, i, restored);
      }
  }
}

}  // namespace nf::optim
