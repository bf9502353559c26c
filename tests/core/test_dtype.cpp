// dtype conversions: bf16 and f16 round to nearest even, handle overflow, subnormals, inf and NaN.
#include <cmath>
#include <limits>

#include "support/testing.h"

namespace nf {
namespace {

float next_up(float f) { return std::nextafter(f, std::numeric_limits<float>::infinity()); }

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::i64), 8u);
  EXPECT_EQ(dtype_size(DType::boolean), 1u);
  EXPECT_EQ(dtype_from_name("bf16"), DType::bf16);
  EXPECT_THROW_WITH(dtype_from_name("f8"), "unknown dtype", "f8");
}

TEST(DType, Bf16RoundsToNearestEven) {
  // bf16 keeps 8 mantissa bits: near 1.0 its step is 2^-7.
  const float step = 1.0f / 128.0f;
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(1.0f + step / 2), 0x3f80);            // tie -> even (down)
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * step / 2), 0x3f82);        // tie -> even (up)
  EXPECT_EQ(float_to_bf16_bits(next_up(1.0f + step / 2)), 0x3f81);   // above the tie -> up
  EXPECT_EQ(bf16_bits_to_float(float_to_bf16_bits(-2.5f)), -2.5f);
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::nanf("")))));
  EXPECT_EQ(float_to_bf16_bits(3.4e38f), 0x7f80);  // rounds past the largest bf16 -> inf
}

TEST(DType, F16RoundsToNearestEvenWithOverflowAndSubnormals) {
  EXPECT_EQ(float_to_f16_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_f16_bits(65504.0f), 0x7bff);                  // largest half
  EXPECT_EQ(float_to_f16_bits(65519.0f), 0x7bff);                  // below the halfway point
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7c00);                  // tie with odd mantissa -> inf
  EXPECT_EQ(float_to_f16_bits(1.0f + 1.0f / 2048), 0x3c00);        // tie -> even (down)
  EXPECT_EQ(float_to_f16_bits(1.0f + 3.0f / 2048), 0x3c02);        // tie -> even (up)
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);     // smallest subnormal
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);     // tie -> even (zero)
  EXPECT_EQ(float_to_f16_bits(std::ldexp(3.0f, -25)), 0x0002);     // tie -> even (2)
  EXPECT_EQ(float_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_f16_bits(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_TRUE(std::isnan(f16_bits_to_float(float_to_f16_bits(std::nanf("")))));
}

TEST(DType, F16RoundTripsEveryHalfValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const float f = f16_bits_to_float(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_f16_bits(f), bits) << std::hex << h;
  }
}

TEST(DType, Bf16RoundTripsEveryBf16Value) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const float f = bf16_bits_to_float(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bf16_bits(f), bits) << std::hex << h;
  }
}

TEST(DType, TensorConversionRoundsAndBackpropagates) {
  Tensor x = Tensor::of({1.0 + 1.0 / 256, 1.0 + 3.0 / 256, -7.0, 65520.0}, {4});
  EXPECT_EQ(x.to(DType::bf16).to_vector<double>(), (std::vector<double>{1.0, 1.0 + 4.0 / 256, -7.0, 65536.0}));
  EXPECT_EQ(x.to(DType::f16).at({3}), std::numeric_limits<double>::infinity());
  EXPECT_EQ(x.to(DType::i32).at({2}), -7.0);
  EXPECT_TRUE(x.to(DType::f32).shares_storage_with(x));  // same dtype: no copy

  Tensor leaf = testing::random_leaf({3}, 1);
  Tensor y = leaf.to(DType::f32).to(DType::f64);
  sum(y * y).backward();
  EXPECT_TENSOR_CLOSE(leaf.grad(), leaf.detach().to(DType::f32).to(DType::f64) * 2.0, 1e-12, 0);
}

}  // namespace
}  // namespace nf
