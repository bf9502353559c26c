// GGUF: the fixtures of the reference writer (tools/gguf/make_gguf_fixtures.py, the `gguf` Python
// package) read back key by key and byte by byte; our writer gives their exact bytes; views are
// zero-copy; and every truncated, corrupt or lying file is refused with one line naming the file
// and the key or tensor (plus a byte-damaging loop that must never crash).
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "nanoformer/io/gguf.h"
#include "support/temp_dir.h"
#include "support/testing.h"

namespace nf {
namespace {

using io::GGUFFile;
using io::GGUFTensorSource;
using io::GGUFValue;
using json = nlohmann::json;
using Bytes = std::vector<unsigned char>;
using Metadata = std::vector<std::pair<std::string, GGUFValue>>;

const std::string kFixtures = std::string(NF_TEST_DATA_DIR) + "/gguf/";
const char* const kReadable[] = {"metadata.gguf", "tensors.gguf", "align8.gguf"};

Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const Bytes& bytes) {
  std::filesystem::remove(path);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// "" when the files hold the same bytes, else where they first differ (a readable failure).
std::string difference(const Bytes& actual, const Bytes& expected) {
  const size_t n = std::min(actual.size(), expected.size());
  for (size_t i = 0; i < n; ++i) {
    if (actual[i] != expected[i])
      return "byte " + std::to_string(i) + " is " + std::to_string(actual[i]) + ", expected " + std::to_string(expected[i]);
  }
  if (actual.size() != expected.size())
    return std::to_string(actual.size()) + " bytes, expected " + std::to_string(expected.size());
  return "";
}

const json& fixtures() {
  static const json j = json::parse(std::ifstream(kFixtures + "fixtures.json"));
  return j;
}

Bytes from_hex(const std::string& hex) {
  Bytes out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<unsigned char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

template <class T>
T json_item(const json& v) {
  if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(v.get<double>());
  } else {
    return v.get<T>();
  }
}

// Calls fn(T{}) with the C++ type of a GGUF value type name ("u8", ..., "f64").
template <class F>
auto with_type(const std::string& name, F&& fn) {
  if (name == "u8") return fn(uint8_t{});
  if (name == "i8") return fn(int8_t{});
  if (name == "u16") return fn(uint16_t{});
  if (name == "i16") return fn(int16_t{});
  if (name == "u32") return fn(uint32_t{});
  if (name == "i32") return fn(int32_t{});
  if (name == "f32") return fn(float{});
  if (name == "bool") return fn(bool{});
  if (name == "string") return fn(std::string{});
  if (name == "u64") return fn(uint64_t{});
  if (name == "i64") return fn(int64_t{});
  if (name == "f64") return fn(double{});
  throw std::runtime_error("fixtures.json: unknown type " + name);
}

// A metadata entry of fixtures.json as the value the file holds.
GGUFValue value_from_json(const json& entry) {
  if (entry["type"] != "array") {
    return with_type(entry["type"], [&](auto t) { return GGUFValue(json_item<decltype(t)>(entry["value"])); });
  }
  return with_type(entry["item_type"], [&](auto t) {
    std::vector<decltype(t)> items;
    for (const json& v : entry["value"]) items.push_back(json_item<decltype(t)>(v));
    return GGUFValue(std::move(items));
  });
}

QuantType type_from_json(const json& tensor) { return quant_type_from_name(tensor["type"].get<std::string>()); }

Shape shape_from_json(const json& tensor) { return tensor["shape"].get<Shape>(); }

// The fixture's metadata and tensors as our writer takes them, built from fixtures.json alone.
std::pair<Metadata, std::vector<GGUFTensorSource>> sources_from_json(const json& fixture) {
  Metadata metadata;
  for (const json& entry : fixture["metadata"]) metadata.emplace_back(entry["key"], value_from_json(entry));
  std::vector<GGUFTensorSource> tensors;
  for (const json& t : fixture["tensors"]) {
    const Bytes bytes = from_hex(t["hex"]);
    GGUFTensorSource source;
    source.name = t["name"];
    const QuantType type = type_from_json(t);
    const Shape shape = shape_from_json(t);
    void* data = nullptr;
    if (is_block_quantized(type)) {
      source.quantized = QuantizedTensor::empty(type, shape.at(0), shape.at(1));
      data = source.quantized.mutable_data();
    } else {
      const DType dtype = type == QuantType::f32 ? DType::f32 : type == QuantType::f16 ? DType::f16 : DType::bf16;
      source.dense = Tensor::empty(shape, dtype);
      data = source.dense.raw_data();
    }
    if (!bytes.empty()) std::memcpy(data, bytes.data(), bytes.size());
    tensors.push_back(std::move(source));
  }
  return {metadata, tensors};
}

const unsigned char* bytes_of(const QuantizedTensor& q) { return static_cast<const unsigned char*>(q.data()); }
const unsigned char* bytes_of(const Tensor& t) { return static_cast<const unsigned char*>(t.raw_data()); }

class GGUF : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return dir_.file(name); }

  // Writes `bytes` as `name` and expects opening it to fail with one line that starts with the
  // path and holds every one of `parts`.
  void expect_refused(const Bytes& bytes, const std::vector<std::string>& parts, const std::string& name = "bad.gguf") {
    const std::string p = path(name);
    write_bytes(p, bytes);
    try {
      GGUFFile::open(p);
      ADD_FAILURE() << "opened a bad file; expected an error with " << parts.front();
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind(p + ": ", 0), 0u) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      for (const std::string& part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
    }
  }

  testing::TempDir dir_;
};

// Positions in a fixture's bytes, found by the names they hold.
size_t find(const Bytes& bytes, const std::string& text, size_t from = 0) {
  const auto it = std::search(bytes.begin() + static_cast<std::ptrdiff_t>(from), bytes.end(), text.begin(), text.end());
  if (it == bytes.end()) throw std::runtime_error("no '" + text + "' in the fixture");
  return static_cast<size_t>(it - bytes.begin());
}
size_t after(const Bytes& bytes, const std::string& text) { return find(bytes, text) + text.size(); }

template <class T>
void put(Bytes& bytes, size_t pos, T value) {
  std::memcpy(bytes.data() + pos, &value, sizeof value);
}
template <class T>
T get(const Bytes& bytes, size_t pos) {
  T value;
  std::memcpy(&value, bytes.data() + pos, sizeof value);
  return value;
}

// The fields of a tensor info, after its name.
struct InfoAt {
  size_t n_dims, dims, type, offset;
};
InfoAt info_at(const Bytes& bytes, const std::string& name) {
  const size_t n_dims = after(bytes, name);
  const size_t type = n_dims + 4 + 8 * get<uint32_t>(bytes, n_dims);
  return {n_dims, n_dims + 4, type, type + 4};
}

TEST_F(GGUF, ReadsEveryKeyAndTensorByteOfTheReferenceWritersFiles) {
  for (const char* name : kReadable) {
    SCOPED_TRACE(name);
    const json& fixture = fixtures()[name];
    const GGUFFile file = GGUFFile::open(kFixtures + name);
    EXPECT_EQ(file.version(), fixture["version"]);
    EXPECT_EQ(file.alignment(), fixture["alignment"]);
    ASSERT_EQ(file.keys().size(), fixture["metadata"].size());
    EXPECT_EQ(file.metadata().size(), fixture["metadata"].size());
    for (size_t i = 0; i < file.keys().size(); ++i) {
      const json& entry = fixture["metadata"][i];
      EXPECT_EQ(file.keys()[i], entry["key"]);
      EXPECT_TRUE(file.get(entry["key"]) == value_from_json(entry)) << entry.dump();
    }
    ASSERT_EQ(file.tensors().size(), fixture["tensors"].size());
    for (size_t i = 0; i < file.tensors().size(); ++i) {
      const json& t = fixture["tensors"][i];
      const io::GGUFTensorInfo& info = file.tensors()[i];
      SCOPED_TRACE(info.name);
      EXPECT_EQ(info.name, t["name"]);
      EXPECT_EQ(&file.tensor(info.name), &info);
      EXPECT_EQ(info.type, type_from_json(t));
      EXPECT_EQ(info.shape, shape_from_json(t));
      EXPECT_EQ(info.offset, t["offset"]);
      EXPECT_EQ(info.nbytes, t["nbytes"]);
      const Bytes expected = from_hex(t["hex"]);
      const QuantizedTensor q = file.quantized(info.name);
      ASSERT_EQ(q.nbytes(), expected.size());
      EXPECT_TRUE(std::equal(expected.begin(), expected.end(), bytes_of(q)));
      if (!is_block_quantized(info.type)) {
        const Tensor d = file.dense(info.name);
        EXPECT_EQ(d.shape(), info.shape);
        EXPECT_EQ(d.name(), info.name);
        EXPECT_TRUE(std::equal(expected.begin(), expected.end(), bytes_of(d)));
      }
    }
  }
}

TEST_F(GGUF, TensorsReadAsTheirShapeAndValues) {
  const GGUFFile file = GGUFFile::open(kFixtures + "tensors.gguf");
  const QuantizedTensor q = file.quantized("blk.0.attn_q.weight");
  EXPECT_EQ(q.type(), QuantType::q8_0);
  EXPECT_EQ(q.rows(), 3);
  EXPECT_EQ(q.cols(), 64);
  const QuantizedTensor cube = file.quantized("cube");  // outer sizes flattened into rows
  EXPECT_EQ(cube.rows(), 6);
  EXPECT_EQ(cube.cols(), 4);
  EXPECT_EQ(file.dense("scalar").dim(), 0);
  EXPECT_DOUBLE_EQ(file.dense("scalar").item(), 2.5);
  EXPECT_EQ(file.dense("empty").shape(), (Shape{0, 4}));
  EXPECT_EQ(file.dense("half").dtype(), DType::f16);
  EXPECT_EQ(file.dense("brain").dtype(), DType::bf16);
  EXPECT_THROW_WITH(file.dense("blk.0.ffn_up.weight"), "tensors.gguf: tensor 'blk.0.ffn_up.weight' is q4_0",
                    "read it as a QuantizedTensor");
}

TEST_F(GGUF, WritesTheBytesOfTheReferenceWriter) {
  for (const char* name : kReadable) {
    SCOPED_TRACE(name);
    const auto [metadata, tensors] = sources_from_json(fixtures()[name]);
    io::write_gguf(path(name), metadata, tensors);
    EXPECT_EQ(difference(read_bytes(path(name)), read_bytes(kFixtures + name)), "");
  }
}

TEST_F(GGUF, ReadThenWrittenBackGivesTheSameBytes) {
  for (const char* name : kReadable) {
    SCOPED_TRACE(name);
    const GGUFFile file = GGUFFile::open(kFixtures + name);
    Metadata metadata;
    for (const std::string& key : file.keys()) metadata.emplace_back(key, file.get(key));
    std::vector<GGUFTensorSource> tensors;
    for (const io::GGUFTensorInfo& info : file.tensors()) {
      GGUFTensorSource source;
      source.name = info.name;
      if (is_block_quantized(info.type)) {
        source.quantized = file.quantized(info.name);
      } else {
        source.dense = file.dense(info.name);
      }
      tensors.push_back(std::move(source));
    }
    io::write_gguf(path(name), metadata, tensors);
    EXPECT_EQ(difference(read_bytes(path(name)), read_bytes(kFixtures + name)), "");
  }
}

TEST_F(GGUF, ViewsAreZeroCopyAndKeepTheMappingAlive) {
  QuantizedTensor q;
  Tensor d;
  const size_t before = memory::current_bytes();
  {
    const GGUFFile file = GGUFFile::open(kFixtures + "tensors.gguf");
    q = file.quantized("blk.0.attn_q.weight");
    d = file.dense("token_embd.weight");
  }
  EXPECT_EQ(memory::current_bytes(), before);  // external memory is not counted: nothing was allocated
  EXPECT_FALSE(q.storage()->owns_memory());
  EXPECT_FALSE(d.storage()->owns_memory());
  const json& fixture = fixtures()["tensors.gguf"];
  const Bytes q_bytes = from_hex(fixture["tensors"][6]["hex"]);
  EXPECT_TRUE(std::equal(q_bytes.begin(), q_bytes.end(), bytes_of(q)));  // the mapping outlives the file
  const Bytes d_bytes = from_hex(fixture["tensors"][0]["hex"]);
  EXPECT_TRUE(std::equal(d_bytes.begin(), d_bytes.end(), bytes_of(d)));
}

TEST_F(GGUF, BytesNotAlignedForTheirTypeAreCopied) {
  // general.alignment 1 puts tensors at any address; a key of 0 to 3 bytes moves them through every
  // residue mod 4. Misaligned bytes must be copied (never read through a float*), aligned ones viewed.
  QuantizedTensor q = QuantizedTensor::empty(QuantType::q8_0, 1, 32);
  for (size_t i = 0; i < q.nbytes(); ++i) static_cast<unsigned char*>(q.mutable_data())[i] = static_cast<unsigned char>(i);
  for (size_t shift = 0; shift < 4; ++shift) {
    SCOPED_TRACE(shift);
    io::write_gguf(path("a1.gguf"), {{"general.alignment", uint32_t{1}}, {"s", std::string(shift, 'x')}},
                   {{"one", Tensor::of({0}, {1}, DType::f16), {}}, {"odd", Tensor::of({1, 2, 3}, {3}), {}}, {"q", Tensor(), q}});
    const size_t data_start = read_bytes(path("a1.gguf")).size() - 2 - 12 - q.nbytes();
    const GGUFFile file = GGUFFile::open(path("a1.gguf"));
    EXPECT_EQ(file.tensor("odd").offset, 2u);
    EXPECT_EQ(file.tensor("q").offset, 14u);
    const Tensor t = file.dense("odd");
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 4, 0u);
    EXPECT_EQ(t.storage()->owns_memory(), (data_start + 2) % 4 != 0);
    EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3}));
    const QuantizedTensor read = file.quantized("q");
    EXPECT_EQ(reinterpret_cast<uintptr_t>(read.data()) % 2, 0u);
    EXPECT_EQ(read.storage()->owns_memory(), (data_start + 14) % 2 != 0);
    EXPECT_EQ(std::memcmp(read.data(), q.data(), q.nbytes()), 0);
  }
}

TEST_F(GGUF, TypedMetadataAccessors) {
  const GGUFFile file = GGUFFile::open(kFixtures + "metadata.gguf");
  const std::string at = kFixtures + "metadata.gguf: ";
  EXPECT_EQ(file.get_string("general.architecture"), "llama");
  EXPECT_EQ(file.get_int("test.u8"), 200);
  EXPECT_EQ(file.get_int("test.i64"), INT64_MIN);
  EXPECT_EQ(file.get_int("test.u32"), 4'000'000'000);
  EXPECT_FLOAT_EQ(static_cast<float>(file.get_float("test.f32")), 0.1f);
  EXPECT_DOUBLE_EQ(file.get_float("test.f64"), 1.0 / 3);
  EXPECT_TRUE(file.get_bool("test.bool_true"));
  EXPECT_FALSE(file.get_bool("test.bool_false"));
  EXPECT_TRUE(file.has("tokenizer.ggml.tokens"));
  EXPECT_EQ(std::get<std::vector<std::string>>(file.get("tokenizer.ggml.tokens"))[3], "a\nb");
  EXPECT_THROW_WITH(file.get_int("test.u64"), at + "key 'test.u64' is 18446744073709551615, beyond int64");
  EXPECT_THROW_WITH(file.get_int("test.f32"), at + "key 'test.f32' is f32, not an integer");
  EXPECT_THROW_WITH(file.get_string("test.array.u8"), at + "key 'test.array.u8' is array of u8, not a string");
  EXPECT_THROW_WITH(file.get_float("test.i8"), at + "key 'test.i8' is i8, not f32 or f64");
  EXPECT_THROW_WITH(file.get_bool("test.u8"), at + "key 'test.u8' is u8, not a bool");
  EXPECT_THROW_WITH(file.get("llama.block_count"), at + "no metadata key 'llama.block_count'");
  EXPECT_THROW_WITH(file.tensor("nope"), at + "no tensor named 'nope' (the file holds 1 tensors: output_norm.weight)");
}

TEST_F(GGUF, NotAGGUFFileOrAnotherVersion) {
  const Bytes good = read_bytes(kFixtures + "tensors.gguf");
  expect_refused(Bytes{}, {"not a GGUF file"});
  expect_refused(Bytes{'G', 'G'}, {"not a GGUF file"});
  Bytes magic = good;
  magic[3] = 'X';
  expect_refused(magic, {"not a GGUF file (it does not start with the bytes 'GGUF')"});
  expect_refused(Bytes(good.begin(), good.begin() + 20), {"the file is 20 bytes, too short for the 24-byte GGUF header"});
  Bytes version = good;
  put<uint32_t>(version, 4, 1);
  expect_refused(version, {"GGUF version 1 is not supported (nanoformer reads versions 2 and 3)"});
  put<uint32_t>(version, 4, 0x03000000);
  expect_refused(version, {"GGUF version 50331648 is not supported", "this looks like a big-endian file"});
  put<uint32_t>(version, 4, 2);  // version 2 reads as 3 does
  write_bytes(path("v2.gguf"), version);
  EXPECT_EQ(GGUFFile::open(path("v2.gguf")).version(), 2u);
  EXPECT_THROW_WITH(GGUFFile::open(path("missing.gguf")), path("missing.gguf") + ": cannot open");
  EXPECT_THROW_WITH(GGUFFile::open(dir_.path().string()), dir_.path().string() + ": not a regular file");
}

TEST_F(GGUF, TruncatedAnywhereIsRefusedUpToTheLastTensorsBytes) {
  for (const char* name : kReadable) {
    SCOPED_TRACE(name);
    const json& fixture = fixtures()[name];
    const Bytes good = read_bytes(kFixtures + name);
    // The writer pads every tensor; the file is whole up to the end of the last tensor's bytes.
    size_t padded = 0, last_end = 0;
    const uint64_t alignment = fixture["alignment"];
    for (const json& t : fixture["tensors"]) {
      padded += (t["nbytes"].get<size_t>() + alignment - 1) / alignment * alignment;
      last_end = std::max(last_end, t["offset"].get<size_t>() + t["nbytes"].get<size_t>());
    }
    const size_t whole = good.size() - padded + last_end;
    for (size_t cut = 0; cut < good.size(); ++cut) {
      const Bytes truncated(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut));
      write_bytes(path("cut.gguf"), truncated);
      if (cut >= whole) {
        EXPECT_NO_THROW(GGUFFile::open(path("cut.gguf"))) << cut;
        continue;
      }
      try {
        GGUFFile::open(path("cut.gguf"));
        ADD_FAILURE() << "a file cut at " << cut << " of " << good.size() << " bytes opened";
      } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind(path("cut.gguf") + ": ", 0), 0u) << e.what();
      }
    }
  }
}

TEST_F(GGUF, CountsAndLengthsBeyondTheFileAreRefusedBeforeAllocating) {
  const Bytes good = read_bytes(kFixtures + "metadata.gguf");
  Bytes b = good;
  put<uint64_t>(b, 16, uint64_t{1} << 60);  // kv_count
  expect_refused(b, {"the header counts 1152921504606846976 keys and 1 tensors, more than the ",
                     " bytes after it can hold (at least 13 bytes a key, 24 a tensor; truncated or corrupt?)"});
  b = good;
  put<uint64_t>(b, 8, 100);  // tensor_count: 2,400 bytes of infos in a 1,312-byte file
  expect_refused(b, {"the header counts 29 keys and 100 tensors, more than the 1288 bytes after it can hold"});
  b = good;
  put<uint64_t>(b, 24, ~uint64_t{0});  // the first key's length
  expect_refused(b, {"key #0 is 18446744073709551615 bytes long but the file ends 1280 bytes after its length"});
  b = good;
  const size_t count = after(b, "tokenizer.ggml.tokens") + 4 + 4;  // value type, item type, then the count
  put<uint64_t>(b, count, uint64_t{1} << 40);
  expect_refused(b, {"key 'tokenizer.ggml.tokens' is an array of 1099511627776 string, which needs at least 8 bytes "
                     "each, but the file ends "});
  b = good;
  put<uint64_t>(b, count, 5);
  put<uint64_t>(b, count + 8 + 8 + 3, 1000);  // the second token's length (after the count and "<s>")
  expect_refused(b, {"key 'tokenizer.ggml.tokens' item 1 is 1000 bytes long but the file ends"});
}

TEST_F(GGUF, BadValuesAreRefusedNamingTheKey) {
  const Bytes good = read_bytes(kFixtures + "metadata.gguf");
  Bytes b = good;
  put<uint32_t>(b, after(b, "test.u8"), 13);
  expect_refused(b, {"key 'test.u8' has value type 13, which GGUF does not define (0-12)"});
  b = good;
  put<uint32_t>(b, after(b, "test.array.u8") + 4, 77);
  expect_refused(b, {"key 'test.array.u8' is an array of value type 77, which GGUF does not define"});
  b = good;
  b[after(b, "test.bool_true") + 4] = 2;
  expect_refused(b, {"key 'test.bool_true' holds the bool byte 2, not 0 or 1"});
  b = good;
  b[after(b, "test.array.bool") + 4 + 4 + 8 + 1] = 7;
  expect_refused(b, {"key 'test.array.bool' item 1 holds the bool byte 7, not 0 or 1"});
  b = good;
  std::memcpy(b.data() + find(b, "test.i8"), "test.u8", 7);
  expect_refused(b, {"key 'test.u8' appears twice"});
  b = good;  // the first key's name cut to nothing (our writer refuses to write one)
  put<uint64_t>(b, 24, 0);
  b.erase(b.begin() + 32, b.begin() + 32 + 20);
  expect_refused(b, {"key #0 has an empty name"});
  expect_refused(read_bytes(kFixtures + "nested_array.gguf"),
                 {"key 'test.nested' is an array of arrays, which nanoformer (like llama.cpp) does not read"});
}

TEST_F(GGUF, AlignmentMustBeAU32PowerOfTwo) {
  const Bytes good = read_bytes(kFixtures + "align8.gguf");
  const size_t type = after(good, "general.alignment");
  Bytes b = good;
  put<uint32_t>(b, type + 4, 12);
  expect_refused(b, {"general.alignment is 12, not a power of two"});
  put<uint32_t>(b, type + 4, 0);
  expect_refused(b, {"general.alignment is 0, not a power of two"});
  b = good;
  put<uint32_t>(b, type, 5);  // i32
  expect_refused(b, {"general.alignment is i32, not u32"});
}

TEST_F(GGUF, BadTensorInfosAreRefusedNamingTheTensor) {
  const Bytes good = read_bytes(kFixtures + "tensors.gguf");
  const InfoAt q = info_at(good, "blk.0.attn_q.weight");
  Bytes b = good;
  put<uint32_t>(b, q.type, 20);
  expect_refused(b, {"tensor 'blk.0.attn_q.weight' has type 20 (iq4_nl), which nanoformer does not read"},
                 "model.gguf");
  try {  // the whole line, as a user sees it
    GGUFFile::open(path("model.gguf"));
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              path("model.gguf") + ": tensor 'blk.0.attn_q.weight' has type 20 (iq4_nl), which nanoformer does not read");
  }
  put<uint32_t>(b, q.type, 99);
  expect_refused(b, {"tensor 'blk.0.attn_q.weight' has type 99, which is not a GGML type"});
  b = good;
  put<uint64_t>(b, q.dims, 48);
  expect_refused(b, {"tensor 'blk.0.attn_q.weight' has rows of 48 values, not a whole number of q8_0 blocks of 32"});
  b = good;
  put<uint32_t>(b, q.n_dims, 5);
  expect_refused(b, {"tensor 'blk.0.attn_q.weight' has 5 dimensions; GGUF allows at most 4"});

  const InfoAt cube = info_at(good, "cube");
  b = good;
  for (int d = 0; d < 3; ++d) put<uint64_t>(b, cube.dims + 8 * d, uint64_t{1} << 40);
  expect_refused(b, {"tensor 'cube' has dimensions [1099511627776, 1099511627776, 1099511627776] (innermost first), "
                     "whose product overflows int64"});
  b = good;
  put<uint64_t>(b, cube.dims, uint64_t{1} << 61);
  put<uint64_t>(b, cube.dims + 8, 2);
  put<uint64_t>(b, cube.dims + 16, 1);
  expect_refused(b, {"tensor 'cube' of f32 with dimensions [2305843009213693952, 2, 1] (innermost first) would take "
                     "more than 2^63 bytes"});
  b = good;  // a name cut to nothing (found by fuzz_gguf: our writer refused to write the file back)
  put<uint64_t>(b, find(b, "cube") - 8, 0);
  b.erase(b.begin() + static_cast<std::ptrdiff_t>(find(b, "cube")), b.begin() + static_cast<std::ptrdiff_t>(find(b, "cube") + 4));
  expect_refused(b, {"tensor #3 has an empty name"});
  b = good;
  std::memcpy(b.data() + find(b, "half"), "cube", 4);
  expect_refused(b, {"tensor 'cube' appears twice"});
  b = good;
  b[find(b, "cube") + 2] = '\n';
  put<uint32_t>(b, cube.type, 99);
  expect_refused(b, {"tensor 'cu\\x0ae' has type 99"});  // control bytes escaped: still one line
}

TEST_F(GGUF, TensorsMustBeAlignedInsideTheDataSectionAndApart) {
  const Bytes good = read_bytes(kFixtures + "tensors.gguf");
  const InfoAt q = info_at(good, "blk.0.attn_q.weight");
  const InfoAt up = info_at(good, "blk.0.ffn_up.weight");
  const auto q_offset = get<uint64_t>(good, q.offset);
  Bytes b = good;
  put<uint64_t>(b, q.offset, q_offset + 2);
  expect_refused(b, {"tensor 'blk.0.attn_q.weight' has offset " + std::to_string(q_offset + 2) +
                     ", not a multiple of the alignment 32"});
  b = good;
  put<uint64_t>(b, up.offset, q_offset + 192);
  expect_refused(b, {"tensors 'blk.0.attn_q.weight' (bytes [" + std::to_string(q_offset) + ", " +
                     std::to_string(q_offset + 204) + ")) and 'blk.0.ffn_up.weight' (bytes [" +
                     std::to_string(q_offset + 192) + ", " + std::to_string(q_offset + 192 + 36) + ")) overlap"});
  b = good;
  put<uint64_t>(b, up.offset, uint64_t{1} << 62);
  expect_refused(b, {"tensor 'blk.0.ffn_up.weight' has 36 bytes at offset 4611686018427387904, past the end of the ",
                     "-byte data section (file truncated?)"});
  // A tensor of no bytes shares its offset with the next one, as the reference writer places it.
  const GGUFFile file = GGUFFile::open(kFixtures + "tensors.gguf");
  EXPECT_EQ(file.tensor("empty").offset, file.tensor("cube").offset);
}

TEST_F(GGUF, DamagedBytesNeverCrash) {
  // Every byte of the header and tensor infos set to a few values: open either refuses the file
  // naming it or reads a file whose tensors all lie inside it.
  const Bytes good = read_bytes(kFixtures + "tensors.gguf");
  const size_t header_end = after(good, "blk.0.ffn_up.weight") + 4 + 16 + 4 + 8;
  for (size_t i = 0; i < header_end; ++i) {
    for (const unsigned char value : {0x00, 0x01, 0x7f, 0xff}) {
      if (good[i] == value) continue;
      Bytes b = good;
      b[i] = value;
      write_bytes(path("damaged.gguf"), b);
      try {
        const GGUFFile file = GGUFFile::open(path("damaged.gguf"));
        for (const io::GGUFTensorInfo& info : file.tensors()) {
          const QuantizedTensor q = file.quantized(info.name);
          ASSERT_EQ(q.nbytes(), info.nbytes);
          ASSERT_LE(info.offset + info.nbytes, b.size());
        }
      } catch (const Error& e) {
        ASSERT_EQ(std::string(e.what()).rfind(path("damaged.gguf") + ": ", 0), 0u) << e.what();
      }
    }
  }
}

TEST_F(GGUF, WriterRefusesBadInputBeforeCreatingTheFile) {
  const std::string p = path("out.gguf");
  const Tensor w = Tensor::of({1, 2}, {2});
  EXPECT_THROW_WITH(io::write_gguf(p, {{"a", uint8_t{1}}, {"a", uint8_t{2}}}, {}), p + ": key 'a' is given twice");
  EXPECT_THROW_WITH(io::write_gguf(p, {{"", uint8_t{1}}}, {}), p + ": a metadata key is empty");
  EXPECT_THROW_WITH(io::write_gguf(p, {{"general.alignment", uint32_t{48}}}, {}),
                    p + ": general.alignment is 48, not a power of two");
  EXPECT_THROW_WITH(io::write_gguf(p, {{"general.alignment", int32_t{32}}}, {}), p + ": general.alignment is i32, not u32");
  EXPECT_THROW_WITH(io::write_gguf(p, {}, {{"w", w, {}}, {"w", w, {}}}), p + ": tensor 'w' is given twice");
  EXPECT_THROW_WITH(io::write_gguf(p, {}, {{std::string(64, 'n'), w, {}}}), "has 64 bytes; llama.cpp reads at most 63");
  EXPECT_THROW_WITH(io::write_gguf(p, {}, {{"i", Tensor::from_vector<int32_t>({1}, {1}), {}}}),
                    p + ": tensor 'i' is i32; GGUF tensors here are f32, f16, bf16 or quantised");
  EXPECT_THROW_WITH(io::write_gguf(p, {}, {{"five", zeros({1, 1, 1, 1, 1}), {}}}),
                    p + ": tensor 'five' has 5 dimensions; GGUF allows at most 4");
  EXPECT_THROW_WITH(io::write_gguf(p, {}, {{"none", Tensor(), {}}}),
                    p + ": tensor 'none' must hold exactly one of a dense tensor and a quantised one");
  EXPECT_FALSE(std::filesystem::exists(p));
  EXPECT_TRUE(std::filesystem::is_empty(dir_.path()));  // no temporary left behind either
}

TEST_F(GGUF, WritesEmptyStringsAndArraysThatLlamaCppReads) {
  // GGUFWriter refuses empty arrays; llama.cpp reads them, and so do we.
  io::write_gguf(path("e.gguf"), {{"s", std::string()}, {"a", std::vector<std::string>{}}, {"f", std::vector<float>{}}},
                 {{"t", Tensor::of({1, 2, 3}, {1, 3}).transpose(0, 1), {}}});  // written contiguous
  const GGUFFile file = GGUFFile::open(path("e.gguf"));
  EXPECT_EQ(file.get_string("s"), "");
  EXPECT_TRUE(std::get<std::vector<std::string>>(file.get("a")).empty());
  EXPECT_TRUE(std::get<std::vector<float>>(file.get("f")).empty());
  EXPECT_EQ(file.dense("t").shape(), (Shape{3, 1}));
  EXPECT_EQ(file.dense("t").to_vector<float>(), (std::vector<float>{1, 2, 3}));
}

}  // namespace
}  // namespace nf
