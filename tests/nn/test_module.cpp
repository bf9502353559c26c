// Module registry: dotted names as PyTorch's state_dict, load_state_dict's one-error report,
// train/eval propagation, freezing, parameter counts, safetensors round trip; Linear, Embedding
// and Dropout against their ops.
#include <cstdio>

#include "nanoformer/nn/linear.h"
#include "support/temp_dir.h"
#include "support/testing.h"

namespace nf::nn {
namespace {

// A two-level model shaped like a tiny transformer layer stack.
struct Layer : Module {
  std::shared_ptr<Linear> fc1, fc2;
  std::shared_ptr<Dropout> drop;
  Tensor scale;
  Layer() : Module("Layer") {
    fc1 = register_module("fc1", std::make_shared<Linear>(4, 8));
    fc2 = register_module("fc2", std::make_shared<Linear>(8, 4, false));
    drop = register_module("drop", std::make_shared<Dropout>(0.5));
    scale = register_buffer("scale", ones({4}));
    register_buffer("cache", zeros({2}), /*persistent=*/false);
  }
};

struct Net : Module {
  std::shared_ptr<Embedding> embed;
  std::shared_ptr<ModuleList<Layer>> layers;
  Net() : Module("Net") {
    embed = register_module("embed", std::make_shared<Embedding>(10, 4));
    layers = register_module("layers", std::make_shared<ModuleList<Layer>>());
    layers->push_back(std::make_shared<Layer>());
    layers->push_back(std::make_shared<Layer>());
  }
};

std::vector<std::string> names(const std::vector<NamedTensor>& v) {
  std::vector<std::string> out;
  for (auto& [n, t] : v) out.push_back(n);
  return out;
}

TEST(Module, DottedNamesInRegistrationOrder) {
  Net net;
  EXPECT_EQ(names(net.named_parameters()),
            (std::vector<std::string>{"embed.weight", "layers.0.fc1.weight", "layers.0.fc1.bias", "layers.0.fc2.weight",
                                      "layers.1.fc1.weight", "layers.1.fc1.bias", "layers.1.fc2.weight"}));
  StateDict sd = net.state_dict();
  EXPECT_EQ(sd.size(), 9u);  // 7 parameters + 2 persistent buffers, not the 2 non-persistent
  EXPECT_TRUE(sd.count("layers.1.scale"));
  EXPECT_FALSE(sd.count("layers.1.cache"));
  EXPECT_EQ(net.named_modules().size(), 11u);  // net, embed, layers, 2 x (layer, fc1, fc2, drop)
  EXPECT_EQ(net.num_parameters(), 10 * 4 + 2 * (8 * 4 + 8 + 4 * 8));
  EXPECT_TRUE(sd.at("embed.weight").shares_storage_with(net.embed->weight));
}

TEST(Module, LoadStateDictCopiesInPlace) {
  Net a, b;
  b.load_state_dict(a.state_dict());
  for (auto& [name, t] : b.state_dict()) EXPECT_TENSOR_CLOSE(t, a.state_dict().at(name), 0, 0);
  Tensor before = b.layers->operator[](0)->fc1->weight;
  b.load_state_dict(a.state_dict());
  EXPECT_EQ(before.impl(), b.layers->operator[](0)->fc1->weight.impl());  // handles stay valid
  EXPECT_FALSE(b.layers->operator[](0)->fc1->weight.shares_storage_with(a.layers->operator[](0)->fc1->weight));
}

// LoadMode::adopt: a tensor of the same dtype and shape, contiguous, becomes the parameter's storage
// (the handle stays, the old storage is freed); a mismatch or a parameter another tensor views is copied.
TEST(Module, LoadStateDictAdoptsStoragesInsteadOfCopying) {
  Net a, b;
  Tensor fc1 = b.layers->operator[](0)->fc1->weight;
  const Tensor old_view = b.layers->operator[](1)->fc1->weight.narrow(0, 0, 2);  // pins layer 1's storage
  StateDict sd = a.state_dict();
  sd["layers.0.fc2.weight"] = sd.at("layers.0.fc2.weight").t().contiguous().t();  // not contiguous
  sd["layers.0.fc1.bias"] = sd.at("layers.0.fc1.bias").to(DType::f64);            // another dtype
  const std::weak_ptr<Storage> old_storage = fc1.storage();
  const size_t before = memory::current_bytes();
  b.load_state_dict(sd, true, LoadMode::adopt);
  EXPECT_TRUE(old_storage.expired());  // freed, not merely left alone
  EXPECT_LT(memory::current_bytes(), before);
  EXPECT_EQ(memory::cached_bytes(), 0u);  // and not kept in the allocator's cache
  EXPECT_EQ(fc1.impl(), b.layers->operator[](0)->fc1->weight.impl());  // handles stay valid
  EXPECT_TRUE(fc1.shares_storage_with(sd.at("layers.0.fc1.weight")));
  EXPECT_TRUE(b.embed->weight.shares_storage_with(a.embed->weight));
  EXPECT_FALSE(b.layers->operator[](0)->fc2->weight.shares_storage_with(sd.at("layers.0.fc2.weight")));
  EXPECT_FALSE(b.layers->operator[](0)->fc1->bias.shares_storage_with(sd.at("layers.0.fc1.bias")));
  EXPECT_EQ(b.layers->operator[](0)->fc1->bias.dtype(), DType::f32);
  EXPECT_FALSE(b.layers->operator[](1)->fc1->weight.shares_storage_with(a.layers->operator[](1)->fc1->weight));
  EXPECT_TRUE(b.layers->operator[](1)->fc1->weight.shares_storage_with(old_view));
  for (auto& [name, t] : b.state_dict()) EXPECT_TENSOR_CLOSE(t, a.state_dict().at(name), 0, 0) << name;
  b.layers->operator[](0)->fc1->weight.set({0, 0}, 42.0);  // writes the state's tensor: it was handed over
  EXPECT_EQ(a.layers->operator[](0)->fc1->weight.at({0, 0}), 42.0);
}

TEST(Module, LoadStateDictListsEveryProblemInOneError) {
  Net net;
  StateDict sd = net.state_dict();
  sd.erase("layers.0.fc1.bias");
  sd.erase("embed.weight");
  sd["layers.9.fc1.weight"] = zeros({8, 4});
  sd["layers.1.fc2.weight"] = zeros({4, 9});
  EXPECT_THROW_WITH(net.load_state_dict(sd), "Net", "missing (2): embed.weight layers.0.fc1.bias",
                    "unexpected (1): layers.9.fc1.weight", "mis-shaped (1): layers.1.fc2.weight (expected (4, 8), got (4, 9))");
  // non-strict: missing and unexpected are fine, a wrong shape never is
  EXPECT_THROW_WITH(net.load_state_dict(sd, false), "mis-shaped", "layers.1.fc2.weight");
  sd["layers.1.fc2.weight"] = zeros({4, 8});
  net.load_state_dict(sd, false);
  EXPECT_EQ(net.layers->operator[](1)->fc2->weight.at({0, 0}), 0.0);
}

TEST(Module, TrainEvalReachesEveryDescendant) {
  Net net;
  EXPECT_TRUE(net.layers->operator[](1)->drop->is_training());
  net.eval();
  for (auto& [name, m] : net.named_modules()) EXPECT_FALSE(m->is_training()) << name;
  Tensor x = randn({3, 4}, default_generator());
  EXPECT_TENSOR_CLOSE(net.layers->operator[](0)->drop->forward(x), x, 0, 0);
  net.train();
  for (auto& [name, m] : net.named_modules()) EXPECT_TRUE(m->is_training()) << name;
}

TEST(Module, FreezingStopsGradientsAndCounts) {
  Net net;
  net.embed->requires_grad_(false);
  EXPECT_EQ(net.num_parameters(true), net.num_parameters() - 40);
  Tensor ids = Tensor::of({1, 2, 3}, {3}, DType::i64);
  auto& layer = *(*net.layers)[0];
  Tensor y = layer.fc2->forward(layer.fc1->forward(net.embed->forward(ids)));
  sum(y).backward();
  EXPECT_FALSE(net.embed->weight.grad().defined());
  EXPECT_TRUE(layer.fc1->weight.grad().defined());
  net.zero_grad();
  EXPECT_FALSE(layer.fc1->weight.grad().defined());
}

TEST(Module, RejectsBadRegistration) {
  struct Bad : Module {
    Bad(const std::string& n1, const std::string& n2) : Module("Bad") {
      register_parameter(n1, zeros({1}));
      register_buffer(n2, zeros({1}));
    }
  };
  EXPECT_THROW_WITH(Bad("w", "w"), "Bad", "'w' registered twice");
  EXPECT_THROW_WITH(Bad("a.b", "c"), "Bad", "invalid member name 'a.b'");
}

TEST(Module, SafetensorsRoundTrip) {
  Net a, b;
  const testing::TempDir dir;
  const std::string path = dir.file("module.safetensors");
  save_module(a, path);
  load_module(b, path);
  for (auto& [name, t] : b.state_dict()) EXPECT_TENSOR_CLOSE(t, a.state_dict().at(name), 0, 0);
  Layer layer;
  EXPECT_THROW_WITH(load_module(layer, path), path, "unexpected");
}

TEST(Module, DescribeShowsTreeAndShapes) {
  Layer layer;
  layer.fc2->requires_grad_(false);
  const std::string d = describe(layer);
  EXPECT_NE(d.find("(fc1): Linear [weight (8, 4), bias (8)]"), std::string::npos) << d;
  EXPECT_NE(d.find("(fc2): Linear [weight (4, 8) frozen]"), std::string::npos) << d;
}

TEST(Linear, EqualsTheOpAndInitialisesLikeTorch) {
  Generator gen(3);
  Linear fc(16, 5, true, gen);
  for (double v : fc.weight.to_vector<double>()) EXPECT_LE(std::abs(v), 0.25);
  Tensor x = randn({2, 3, 16}, gen);
  EXPECT_TENSOR_CLOSE(fc.forward(x), linear(x, fc.weight, fc.bias), 0, 0);
  Linear nobias(16, 5, false, gen);
  EXPECT_FALSE(nobias.bias.defined());
  EXPECT_EQ(nobias.named_parameters().size(), 1u);
  EXPECT_THROW_WITH(fc.forward(randn({2, 15}, gen)), "Linear", "(2, 15)", "16");
  EXPECT_THROW_WITH(Linear(0, 3), "Linear", "positive");
}

TEST(Embedding, LooksUpRows) {
  Embedding emb(7, 3);
  Tensor ids = Tensor::of({6, 0}, {2}, DType::i64);
  EXPECT_TENSOR_CLOSE(emb(ids).select(0, 0), emb.weight.select(0, 6), 0, 0);
}

TEST(Dropout, RejectsBadProbabilityAndIsReproducible) {
  EXPECT_THROW_WITH(Dropout(1.0), "Dropout", "p must be in [0, 1)", "1");
  Dropout a(0.3, 7), b(0.3, 7);
  Tensor x = ones({100});
  EXPECT_TENSOR_CLOSE(a(x), b(x), 0, 0);
}

}  // namespace
}  // namespace nf::nn
