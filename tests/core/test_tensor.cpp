// Tensor handle: construction, metadata, element access, views sharing storage, printing,
// allocation counters, blocks for huge pages.
#include "support/testing.h"

namespace nf {
namespace {

TEST(Tensor, EmptyIsContiguousWithRowMajorStrides) {
  Tensor t = Tensor::empty({2, 3, 4});
  EXPECT_EQ(t.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(t.strides(), (Shape{12, 4, 1}));
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.dtype(), DType::f32);
  EXPECT_EQ(t.device(), Device::cpu());
}

TEST(Tensor, StorageIs64ByteAligned) {
  for (int64_t n : {1, 3, 17, 1000}) {
    Tensor t = Tensor::empty({n}, DType::bf16);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u) << n;
  }
}

TEST(Tensor, MemoryCountersTrackCurrentAndPeak) {
  const size_t before = memory::current_bytes();
  memory::reset_peak();
  {
    Tensor a = Tensor::empty({1024}, DType::f32);  // 4096 bytes
    EXPECT_EQ(memory::current_bytes(), before + 4096);
    Tensor b = Tensor::empty({256}, DType::f64);   // 2048 bytes
    EXPECT_EQ(memory::peak_bytes(), before + 6144);
  }
  EXPECT_EQ(memory::current_bytes(), before);
  EXPECT_EQ(memory::peak_bytes(), before + 6144);
}

TEST(Tensor, LargeFreedBlocksAreReusedForTheSameSize) {
  memory::empty_cache();
  void* first = nullptr;
  {
    Tensor a = Tensor::empty({1 << 20});  // 4 MiB
    first = a.raw_data();
  }
  EXPECT_EQ(memory::cached_bytes(), size_t{4} << 20);
  Tensor b = Tensor::empty({1 << 20});
  EXPECT_EQ(b.raw_data(), first);
  EXPECT_EQ(memory::cached_bytes(), 0u);
  Tensor c = Tensor::empty({(1 << 20) + 7});  // another size: not served from the cache
  EXPECT_NE(c.raw_data(), first);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c.raw_data()) % 64, 0u);
}

// Blocks for huge pages (a weight's panels): from 2 MiB on, 2 MiB-aligned, counted, and freed to
// the system rather than cached; below it, an ordinary block. (Whether the kernel backs them with
// huge pages is its THP setting's choice: not asserted.)
TEST(Tensor, HugePageBlocksAreAlignedCountedAndNotCached) {
  memory::empty_cache();
  const size_t before = memory::current_bytes(), bytes = (size_t{3} << 20) + 5;
  {
    const auto huge = Storage::huge_pages(bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(huge->data()) % (size_t{2} << 20), 0u);
    EXPECT_EQ(huge->nbytes(), bytes);
    EXPECT_EQ(memory::current_bytes(), before + bytes);
    static_cast<unsigned char*>(huge->data())[bytes - 1] = 1;  // the whole block is ours
  }
  EXPECT_EQ(memory::current_bytes(), before);
  EXPECT_EQ(memory::cached_bytes(), 0u);
  const auto small = Storage::huge_pages(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small->data()) % 64, 0u);
  EXPECT_TRUE(small->owns_memory());  // an ordinary block
  EXPECT_EQ(memory::current_bytes(), before + 1000);
}

// The cache's limit (the server keeps none): blocks past it go back to the system, and lowering it
// releases what it holds.
TEST(Tensor, FreedBlocksPastTheCacheLimitAreReleased) {
  memory::empty_cache();
  const size_t limit = memory::cache_limit();
  { Tensor a = Tensor::empty({1 << 20}); }  // 4 MiB, kept
  EXPECT_EQ(memory::cached_bytes(), size_t{4} << 20);
  memory::set_cache_limit(size_t{1} << 20);  // below what it holds: released
  EXPECT_EQ(memory::cached_bytes(), 0u);
  { Tensor b = Tensor::empty({1 << 20}); }  // past the limit: not kept
  EXPECT_EQ(memory::cached_bytes(), 0u);
  memory::set_cache_limit(limit);
  EXPECT_EQ(memory::cache_limit(), limit);
  { Tensor c = Tensor::empty({1 << 20}); }
  EXPECT_EQ(memory::cached_bytes(), size_t{4} << 20);
  memory::empty_cache();
}

TEST(Tensor, SmallFreedBlocksAreReusedWithinTheirSizeClass) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "small blocks are not cached under AddressSanitizer (so use after free is caught)";
#endif
  memory::empty_cache();
  void* first = nullptr;
  {
    Tensor a = Tensor::empty({100});  // 400 bytes: the class of 448 (256 + 3 steps of 64)
    first = a.raw_data();
  }
  EXPECT_EQ(memory::cached_bytes(), 448u);
  Tensor b = Tensor::empty({110});  // 440 bytes: the same class
  EXPECT_EQ(b.raw_data(), first);
  EXPECT_EQ(memory::cached_bytes(), 0u);
  {
    Tensor c = Tensor::empty({200});  // 800 bytes: the class of 896
  }
  EXPECT_EQ(memory::cached_bytes(), 896u);
  Tensor d = Tensor::empty({120});  // 480 bytes: the class of 512, not served by the 896 block
  EXPECT_EQ(memory::cached_bytes(), 896u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d.raw_data()) % 64, 0u);
  memory::empty_cache();
  EXPECT_EQ(memory::cached_bytes(), 0u);
}

TEST(Tensor, ElementAccessAnyDtype) {
  for (DType dt : {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::i64}) {
    Tensor t = Tensor::of({1, 2, 3, 4, 5, 6}, {2, 3}, dt);
    EXPECT_EQ(t.at({1, 2}), 6.0) << dtype_name(dt);
    EXPECT_EQ(t.at({-1, -3}), 4.0) << dtype_name(dt);
    t.set({0, 1}, 7);
    EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{1, 7, 3, 4, 5, 6})) << dtype_name(dt);
  }
  Tensor b = Tensor::of({0, 1}, {2}, DType::boolean);
  EXPECT_EQ(b.at({1}), 1.0);
}

TEST(Tensor, ElementAccessErrors) {
  Tensor t = zeros({2, 3});
  EXPECT_THROW_WITH(t.at({2, 0}), "at", "index 2", "(2, 3)");
  EXPECT_THROW_WITH(t.at({0}), "at", "(2, 3)");
  EXPECT_THROW_WITH(t.item(), "item", "(2, 3)");
  EXPECT_THROW_WITH(t.data<double>(), "f64", "f32");
  EXPECT_THROW_WITH(Tensor::of({1, 2, 3}, {2, 2}), "3 values", "(2, 2)");
  EXPECT_THROW_WITH(Tensor().shape(), "undefined");
}

TEST(Tensor, FromVectorKeepsValuesAndDtype) {
  Tensor t = Tensor::from_vector<int64_t>({5, -3, 9}, {3});
  EXPECT_EQ(t.dtype(), DType::i64);
  EXPECT_EQ(t.data<int64_t>()[1], -3);
  EXPECT_EQ(Tensor::scalar(2.5).item(), 2.5);
  EXPECT_EQ(Tensor::scalar(2.5).dim(), 0);
}

TEST(Tensor, ViewsShareStorage) {
  Tensor x = arange(0, 24, 1, DType::f32).reshape({2, 3, 4});
  Tensor t = x.transpose(0, 2);
  Tensor n = x.narrow(1, 1, 2);
  Tensor e = x.select(0, 1).unsqueeze(0).expand({5, 3, 4});
  for (const Tensor& v : {t, n, e}) EXPECT_TRUE(v.shares_storage_with(x));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.strides(), (Shape{1, 4, 12}));
  EXPECT_EQ(t.at({3, 2, 1}), x.at({1, 2, 3}));
  EXPECT_EQ(n.at({1, 1, 0}), x.at({1, 2, 0}));
  EXPECT_EQ(e.strides()[0], 0);
  EXPECT_EQ(e.at({4, 2, 3}), 23.0);
  x.set({1, 2, 3}, 100);  // writes show through every view
  EXPECT_EQ(t.at({3, 2, 1}), 100.0);
  EXPECT_EQ(e.at({0, 2, 3}), 100.0);
}

TEST(Tensor, ContiguousCopiesOnlyWhenNeeded) {
  Tensor x = arange(0, 6, 1, DType::f32).reshape({2, 3});
  EXPECT_TRUE(x.contiguous().shares_storage_with(x));
  Tensor t = x.t().contiguous();
  EXPECT_FALSE(t.shares_storage_with(x));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
}

TEST(Tensor, PrintsReadably) {
  Tensor x = Tensor::of({1, 2.5, -3, 4}, {2, 2});
  EXPECT_EQ(to_string(x), "tensor([[1.0000, 2.5000],\n        [-3.0000, 4.0000]], shape=(2, 2), dtype=f32)");
  EXPECT_EQ(to_string(Tensor::of({1, 2}, {2}, DType::i64)), "tensor([1, 2], shape=(2), dtype=i64)");
  const std::string big = to_string(zeros({3000}));
  EXPECT_NE(big.find("..."), std::string::npos);
  EXPECT_LT(big.size(), 200u);
}

TEST(Tensor, RequiresGradOnlyOnFloatingLeaves) {
  Tensor i = zeros({2}, DType::i64);
  EXPECT_THROW_WITH(i.set_requires_grad(true), "i64", "floating");
  Tensor x = zeros({2});
  x.set_requires_grad(true);
  Tensor y = x * 2.0;
  EXPECT_FALSE(y.is_leaf());
  EXPECT_THROW_WITH(y.set_requires_grad(false), "leaf", "mul");
}

}  // namespace
}  // namespace nf
