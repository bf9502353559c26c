// Every positional scheme against PyTorch (tools/golden/fixtures_positional.py): the module is
// built from the case's options, given PyTorch's parameters, run on PyTorch's inputs; its output
// and the gradients of its inputs and parameters are compared with PyTorch's.
//
// Tolerances |ours - torch| <= atol + rtol |torch|: f32 1e-6 + 1e-5 (a few ulps per rotation or
// 5-term dot product), f64 1e-12 + 1e-10, as tests/ops/test_golden.cpp argues.
#include <map>

#include "support/golden.h"
#include "support/testing.h"

namespace nf::nn {
namespace {

using testing::Golden;
using json = nlohmann::json;

constexpr double kAtolF32 = 1e-6, kRtolF32 = 1e-5;

void expect_close(const Tensor& actual, const Tensor& expected) {
  if (expected.dtype() == DType::f64) {
    EXPECT_TENSOR_CLOSE(actual, expected, 1e-12, 1e-10);
  } else {
    EXPECT_TENSOR_CLOSE(actual, expected, kAtolF32, kRtolF32);
  }
}

// Runs fn over every case of `fixture` whose name starts with `prefix`; fails if none did.
template <class Fn>
void for_each_case(const Golden& golden, const std::string& prefix, Fn fn) {
  int checked = 0;
  for (const auto& [name, params] : golden.cases().items()) {
    if (name.rfind(prefix, 0) != 0) continue;
    SCOPED_TRACE(golden.name() + " case " + name);
    try {
      fn(name, params);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw: " << e.what();
    }
    ++checked;
  }
  EXPECT_GT(checked, 0) << golden.name() << ": no case starts with " << prefix;
}

// Forward output vs "out", then backward with "grad_out" and each leaf's gradient vs "grad_<role>".
void check_output_and_grads(const Golden& golden, const std::string& name, const Tensor& out,
                            const std::map<std::string, Tensor>& leaves) {
  expect_close(out, golden.get(name, "out"));
  out.backward(golden.get(name, "grad_out"));
  for (const auto& [role, leaf] : leaves) {
    SCOPED_TRACE("gradient of " + role);
    expect_close(leaf.grad(), golden.get(name, "grad_" + role));
  }
}

// Zero-width (1, H, T, 1) stand-ins for queries and keys where a bias reads only their shapes.
Tensor shape_only(int64_t heads, int64_t t) { return zeros({1, heads, t, 1}); }

TEST(PositionalGolden, RopeAllLayoutsScalingsOffsets) {
  const Golden golden("rope");
  for_each_case(golden, "", [&](const std::string& name, const json& p) {
    RotaryPosition rope({.head_dim = golden.get(name, "x").size(-1),
                         .max_len = p.at("max_len"),
                         .theta = p.at("theta"),
                         .layout = parse_rope_layout(p.at("layout")),
                         .scaling = parse_rope_scaling(p.at("scaling")),
                         .scale_factor = p.at("factor")});
    const Tensor x = golden.input(name, "x");
    const int64_t offset = p.at("offset");
    check_output_and_grads(golden, name, rope.rotate_queries(x, offset), {{"x", x}});
    // keys take the same rotation
    expect_close(rope.rotate_keys(x.detach(), offset), golden.get(name, "out"));
  });
}

TEST(PositionalGolden, Sinusoidal) {
  const Golden golden("absolute_position");
  for_each_case(golden, "sinusoidal", [&](const std::string& name, const json& p) {
    SinusoidalPosition pos(p.at("dim"), p.at("max_len"), p.at("scale_input"));
    const Tensor x = golden.input(name, "x");
    check_output_and_grads(golden, name, pos.forward(x, p.at("offset")), {{"x", x}});
  });
}

TEST(PositionalGolden, Learned) {
  const Golden golden("absolute_position");
  for_each_case(golden, "learned", [&](const std::string& name, const json& p) {
    LearnedPosition pos(p.at("max_len"), p.at("dim"));
    pos.load_state_dict({{"weight", golden.get(name, "weight")}});
    const Tensor x = golden.input(name, "x");
    check_output_and_grads(golden, name, pos.forward(x, p.at("offset")), {{"x", x}, {"weight", pos.weight}});
  });
}

TEST(PositionalGolden, AlibiSlopesAndBiasIncludingNonPowerOfTwoHeads) {
  const Golden golden("alibi");
  for_each_case(golden, "heads", [&](const std::string& name, const json& p) {
    const int64_t H = p.at("heads"), Tq = p.at("tq"), Tk = p.at("tk");
    AlibiBias alibi(H);
    // BLOOM computes its slopes as f32 powers of an f32 base: a few ulps from the exact 2^(-8h/p)
    EXPECT_TENSOR_CLOSE(alibi.slopes, golden.get(name, "slopes"), 0.0, 1e-6);
    const Tensor bias = alibi.score_bias(shape_only(H, Tq), shape_only(H, Tk), p.at("q_offset"), p.at("k_offset"));
    expect_close(bias, golden.get(name, "out"));
    if (p.at("q_offset") == 0 && Tq == Tk) {
      // BLOOM's m_h j and our -m_h |i - j| give the same causal attention weights
      const Tensor causal = triu(full({Tq, Tk}, -1e9), 1);
      const Tensor bloom = golden.get(name, "bloom").reshape({1, H, 1, Tk});
      EXPECT_TENSOR_CLOSE(softmax(bias + causal, -1), softmax(bloom + causal, -1), 1e-7, 1e-5);
    }
  });
}

TEST(PositionalGolden, T5BucketsOverADistanceSweep) {
  const Golden golden("t5_bias");
  for_each_case(golden, "buckets", [&](const std::string& name, const json& p) {
    const std::vector<int32_t> relative = golden.get(name, "relative").to_vector<int32_t>();
    const std::vector<int32_t> want = golden.get(name, "buckets").to_vector<int32_t>();
    for (size_t i = 0; i < relative.size(); ++i) {
      ASSERT_EQ(t5_relative_position_bucket(relative[i], p.at("bidirectional"), p.at("num_buckets"), p.at("max_distance")),
                want[i])
          << "relative position " << relative[i];
    }
  });
}

TEST(PositionalGolden, T5BiasAndWeightGradient) {
  const Golden golden("t5_bias");
  for_each_case(golden, "bias", [&](const std::string& name, const json& p) {
    const int64_t H = p.at("heads");
    T5RelativeBias t5(H, p.at("num_buckets"), p.at("max_distance"), p.at("bidirectional"));
    t5.load_state_dict({{"relative_attention_bias.weight", golden.get(name, "weight")}});
    const Tensor bias = t5.score_bias(shape_only(H, p.at("tq")), shape_only(H, p.at("tk")), p.at("q_offset"), p.at("k_offset"));
    check_output_and_grads(golden, name, bias, {{"weight", t5.relative_attention_bias->weight}});
  });
}

TEST(PositionalGolden, TransformerXLScoreEqualsTheFullFormula) {
  const Golden golden("xl_relative");
  for_each_case(golden, "", [&](const std::string& name, const json& p) {
    const int64_t H = p.at("heads"), D = p.at("head_dim");
    XLRelativePosition xl(p.at("dim"), H, D);
    xl.load_state_dict({{"u", golden.get(name, "u")}, {"v", golden.get(name, "v")}, {"pos_proj.weight", golden.get(name, "w_r")}});
    const Tensor q = golden.input(name, "q"), k = golden.input(name, "k");
    const int64_t B = k.size(0), Hkv = k.size(1), Tk = k.size(2);
    const Tensor keys = k.unsqueeze(2).expand({B, Hkv, H / Hkv, Tk, D}).reshape({B, H, Tk, D});
    // attention's part: scale q k^T; the scheme's part: scale (position + u + v terms)
    const Tensor score = matmul(q, keys.transpose(2, 3)) * xl.score_scale() + xl.score_bias(q, k, p.at("q_offset"), p.at("k_offset"));
    check_output_and_grads(golden, name, score,
                           {{"q", q}, {"k", k}, {"u", xl.u}, {"v", xl.v}, {"w_r", xl.pos_proj->weight}});
  });
}

}  // namespace
}  // namespace nf::nn
