// Quantising and dequantising rows of every weight type against the committed fixture of
// tools/quant/make_quant_fixtures.py: gguf.quants' blocks and dequantised floats bit for bit, and
// llama.cpp's reference blocks for the types gguf cannot quantise (Q3_K to Q6_K, Q8_K, Q8_1); the K
// types' round-trip error; nf::quantize / nf::dequantize over tensors.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "nanoformer/ops/quantized.h"
#include "ops/cpu/quant/quant_blocks.h"
#include "ops/cpu/quant/quant_rows.h"
#include "support/testing.h"

namespace nf {
namespace {

// One array of the fixture: rows x cols of `type` (f32 for inputs and dequantised values).
struct FixtureArray {
  QuantType type = QuantType::f32;
  int64_t rows = 0, cols = 0;
  std::vector<uint8_t> bytes;
  const uint8_t* row(int64_t r) const { return bytes.data() + quant_row_bytes(type, cols) * static_cast<size_t>(r); }
  const float* floats(int64_t r) const { return reinterpret_cast<const float*>(row(r)); }
};

// tests/fixtures/quant/quants.bin: b"NFQUANT1", u32 + JSON metadata, u32 count, then per array
// u32 + name, u32 GGUF type, u32 rows, u32 cols, the bytes (layout in the generator's docstring).
class QuantFixture {
 public:
  static const QuantFixture& get() {
    static const QuantFixture fixture(std::string(NF_TEST_DATA_DIR) + "/quant/quants.bin");
    return fixture;
  }
  const FixtureArray& at(const std::string& name) const {
    const auto it = arrays.find(name);
    NF_CHECK(it != arrays.end(), path_, ": no array '", name, "' (regenerate with tools/quant/make_quant_fixtures.py)");
    return it->second;
  }
  bool has(const std::string& name) const { return arrays.count(name) != 0; }

  std::string meta;
  std::map<std::string, FixtureArray> arrays;

 private:
  explicit QuantFixture(std::string path) : path_(std::move(path)) {
    std::ifstream in(path_, std::ios::binary);
    NF_CHECK(in, path_, ": cannot open (regenerate with tools/quant/make_quant_fixtures.py)");
    const std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t at = 0;
    const auto take = [&](size_t n) {
      NF_CHECK(data.size() - at >= n, path_, ": truncated at byte ", at);
      at += n;
      return data.data() + at - n;
    };
    const auto u32 = [&] {
      uint32_t v;
      std::memcpy(&v, take(4), 4);
      return v;
    };
    NF_CHECK(std::memcmp(take(8), "NFQUANT1", 8) == 0, path_, ": not a quant fixture");
    const uint32_t meta_len = u32();
    meta.assign(reinterpret_cast<const char*>(take(meta_len)), meta_len);
    for (uint32_t count = u32(); count-- > 0;) {
      const uint32_t name_len = u32();
      const std::string name(reinterpret_cast<const char*>(take(name_len)), name_len);
      FixtureArray a;
      const uint32_t type = u32();
      NF_CHECK(quant_type_info(type).has_value(), path_, ": array ", name, " has unknown type ", type);
      a.type = static_cast<QuantType>(type);
      a.rows = u32();
      a.cols = u32();
      const uint8_t* bytes = take(quant_row_bytes(a.type, a.cols) * static_cast<size_t>(a.rows));
      a.bytes.assign(bytes, data.data() + at);
      arrays.emplace(name, std::move(a));
    }
    NF_CHECK(at == data.size(), path_, ": ", data.size() - at, " bytes after the last array");
  }
  std::string path_;
};

std::string hex(const uint8_t* p, size_t n) {
  std::ostringstream s;
  for (size_t i = 0; i < n; ++i) s << std::hex << std::setw(2) << std::setfill('0') << int(p[i]);
  return s.str();
}

// "<case>/<type>" -> {"<case>", "<type>"}
std::pair<std::string, std::string> split_name(const std::string& name) {
  const size_t slash = name.find('/');
  return {name.substr(0, slash), name.substr(slash + 1)};
}

// The block arrays ("<case>/<type>", not inputs "/x" nor dequantised "/y") of the fixture.
std::vector<std::string> block_arrays(bool random) {
  std::vector<std::string> names;
  for (const auto& [name, a] : QuantFixture::get().arrays) {
    const auto [case_name, rest] = split_name(name);
    if (rest == "x" || rest.find('/') != std::string::npos || (case_name == "random") != random) continue;
    names.push_back(name);
  }
  return names;
}

// quantize_row of the case's input, row by row, equals the oracle's blocks byte for byte.
::testing::AssertionResult quantizes_to_oracle(const std::string& name) {
  const QuantFixture& fixture = QuantFixture::get();
  const FixtureArray& expected = fixture.at(name);
  const FixtureArray& x = fixture.at(split_name(name).first + "/x");
  const size_t row_bytes = quant_row_bytes(expected.type, expected.cols);
  const size_t block_bytes = static_cast<size_t>(quant_type_info(expected.type).block_bytes);
  std::vector<uint8_t> got(row_bytes);
  for (int64_t r = 0; r < x.rows; ++r) {
    cpu::quantize_row(expected.type, x.floats(r), got.data(), x.cols);
    const uint8_t* want = expected.row(r);
    for (size_t i = 0; i < row_bytes; ++i)
      if (got[i] != want[i]) {
        const size_t block = i / block_bytes;
        return ::testing::AssertionFailure()
               << name << " row " << r << ": block " << block << " differs at byte " << i % block_bytes
               << "\n  got      " << hex(&got[block * block_bytes], block_bytes)
               << "\n  expected " << hex(want + block * block_bytes, block_bytes);
      }
  }
  return ::testing::AssertionSuccess();
}

TEST(QuantRows, QuantizeGivesTheOraclesBlocksByteForByte) {
  std::map<QuantType, std::set<std::string>> cases_of;
  for (const std::string& name : block_arrays(false)) {
    EXPECT_TRUE(quantizes_to_oracle(name));
    cases_of[QuantFixture::get().at(name).type].insert(split_name(name).first);
  }
  // every type, on every case (normal, outliers, zero blocks, ties, tiny, huge, negative max, a real
  // tensor): gguf.quants' bytes, and llama.cpp's for the types gguf.quants does not quantise
  for (QuantType type : {QuantType::f16, QuantType::bf16, QuantType::q8_0, QuantType::q4_0, QuantType::q4_1,
                         QuantType::q5_0, QuantType::q5_1, QuantType::q4_k, QuantType::q6_k, QuantType::q5_k,
                         QuantType::q3_k, QuantType::q8_k, QuantType::q8_1})
    EXPECT_EQ(cases_of[type].size(), 8u) << quant_type_name(type);
}

// dequantize_row of the blocks "<name>" equals "<name>/y" bit for bit (NaNs included): for every type,
// random blocks (random bytes with f16 scales of every class: normal, subnormal, zero, 65504, inf, so
// every field of the layout is exercised) and the blocks of a real tensor.
TEST(QuantRows, DequantizeGivesGgufsFloatsBitForBit) {
  const QuantFixture& fixture = QuantFixture::get();
  for (const auto& [name, y] : fixture.arrays) {
    if (name.size() < 2 || name.substr(name.size() - 2) != "/y") continue;
    const FixtureArray& blocks = fixture.at(name.substr(0, name.size() - 2));
    std::vector<float> got(static_cast<size_t>(blocks.cols));
    for (int64_t r = 0; r < blocks.rows; ++r) {
      cpu::dequantize_row(blocks.type, blocks.row(r), got.data(), blocks.cols);
      const float* want = y.floats(r);
      for (int64_t i = 0; i < blocks.cols; ++i)
        if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i])) {
          ADD_FAILURE() << name << " row " << r << " value " << i << ": got " << got[i] << " (0x" << std::hex
                        << std::bit_cast<uint32_t>(got[i]) << "), gguf " << want[i] << " (0x"
                        << std::bit_cast<uint32_t>(want[i]) << ")";
          break;
        }
    }
  }
  for (const char* type : {"f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q6_k", "q5_k", "q3_k"})
    for (const char* case_name : {"random", "real"})
      EXPECT_TRUE(fixture.has(std::string(case_name) + "/" + type + "/y")) << case_name << "/" << type;
}

// Quantises and dequantises the rows of `x`; the worst |x - y| over `bound(super-block)` and the RMS
// error over the RMS of x. The K types' blocks are 256 values: bounds are per super-block.
struct RoundTrip {
  double worst_over_bound = 0, relative_rms = 0;
};

template <class Bound>
RoundTrip round_trip(QuantType type, const FixtureArray& x, Bound bound) {
  std::vector<uint8_t> blocks(quant_row_bytes(type, x.cols));
  std::vector<float> y(static_cast<size_t>(x.cols));
  RoundTrip result;
  double sum_x2 = 0, sum_e2 = 0;
  for (int64_t r = 0; r < x.rows; ++r) {
    const float* xr = x.floats(r);
    cpu::quantize_row(type, xr, blocks.data(), x.cols);
    cpu::dequantize_row(type, blocks.data(), y.data(), x.cols);
    for (int64_t s = 0; s < x.cols; s += cpu::kQK_K) {
      const double limit = bound(xr + s);
      for (int i = 0; i < cpu::kQK_K; ++i) {
        const double e = std::abs(double(y[s + i]) - double(xr[s + i]));
        sum_e2 += e * e;
        sum_x2 += double(xr[s + i]) * xr[s + i];
        result.worst_over_bound = std::max(result.worst_over_bound, limit > 0 ? e / limit : (e > 0 ? INFINITY : 0.0));
      }
    }
  }
  result.relative_rms = sum_x2 > 0 ? std::sqrt(sum_e2 / sum_x2) : 0.0;
  return result;
}

double absmax(const float* x) {
  double m = 0;
  for (int i = 0; i < cpu::kQK_K; ++i) m = std::max(m, std::abs(double(x[i])));
  return m;
}
// max(x, 0) - min(x, 0): the span a K-type sub-block's d * q - dmin * m can need
double span(const float* x) {
  double lo = 0, hi = 0;
  for (int i = 0; i < cpu::kQK_K; ++i) lo = std::min(lo, double(x[i])), hi = std::max(hi, double(x[i]));
  return hi - lo;
}

const std::vector<std::string> kCases = {"normal", "outliers", "zero_blocks", "ties",
                                         "tiny",   "huge",     "negative_max", "real"};

// gguf.quants has no K-type quantiser; beside llama.cpp's bytes (above) the round trip keeps each
// value within a step of its super-block's grid, and the RMS error is no worse than that of the type
// of as many bits (Q4_1 for Q4_K, Q4_K for Q5_K, Q5_1 for Q6_K). In "huge" the legacy types' f16
// scales overflow (inf), and so does Q4_K's dmin = max min / 63 (as in llama.cpp).
TEST(QuantRows, KTypesRoundTripWithinTheirError) {
  for (const std::string& c : kCases) {
    const FixtureArray& x = QuantFixture::get().at(c + "/x");
    const bool finite = c != "huge";
    // Q4_K: 16 levels, a step of at most span / 15 (scales and mins rounded to 6 bits, values clamped)
    if (finite) {
      const RoundTrip q4_k = round_trip(QuantType::q4_k, x, [](const float* s) { return span(s) / 15; });
      EXPECT_LE(q4_k.worst_over_bound, 1.0) << c << ": Q4_K error beyond one step of span / 15";
      EXPECT_LE(q4_k.relative_rms, round_trip(QuantType::q4_1, x, absmax).relative_rms) << c << ": Q4_K vs Q4_1";
      // Q5_K: Q4_K's with 32 levels, a step of at most span / 31, and no worse than Q4_K
      const RoundTrip q5_k = round_trip(QuantType::q5_k, x, [](const float* s) { return span(s) / 31; });
      EXPECT_LE(q5_k.worst_over_bound, 1.0) << c << ": Q5_K error beyond one step of span / 31";
      EXPECT_LE(q5_k.relative_rms, q4_k.relative_rms) << c << ": Q5_K vs Q4_K";
    }
    // Q6_K: levels -32..31 of the group's scale, which is at most absmax / 32 (rounded to 8 bits)
    const RoundTrip q6_k = round_trip(QuantType::q6_k, x, [](const float* s) { return absmax(s) / 32; });
    EXPECT_LE(q6_k.worst_over_bound, 1.0) << c << ": Q6_K error beyond one step of absmax / 32";
    if (finite) {
      EXPECT_LE(q6_k.relative_rms, round_trip(QuantType::q5_1, x, absmax).relative_rms) << c << ": Q6_K vs Q5_1";
    }
    // Q8_K: d = absmax / 127 in f32 and round to nearest: within half a step (and f32's rounding of d * q)
    const RoundTrip q8_k = round_trip(QuantType::q8_k, x, [](const float* s) { return absmax(s) / 254 * (1 + 1e-6); });
    EXPECT_LE(q8_k.worst_over_bound, 1.0) << c << ": Q8_K error beyond half a step of absmax / 127";
  }
}

// Q8_K: q = nearest(-127 x / max) where max is the value of largest magnitude (so max -> -127),
// d = 1 / (-127 / max), and bsums the sums of q over groups of 16.
TEST(QuantRows, Q8KHoldsItsScaleAndGroupSums) {
  for (const std::string& c : kCases) {
    const FixtureArray& x = QuantFixture::get().at(c + "/x");
    std::vector<cpu::BlockQ8_K> blocks(static_cast<size_t>(x.cols / cpu::kQK_K));
    for (int64_t r = 0; r < x.rows; ++r) {
      cpu::quantize_row(QuantType::q8_k, x.floats(r), blocks.data(), x.cols);
      for (size_t b = 0; b < blocks.size(); ++b) {
        const float* xb = x.floats(r) + b * cpu::kQK_K;
        int arg = 0;
        for (int i = 1; i < cpu::kQK_K; ++i) arg = std::abs(xb[i]) > std::abs(xb[arg]) ? i : arg;
        const float max = xb[arg];
        EXPECT_EQ(blocks[b].d, max == 0 ? 0.0f : 1 / (-127.0f / max)) << c << " row " << r << " block " << b;
        if (max != 0) {
          EXPECT_EQ(blocks[b].qs[arg], -127) << c << " row " << r << " block " << b;
        }
        for (int g = 0; g < cpu::kQK_K / 16; ++g) {
          int sum = 0;
          for (int i = 0; i < 16; ++i) sum += blocks[b].qs[16 * g + i];
          EXPECT_EQ(blocks[b].bsums[g], sum) << c << " row " << r << " block " << b << " group " << g;
        }
      }
    }
  }
}

// A zero super-block quantises to zeros: Q6_K's and Q3_K's blocks are all zero bytes, Q4_K's and
// Q5_K's d and dmin are 0, Q8_K's d and q are 0; each dequantises to zeros (Q6_K's to -0: 0 * (0 - 32)).
TEST(QuantRows, ZeroSuperBlocksOfKTypesAreZero) {
  const std::vector<float> zeros(cpu::kQK_K, 0.0f);
  for (QuantType type : {QuantType::q4_k, QuantType::q6_k, QuantType::q8_k, QuantType::q5_k, QuantType::q3_k}) {
    std::vector<uint8_t> blocks(quant_row_bytes(type, cpu::kQK_K), 0xab);
    cpu::quantize_row(type, zeros.data(), blocks.data(), cpu::kQK_K);
    std::vector<float> y(cpu::kQK_K, 1.0f);
    cpu::dequantize_row(type, blocks.data(), y.data(), cpu::kQK_K);
    for (float v : y) ASSERT_EQ(v, 0.0f) << quant_type_name(type);
    if (type != QuantType::q4_k && type != QuantType::q5_k) {
      EXPECT_EQ(std::count(blocks.begin(), blocks.end(), 0), static_cast<long>(blocks.size())) << quant_type_name(type);
    }
  }
}

Tensor tensor_of(const FixtureArray& x) {
  return Tensor::from_vector(std::vector<float>(x.floats(0), x.floats(0) + x.rows * x.cols), {x.rows, x.cols});
}

// nf::quantize cuts a tensor into rows: its bytes are the oracle's; nf::dequantize (and a range of
// rows) gives gguf's floats.
TEST(QuantizedTensor, QuantizeAndDequantizeAWholeTensorAsTheOracle) {
  const QuantFixture& fixture = QuantFixture::get();
  const FixtureArray& x = fixture.at("ties/x");  // two rows
  ASSERT_EQ(x.rows, 2);
  for (const char* name : {"f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q6_k", "q5_k", "q3_k", "q8_k",
                           "q8_1"}) {
    const FixtureArray& expected = fixture.at(std::string("ties/") + name);
    const QuantizedTensor q = quantize(tensor_of(x), expected.type);
    ASSERT_EQ(q.nbytes(), expected.bytes.size()) << name;
    EXPECT_EQ(std::memcmp(q.data(), expected.bytes.data(), q.nbytes()), 0) << name;
  }
  for (const char* name : {"q4_0", "q5_1", "q4_k", "q6_k"}) {
    const FixtureArray& blocks = fixture.at(std::string("random/") + name);
    const FixtureArray& y = fixture.at(std::string("random/") + name + "/y");
    auto storage = std::make_shared<Storage>(blocks.bytes.size(), Device{});
    std::memcpy(storage->data(), blocks.bytes.data(), blocks.bytes.size());
    const QuantizedTensor q = QuantizedTensor::from_storage(storage, blocks.type, blocks.rows, blocks.cols);
    const Tensor all = dequantize(q);
    ASSERT_EQ(all.shape(), (Shape{blocks.rows, blocks.cols})) << name;
    EXPECT_EQ(std::memcmp(all.data<float>(), y.bytes.data(), y.bytes.size()), 0) << name;
    const Tensor last = dequantize_rows(q, blocks.rows - 1, blocks.rows);
    EXPECT_EQ(std::memcmp(last.data<float>(), y.floats(blocks.rows - 1), blocks.cols * sizeof(float)), 0) << name;
  }
}

// Above 65,536 values nf::quantize and nf::dequantize split the rows across threads: the same bytes
// and floats as row by row.
TEST(QuantizedTensor, ThreadedRowsEqualRowByRow) {
  Generator gen(22);
  const int64_t rows = 300, cols = 512;
  const Tensor w = randn({rows, cols}, gen);
  for (QuantType type : {QuantType::q8_0, QuantType::q4_1, QuantType::q5_0, QuantType::q4_k, QuantType::q6_k}) {
    const QuantizedTensor q = quantize(w, type);
    const Tensor y = dequantize(q);
    std::vector<uint8_t> blocks(quant_row_bytes(type, cols));
    std::vector<float> row(cols);
    for (int64_t r = 0; r < rows; ++r) {
      cpu::quantize_row(type, w.data<float>() + r * cols, blocks.data(), cols);
      ASSERT_EQ(std::memcmp(q.row(r), blocks.data(), blocks.size()), 0) << quant_type_name(type) << " row " << r;
      cpu::dequantize_row(type, blocks.data(), row.data(), cols);
      ASSERT_EQ(std::memcmp(y.data<float>() + r * cols, row.data(), cols * sizeof(float)), 0) << quant_type_name(type);
    }
  }
}

TEST(QuantizedTensor, QuantizeNamesTheTypeAndShapeOfRowsOfPartBlocks) {
  EXPECT_THROW_WITH(quantize(Tensor::empty({3, 40}), QuantType::q4_0), "quantize: q4_0 needs rows of a multiple of 32",
                    "(3, 40)");
  EXPECT_THROW_WITH(quantize(Tensor::empty({2, 128}), QuantType::q6_k), "q6_k", "multiple of 256", "(2, 128)");
  EXPECT_THROW_WITH(quantize(Tensor::empty({64}), QuantType::q8_0), "quantize: weight must be 2-D", "(64)");
  EXPECT_THROW_WITH(dequantize_rows(quantize(Tensor::empty({2, 32}), QuantType::q8_0), 1, 3), "rows 1..3",
                    "2 rows");
  std::vector<float> x(40), y(40);
  std::vector<uint8_t> blocks(64);
  EXPECT_THROW_WITH(cpu::quantize_row(QuantType::q5_1, x.data(), blocks.data(), 40), "40 values", "q5_1");
  EXPECT_THROW_WITH(cpu::dequantize_row(QuantType::q4_k, blocks.data(), y.data(), 40), "40 values", "q4_k");
}

}  // namespace
}  // namespace nf
