// Tensor checksums (io/tensor_checksums.h): the XXH3-64 of each tensor's bytes, recorded in the
// metadata and verified: an intact file passes; a flipped bit in one tensor, a checksum that was
// altered, one that is missing or malformed are each refused, naming the file and the tensor.
#include <xxhash.h>

#include <nlohmann/json.hpp>

#include "nanoformer/nanoformer.h"
#include "nanoformer/io/tensor_checksums.h"
#include "support/damaged_file.h"
#include "support/temp_dir.h"
#include "support/testing.h"

namespace nf::io {
namespace {

using Metadata = std::map<std::string, std::string>;

std::vector<std::pair<std::string, Tensor>> tensors() {
  Generator gen(3);
  return {{"a", randn({4, 5}, gen)}, {"b", Tensor::of({1, 2, 3}, {3}, DType::i64)}, {"c", randn({7}, gen)}};
}

// Writes tensors() with `edit` applied to the metadata that tensor_checksums gives.
std::string write(const testing::TempDir& dir, const std::function<void(nlohmann::json&)>& edit = {}) {
  nlohmann::json checksums = nlohmann::json::parse(tensor_checksums(tensors()));
  if (edit) edit(checksums);
  const std::string path = dir.file("t.safetensors");
  save_safetensors(path, tensors(), Metadata{{kChecksumsKey, checksums.dump()}});
  return path;
}

TEST(TensorChecksums, AreXXH3OfTheRowMajorBytes) {
  const auto t = tensors();
  const auto recorded = nlohmann::json::parse(tensor_checksums(t));
  ASSERT_EQ(recorded.size(), 3u);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(t[0].second.raw_data(), 20 * sizeof(float))));
  EXPECT_EQ(recorded.at("a"), hex);
  // a strided view is hashed as its row-major bytes
  const Tensor transposed = t[0].second.transpose(0, 1);
  EXPECT_EQ(nlohmann::json::parse(tensor_checksums({{"x", transposed}})).at("x"),
            nlohmann::json::parse(tensor_checksums({{"x", transposed.contiguous()}})).at("x"));
}

TEST(TensorChecksums, AnIntactFileVerifies) {
  testing::TempDir dir;
  const SafetensorsFile file = SafetensorsFile::open(write(dir));
  EXPECT_TRUE(has_tensor_checksums(file));
  EXPECT_NO_THROW(verify_tensor_checksums(file));
  EXPECT_NO_THROW(verify_tensor_checksums(file, {"c"}));
}

TEST(TensorChecksums, AFlippedBitIsNamed) {
  testing::TempDir dir;
  const std::string path = write(dir);
  testing::flip_lowest_bit(path, "c", 6);  // the last element
  const SafetensorsFile file = SafetensorsFile::open(path);
  EXPECT_THROW_WITH(verify_tensor_checksums(file), path, "tensor 'c' does not match its checksum", "damaged");
  EXPECT_NO_THROW(verify_tensor_checksums(file, {"a", "b"}));  // only what is read is checked
}

TEST(TensorChecksums, AlteredMissingOrMalformedChecksumsAreRefused) {
  testing::TempDir dir;
  EXPECT_THROW_WITH(verify_tensor_checksums(SafetensorsFile::open(write(dir, [](auto& j) { j["a"] = "0000000000000000"; }))),
                    "tensor 'a' does not match its checksum");
  EXPECT_THROW_WITH(verify_tensor_checksums(SafetensorsFile::open(write(dir, [](auto& j) { j.erase("b"); }))),
                    "tensor 'b' has no checksum");
  EXPECT_THROW_WITH(verify_tensor_checksums(SafetensorsFile::open(write(dir, [](auto& j) { j["c"] = "zz00000000000000"; }))),
                    "checksum of tensor 'c'", "not 16 hex digits");
  EXPECT_THROW_WITH(verify_tensor_checksums(SafetensorsFile::open(write(dir, [](auto& j) { j = nlohmann::json::array(); }))),
                    "'checksums' is not a JSON object");
  const std::string plain = dir.file("plain.safetensors");
  save_safetensors(plain, tensors());
  EXPECT_FALSE(has_tensor_checksums(SafetensorsFile::open(plain)));
  EXPECT_THROW_WITH(verify_tensor_checksums(SafetensorsFile::open(plain)), plain, "no checksums");
  EXPECT_THROW_WITH(verify_tensor_checksums(SafetensorsFile::open(write(dir)), {"nope"}), "nope");
}

}  // namespace
}  // namespace nf::io
