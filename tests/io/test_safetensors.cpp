// safetensors: round trips of every dtype and layout, the byte format the Python writer produces,
// zero-copy views and their lifetime, and every way a damaged file must be refused with a message
// that names the file and the problem (plus a byte-flipping loop that must never crash).
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/testing.h"

namespace nf {
namespace {

namespace fs = std::filesystem;
using io::SafetensorsFile;
using io::save_safetensors;

using Bytes = std::vector<unsigned char>;

Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const Bytes& bytes) {
  // A fresh file, not a truncated one: ext4 flushes a truncated-and-rewritten file on close,
  // which would make the corruption loop below wait on the disk.
  fs::remove(path);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// A file made by hand: length prefix (the header's true length unless `length` overrides it),
// header text, data bytes.
Bytes raw_file(const std::string& header, const Bytes& data, uint64_t length = UINT64_MAX) {
  if (length == UINT64_MAX) length = header.size();
  Bytes out;
  out.reserve(8 + header.size() + data.size());  // (also keeps gcc 12 from a false -Warray-bounds)
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<unsigned char>(length >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<size_t>(ca.numel()) * ca.itemsize()) == 0;
}

class Safetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("nf_safetensors_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Writes a hand-made file and returns its path.
  std::string raw(const std::string& header, const Bytes& data, uint64_t length = UINT64_MAX) const {
    const std::string p = path("raw.safetensors");
    write_bytes(p, raw_file(header, data, length));
    return p;
  }

  fs::path dir_;
};

// One tensor of every dtype, with values that exercise sign, fraction and extremes.
std::vector<std::pair<std::string, Tensor>> every_dtype() {
  Generator gen(7);
  return {
      {"f64", randn({3, 2}, gen, DType::f64)},
      {"i64", Tensor::from_vector<int64_t>({INT64_MIN, -1, 0, INT64_MAX}, {2, 2})},
      {"f32", randn({2, 3, 4}, gen)},
      {"i32", Tensor::from_vector<int32_t>({INT32_MIN, -7, 0, 42, INT32_MAX}, {5})},
      {"bf16", randn({4, 3}, gen).to(DType::bf16)},
      {"f16", randn({7}, gen).to(DType::f16)},
      {"bool", Tensor::from_vector<bool>({true, false, false, true, true}, {5})},
  };
}

TEST_F(Safetensors, RoundTripsEveryDtype) {
  const auto tensors = every_dtype();
  save_safetensors(path("a.safetensors"), tensors);
  const SafetensorsFile file = SafetensorsFile::open(path("a.safetensors"));
  ASSERT_EQ(file.entries().size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    EXPECT_EQ(file.entries()[i].name, name) << "entries() are in data order, which is the order given";
    EXPECT_EQ(file.entry(name).dtype, t.dtype());
    EXPECT_EQ(file.entry(name).shape, t.shape());
    EXPECT_TRUE(same_bytes(file.view(name), t)) << name;
    EXPECT_FALSE(file.view(name).storage()->owns_memory()) << name << ": descending item sizes stay aligned";
    EXPECT_TRUE(same_bytes(file.load(name), t)) << name;
  }
  const auto all = io::load_safetensors(path("a.safetensors"));
  ASSERT_EQ(all.size(), tensors.size());
  for (const auto& [name, t] : tensors) EXPECT_TRUE(same_bytes(all.at(name), t)) << name;
}

TEST_F(Safetensors, RoundTripsNonContiguousZeroDimAndEmptyTensors) {
  Generator gen(3);
  const Tensor base = randn({4, 6}, gen, DType::f64);
  const std::vector<std::pair<std::string, Tensor>> tensors = {
      {"transposed", base.t()},
      {"strided", base.slice(1, 1, 6, 2)},
      {"expanded", Tensor::of({1, 2, 3}, {3, 1}, DType::f64).expand({3, 4})},
      {"scalar", Tensor::scalar(2.5, DType::f64)},
      {"empty", Tensor::empty({0, 3}, DType::f64)},
      {"empty_i32", Tensor::empty({2, 0}, DType::i32)},
  };
  ASSERT_FALSE(tensors[0].second.is_contiguous());
  save_safetensors(path("b.safetensors"), tensors);
  const SafetensorsFile file = SafetensorsFile::open(path("b.safetensors"));
  for (const auto& [name, t] : tensors) {
    EXPECT_TRUE(file.view(name).is_contiguous()) << name;
    EXPECT_TENSOR_CLOSE(file.view(name), t, 0.0, 0.0);
    EXPECT_TENSOR_CLOSE(file.load(name), t, 0.0, 0.0);
  }
  EXPECT_EQ(file.entry("scalar").shape, Shape{});
  EXPECT_EQ(file.view("scalar").item(), 2.5);
  EXPECT_EQ(file.entry("empty").begin, file.entry("empty").end);
}

TEST_F(Safetensors, MapOverloadWritesInNameOrder) {
  save_safetensors(path("m.safetensors"), std::map<std::string, Tensor>{{"b", Tensor::of({1, 2}, {2})},
                                                                         {"a", Tensor::of({3}, {1})}});
  const SafetensorsFile file = SafetensorsFile::open(path("m.safetensors"));
  ASSERT_EQ(file.entries().size(), 2u);
  EXPECT_EQ(file.entries()[0].name, "a");
  EXPECT_EQ(file.entries()[1].name, "b");
  EXPECT_EQ(file.view("b").to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST_F(Safetensors, MetadataRoundTrips) {
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"torch_version", "2.5.1"}, {"empty", ""}, {"unicode", "h\u00e9llo \u4e16\u754c"},
      {"quotes", "a \"quoted\" \\ value\n"}};
  save_safetensors(path("meta.safetensors"), {{"x", Tensor::of({1}, {1})}}, metadata);
  EXPECT_EQ(SafetensorsFile::open(path("meta.safetensors")).metadata(), metadata);
  save_safetensors(path("none.safetensors"), {{"x", Tensor::of({1}, {1})}});
  EXPECT_TRUE(SafetensorsFile::open(path("none.safetensors")).metadata().empty());
}

TEST_F(Safetensors, WritesThePythonLayout) {
  save_safetensors(path("layout.safetensors"),
                   {{"w", Tensor::of({1, 2, 3, 4, 5, 6}, {2, 3})}, {"b", Tensor::of({7, 8}, {2}, DType::f64)}},
                   {{"format", "pt"}});
  const Bytes bytes = read_bytes(path("layout.safetensors"));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[static_cast<size_t>(i)];
  EXPECT_EQ(n % 8, 0u) << "header padded to a multiple of 8";
  ASSERT_EQ(bytes.size(), 8 + n + 6 * 4 + 2 * 8);
  const std::string header(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  EXPECT_EQ(header.find_last_not_of(' ') + 1, header.find_last_of('}') + 1) << "padding is trailing spaces";
  const auto json = nlohmann::json::parse(header);
  EXPECT_EQ(json["__metadata__"]["format"], "pt");
  EXPECT_EQ(json["w"]["dtype"], "F32");
  EXPECT_EQ(json["w"]["shape"], nlohmann::json({2, 3}));
  EXPECT_EQ(json["w"]["data_offsets"], nlohmann::json({0, 24}));
  EXPECT_EQ(json["b"]["dtype"], "F64");
  EXPECT_EQ(json["b"]["data_offsets"], nlohmann::json({24, 40}));
  float first = 0;
  std::memcpy(&first, bytes.data() + 8 + n, 4);
  EXPECT_EQ(first, 1.0f);
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << "temporary file left behind";
  }
}

TEST_F(Safetensors, ReadsAHandWrittenFileWithUnsortedHeader) {
  // Offsets out of key order and no padding: what other writers may produce.
  Bytes data(4 * 2 + 2 * 1);
  const float a[2] = {1.5f, -2.0f};
  std::memcpy(data.data() + 2, a, sizeof a);
  data[0] = 0x00;
  data[1] = 0x3c;  // f16 1.0
  const std::string p = raw(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[2,10]},)"
                            R"("z":{"dtype":"F16","shape":[],"data_offsets":[0,2]}})",
                            data);
  const SafetensorsFile file = SafetensorsFile::open(p);
  EXPECT_EQ(file.entries()[0].name, "z");
  EXPECT_EQ(file.view("z").item(), 1.0);
  EXPECT_EQ(file.view("a").to_vector<float>(), (std::vector<float>{1.5f, -2.0f}));
}

TEST_F(Safetensors, ViewIsZeroCopyAndKeepsTheMappingAlive) {
  save_safetensors(path("v.safetensors"), {{"x", Tensor::of({1, 2, 3, 4}, {2, 2})}});
  Tensor view;
  {
    const SafetensorsFile file = SafetensorsFile::open(path("v.safetensors"));
    view = file.view("x");
    EXPECT_FALSE(view.storage()->owns_memory()) << "a view points into the mapping";
    EXPECT_EQ(file.view("x").raw_data(), view.raw_data());
    EXPECT_TRUE(file.load("x").storage()->owns_memory());
    EXPECT_EQ(view.name(), "x");
  }
  fs::remove(path("v.safetensors"));  // the mapping outlives both the file object and the file
  EXPECT_EQ(view.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ((view * 2.0).to_vector<float>(), (std::vector<float>{2, 4, 6, 8}));
}

TEST_F(Safetensors, MisalignedDataIsCopiedNotReadThroughTypedPointers) {
  // bool first puts the f32 at data offset 1; an unpadded header misaligns the whole data section.
  save_safetensors(path("mis.safetensors"),
                   {{"flag", Tensor::from_vector<bool>({true}, {1})}, {"x", Tensor::of({1.25, -3}, {2})}});
  const SafetensorsFile file = SafetensorsFile::open(path("mis.safetensors"));
  const Tensor x = file.view("x");
  EXPECT_TRUE(x.storage()->owns_memory()) << "misaligned f32 must be copied";
  EXPECT_EQ(reinterpret_cast<uintptr_t>(x.raw_data()) % 4, 0u);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1.25f, -3.0f}));
  EXPECT_FALSE(file.view("flag").storage()->owns_memory()) << "bytes are always aligned";

  const double values[2] = {0.5, 7.0};
  Bytes data(sizeof values);
  std::memcpy(data.data(), values, sizeof values);
  const std::string header = R"({"d":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})";
  ASSERT_NE((8 + header.size()) % 8, 0u);
  const SafetensorsFile unpadded = SafetensorsFile::open(raw(header, data));
  EXPECT_EQ(unpadded.view("d").to_vector<double>(), (std::vector<double>{0.5, 7.0}));
}

TEST_F(Safetensors, SaveReplacesAnExistingFileAndAFailedSaveLeavesItIntact) {
  const std::string p = path("c.safetensors");
  save_safetensors(p, {{"x", Tensor::of({1}, {1})}});
  save_safetensors(p, {{"y", Tensor::of({2, 3}, {2})}});
  EXPECT_FALSE(SafetensorsFile::open(p).contains("x"));
  EXPECT_TRUE(SafetensorsFile::open(p).contains("y"));
  EXPECT_THROW_WITH(save_safetensors(p, {{"a", Tensor::of({1}, {1})}, {"a", Tensor::of({2}, {1})}}), p,
                    "tensor 'a' is given twice");
  EXPECT_TRUE(SafetensorsFile::open(p).contains("y"));
  size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 1u) << "no temporary file left behind";
}

TEST_F(Safetensors, WriterErrorsNameThePath) {
  const std::string missing_dir = path("no/such/dir/x.safetensors");
  EXPECT_THROW_WITH(save_safetensors(missing_dir, {{"x", Tensor::of({1}, {1})}}), missing_dir, "cannot create",
                    "No such file or directory");
  EXPECT_THROW_WITH(save_safetensors(path("d"), {{"__metadata__", Tensor::of({1}, {1})}}), path("d"),
                    "'__metadata__' is reserved");
  EXPECT_THROW_WITH(save_safetensors(path("d"), {{"x", Tensor()}}), path("d"), "tensor 'x' is undefined");
  EXPECT_THROW_WITH(save_safetensors(path("d"), {{"", Tensor::of({1}, {1})}}), "empty name");
  EXPECT_THROW_WITH(save_safetensors(path("d"), {{"x", Tensor::of({1}, {1})}}, {{"k", std::string("\xff")}}),
                    path("d"), "valid UTF-8");
  fs::create_directories(path("a_directory"));
  EXPECT_THROW_WITH(save_safetensors(path("a_directory"), {{"x", Tensor::of({1}, {1})}}), path("a_directory"),
                    "cannot rename");
}

TEST_F(Safetensors, EntryLookupNamesFileAndTensor) {
  save_safetensors(path("e.safetensors"), {{"alpha", Tensor::of({1}, {1})}, {"beta", Tensor::of({1}, {1})}});
  const SafetensorsFile file = SafetensorsFile::open(path("e.safetensors"));
  EXPECT_TRUE(file.contains("alpha"));
  EXPECT_FALSE(file.contains("gamma"));
  EXPECT_THROW_WITH(file.entry("gamma"), path("e.safetensors"), "no tensor named 'gamma'", "alpha, beta");
  EXPECT_THROW_WITH(file.view("gamma"), "no tensor named 'gamma'");
  EXPECT_THROW_WITH(file.load("gamma"), "no tensor named 'gamma'");
}

// ---- damaged files ----

TEST_F(Safetensors, MissingFileAndDirectory) {
  EXPECT_THROW_WITH(SafetensorsFile::open(path("absent.safetensors")), path("absent.safetensors"), "cannot open",
                    "No such file or directory");
  EXPECT_THROW_WITH(SafetensorsFile::open(dir_.string()), dir_.string(), "not a regular file");
}

TEST_F(Safetensors, TruncatedAnywhere) {
  save_safetensors(path("t.safetensors"), {{"x", Tensor::of({1, 2, 3, 4, 5, 6}, {2, 3})}});
  const Bytes whole = read_bytes(path("t.safetensors"));
  const size_t header_end = whole.size() - 24;
  const std::string p = path("cut.safetensors");
  for (size_t cut : {size_t{0}, size_t{3}, size_t{7}}) {  // inside the length prefix
    write_bytes(p, Bytes(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut)));
    EXPECT_THROW_WITH(SafetensorsFile::open(p), p, "too short for the 8-byte header length");
  }
  for (size_t cut : {size_t{8}, size_t{9}, header_end / 2, header_end - 1}) {  // inside the header
    write_bytes(p, Bytes(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut)));
    EXPECT_THROW_WITH(SafetensorsFile::open(p), p, "header length " + std::to_string(header_end - 8),
                      "bytes after the length prefix (file truncated?)");
  }
  for (size_t cut : {header_end, header_end + 1, whole.size() - 1}) {  // inside the data
    write_bytes(p, Bytes(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut)));
    EXPECT_THROW_WITH(SafetensorsFile::open(p), p, "tensor 'x'", "data_offsets [0, 24] run past the end of the " +
                                                                      std::to_string(cut - header_end) + "-byte data section");
  }
}

TEST_F(Safetensors, HeaderLengthBeyondTheFileOrTheLimit) {
  const std::string header = R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  EXPECT_THROW_WITH(SafetensorsFile::open(raw(header, Bytes(4), 1000)), "header length 1000 exceeds the",
                    "bytes after the length prefix");
  EXPECT_THROW_WITH(SafetensorsFile::open(raw(header, Bytes(4), 200'000'000)), "header length 200000000",
                    "100000000-byte limit");
  EXPECT_THROW_WITH(SafetensorsFile::open(raw(header, Bytes(4), UINT64_MAX - 1)), "exceeds the 100000000-byte limit");
}

TEST_F(Safetensors, InvalidJson) {
  EXPECT_THROW_WITH(SafetensorsFile::open(raw(R"({"x":{"dtype":"F32",)", {})), "raw.safetensors",
                    "header is not valid JSON");
  EXPECT_THROW_WITH(SafetensorsFile::open(raw("{\"x\xff\":1}", {})), "header is not valid JSON");
  EXPECT_THROW_WITH(SafetensorsFile::open(raw(std::string("{}\0 ", 4), {})), "header is not valid JSON",
                    "NUL byte at header offset 2");
  EXPECT_THROW_WITH(SafetensorsFile::open(raw("", {})), "header is not valid JSON");
  EXPECT_THROW_WITH(SafetensorsFile::open(raw("[1, 2]", {})), "header is not a JSON object but [1,2]");
  EXPECT_THROW_WITH(SafetensorsFile::open(raw(R"({"x":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]})", {})),
                    "header nests deeper than 16 levels");
  EXPECT_THROW_WITH(SafetensorsFile::open(raw(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                              R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                                              Bytes(4))),
                    "header names 'a' twice");
}

TEST_F(Safetensors, MalformedEntries) {
  const auto open_entry = [&](const std::string& entry, size_t data = 4) {
    return SafetensorsFile::open(raw(R"({"w":)" + entry + "}", Bytes(data)));
  };
  EXPECT_THROW_WITH(open_entry(R"({"dtype":"U8","shape":[4],"data_offsets":[0,4]})"), "raw.safetensors",
                    "tensor 'w'", "unknown dtype 'U8'");
  EXPECT_THROW_WITH(open_entry(R"({"dtype":"float32","shape":[1],"data_offsets":[0,4]})"), "tensor 'w'",
                    "unknown dtype 'float32'");
  EXPECT_THROW_WITH(open_entry(R"({"dtype":32,"shape":[1],"data_offsets":[0,4]})"), "tensor 'w'",
                    "dtype is not a string");
  EXPECT_THROW_WITH(open_entry(R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})"), "tensor 'w'",
                    "shape [-1] must hold non-negative integers");
  EXPECT_THROW_WITH(open_entry(R"({"dtype":"F32","shape":[1.0],"data_offsets":[0,4]})"), "tensor 'w'",
                    "shape [1.0] must hold non-negative integers");
  EXPECT_THROW_WITH(open_entry(R"({"dtype":"F32","shape":["1"],"data_offsets":[0,4]})"), "tensor 'w'",
                    "must hold non-negative integers");
  EXPECT_THROW_WITH(open_entry(R"({"dtype":"F32","shape":4,"data_offsets":[0,4]})"), "tensor 'w'",
                    "shape is not an array");
  EXPECT_THROW_WITH(open_entry(R"({"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,4]})"),
                    "tensor 'w'", "overflows");
  EXPECT_THROW_WITH(open_entry(R"({"dtype":"F32","shape":[1]})"), "tensor 'w'", "entry has no \"data_offsets\"");
  EXPECT_THROW_WITH(open_entry(R"([1,2,3])"), "tensor 'w'", "entry is not a JSON object");
  EXPECT_THROW_WITH(open_entry(R"({"dtype":"F32","shape":[1],"data_offsets":[0]})"), "tensor 'w'",
                    "data_offsets [0] must be two non-negative integers");
  EXPECT_THROW_WITH(open_entry(R"({"dtype":"F32","shape":[1],"data_offsets":[-4,0]})"), "tensor 'w'",
                    "must be two non-negative integers");
}

// Found by fuzzing (issue 13): a zero in the shape made the element count 0 whatever the other
// dimensions, so [0, 2^62, 4] passed and the contiguous strides (2^64) overflowed int64 in
// view() and load(). The product of the non-zero dimensions must fit.
TEST_F(Safetensors, ShapeWithAZeroMustStillHaveStridesThatFit) {
  const auto open_entry = [&](const std::string& shape) {
    return SafetensorsFile::open(raw(R"({"w":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[0,0]}})", {}));
  };
  EXPECT_THROW_WITH(open_entry("[0, 4611686018427387904, 4]"), "raw.safetensors", "tensor 'w'",
                    "shape [0,4611686018427387904,4] overflows");
  EXPECT_THROW_WITH(open_entry("[4611686018427387904, 4, 0]"), "tensor 'w'", "overflows");
  EXPECT_THROW_WITH(open_entry("[0, 9223372036854775807, 2]"), "tensor 'w'", "overflows");
  const SafetensorsFile file = open_entry("[0, 2305843009213693951, 4]");  // 2^63 - 4 fits
  EXPECT_EQ(file.view("w").strides(), (Shape{9223372036854775804, 4, 1}));
  EXPECT_EQ(file.load("w").numel(), 0);
}

TEST_F(Safetensors, OffsetsOutOfRangeOrInconsistent) {
  const auto open_entry = [&](const std::string& entry, size_t data) {
    return SafetensorsFile::open(raw(R"({"w":)" + entry + "}", Bytes(data)));
  };
  EXPECT_THROW_WITH(open_entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 4), "tensor 'w'",
                    "data_offsets [0, 8] run past the end of the 4-byte data section");
  EXPECT_THROW_WITH(open_entry(R"({"dtype":"F32","shape":[0],"data_offsets":[8,4]})", 8), "tensor 'w'",
                    "data_offsets [8, 4] end before they begin");
  EXPECT_THROW_WITH(open_entry(R"({"dtype":"F32","shape":[2,3],"data_offsets":[0,16]})", 16), "tensor 'w'",
                    "data_offsets [0, 16] hold 16 bytes but shape (2, 3) of F32 needs 24");
  EXPECT_THROW_WITH(open_entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 12),
                    "the data section has 12 bytes but the tensors end at byte 8");
}

TEST_F(Safetensors, TensorsMustTileTheDataSection) {
  EXPECT_THROW_WITH(SafetensorsFile::open(raw(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                                              R"("b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
                                              Bytes(24))),
                    "raw.safetensors", "tensors 'a' [0, 16) and 'b' [8, 24) overlap");
  EXPECT_THROW_WITH(SafetensorsFile::open(raw(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                              R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                              Bytes(8))),
                    "tensors 'a' [0, 8) and 'b' [0, 8) overlap");
  EXPECT_THROW_WITH(SafetensorsFile::open(raw(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                              R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                              Bytes(12))),
                    "bytes [4, 8) of the data section belong to no tensor (gap before 'b')");
}

TEST_F(Safetensors, MetadataMustMapStringsToStrings) {
  EXPECT_THROW_WITH(SafetensorsFile::open(raw(R"({"__metadata__":{"step":10}})", {})), "raw.safetensors",
                    "__metadata__ value of 'step' is not a string but 10");
  EXPECT_THROW_WITH(SafetensorsFile::open(raw(R"({"__metadata__":["a"]})", {})),
                    "__metadata__ is not a JSON object");
  EXPECT_EQ(SafetensorsFile::open(raw(R"({"__metadata__":{"k":"v"}})", {})).metadata().at("k"), "v");
}

TEST_F(Safetensors, BoolBytesOtherThanZeroOrOneAreRefusedOnAccess) {
  const std::string p = raw(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})", Bytes{1, 0, 2});
  const SafetensorsFile file = SafetensorsFile::open(p);
  EXPECT_THROW_WITH(file.view("m"), p, "tensor 'm': BOOL element 2 is byte 2, not 0 or 1");
  EXPECT_THROW_WITH(file.load("m"), "tensor 'm': BOOL element 2 is byte 2");
}

// Every single-byte corruption and every truncation of a valid file is either read or refused with
// nf::Error; nothing crashes, hangs or reads out of bounds (the ASan build checks the last part).
TEST_F(Safetensors, DamagedBytesNeverCrash) {
  save_safetensors(path("fuzz.safetensors"),
                   {{"w", Tensor::of({1, 2, 3, 4, 5, 6}, {2, 3})},
                    {"n", Tensor::from_vector<int32_t>({1, 2}, {2})},
                    {"m", Tensor::from_vector<bool>({true, false}, {2})}},
                   {{"k", "v"}});
  const Bytes valid = read_bytes(path("fuzz.safetensors"));
  const std::string p = path("damaged.safetensors");
  size_t opened = 0, refused = 0;
  const auto attempt = [&](const Bytes& bytes) {
    write_bytes(p, bytes);
    try {
      const SafetensorsFile file = SafetensorsFile::open(p);
      for (const auto& e : file.entries()) {
        try {
          (void)file.view(e.name).to_vector<double>();
          (void)file.load(e.name).to_vector<double>();
        } catch (const Error&) {  // a BOOL byte that is neither 0 nor 1
        }
      }
      ++opened;
    } catch (const Error&) {
      ++refused;
    }
  };
  for (size_t pos = 0; pos < valid.size(); ++pos) {
    for (unsigned char value : {static_cast<unsigned char>(valid[pos] ^ 0xff), static_cast<unsigned char>(valid[pos] + 1),
                                static_cast<unsigned char>('0'), static_cast<unsigned char>('9'), static_cast<unsigned char>('"')}) {
      Bytes damaged = valid;
      damaged[pos] = value;
      attempt(damaged);
    }
    attempt(Bytes(valid.begin(), valid.begin() + static_cast<std::ptrdiff_t>(pos)));
  }
  EXPECT_GT(opened, 0u) << "corrupting data bytes leaves a readable file";
  EXPECT_GT(refused, 0u);
}

}  // namespace
}  // namespace nf
