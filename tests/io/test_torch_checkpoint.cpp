// PyTorch checkpoints (io/torch_checkpoint.h) against files torch.save wrote
// (tools/golden/torch_checkpoint_fixtures.py): every tensor equal bit for bit to what torch held
// (its safetensors copy), in every dtype and layout (transposed, strided, a slice sharing a storage
// at an offset, 0-d, empty, a Parameter), with pickle protocols 2 and 4, an OrderedDict or a plain
// dict; and the files that must be refused, each by a message naming the file and the cause: the
// legacy format, a nested checkpoint, a storage shorter than its tensors, any truncation, and
// flipped bytes (which must never crash).
#include "nanoformer/io/torch_checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <cstring>
#include <fstream>
#include <random>

#include "io/torch_pickle.h"
#include "nanoformer/io/safetensors.h"
#include "support/temp_dir.h"
#include "support/testing.h"

namespace nf {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) { return std::string(NF_GOLDEN_DIR) + "/torch_checkpoint/" + name; }

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void expect_same_bits(const Tensor& got, const Tensor& want, const std::string& name) {
  EXPECT_EQ(got.dtype(), want.dtype()) << name;
  EXPECT_EQ(got.shape(), want.shape()) << name;
  EXPECT_TRUE(got.is_contiguous()) << name;
  ASSERT_EQ(got.numel(), want.numel()) << name;
  EXPECT_EQ(std::memcmp(got.raw_data(), want.contiguous().raw_data(), static_cast<size_t>(got.numel()) * dtype_size(got.dtype())), 0)
      << name;
}

TEST(TorchCheckpoint, EveryTensorEqualsWhatTorchSaved) {
  const auto expected = io::load_safetensors(fixture("expected.safetensors"));
  for (const char* file : {"state.pt", "state_protocol4.pt"}) {
    const auto got = io::load_torch_checkpoint(fixture(file));
    ASSERT_EQ(got.size(), 14u) << file;
    for (const auto& [name, tensor] : got) {
      ASSERT_TRUE(expected.count(name)) << file << ": " << name;
      expect_same_bits(tensor, expected.at(name), std::string(file) + ": " + name);
    }
  }
  const auto halves = io::load_torch_checkpoint(fixture("halves.pth"));
  ASSERT_EQ(halves.size(), 2u);
  for (const auto& [name, tensor] : halves) expect_same_bits(tensor, expected.at("halves." + name), name);
  EXPECT_EQ(halves.at("norm.weight").dtype(), DType::f16);
}

TEST(TorchCheckpoint, FilesThatAreNotAStateDictAreRefusedByName) {
  EXPECT_THROW_WITH(io::load_torch_checkpoint(fixture("legacy.pt")), "legacy.pt", "legacy torch.save format");
  EXPECT_THROW_WITH(io::load_torch_checkpoint(fixture("nested.pt")), "nested.pt", "'model' is not a tensor");
  EXPECT_THROW_WITH(io::load_torch_checkpoint(fixture("short_storage.pt")), "short_storage.pt", "should be");
  EXPECT_THROW_WITH(io::load_torch_checkpoint(fixture("missing.pt")), "missing.pt");
  EXPECT_THROW_WITH(io::load_torch_checkpoint(fixture("expected.safetensors")), "not a zip archive");
}

// A pickle may put a list inside itself, or nest tuples two million deep: refused as no state
// dict, without a leak (ASan) and without a recursion as deep as the nesting when freed.
TEST(TorchPickle, CyclesAndDeepNestingAreFreedAndRefused) {
  const auto refused = [](const std::string& pickle) {
    EXPECT_THROW_WITH(io::read_pickled_state_dict(reinterpret_cast<const unsigned char*>(pickle.data()), pickle.size(), "p.pkl"),
                      "p.pkl", "no dict of tensors");
  };
  refused(std::string("\x80\x02]q\x00h\x00" "a.", 9));  // L = []; L.append(L)
  // (((),),),... two million deep, only the outermost on the stack
  refused(std::string("\x80\x02)", 3) + std::string(2000000, '\x85') + ".");
}

// Every prefix of the file is refused (the directory is at its end), and flipped bytes either load
// or are refused, never crash; both through the one entry point.
TEST(TorchCheckpoint, TruncatedOrDamagedFilesNeverCrash) {
  testing::TempDir dir;
  const std::vector<char> good = read_bytes(fixture("state.pt"));
  const std::string path = dir.file("damaged.pt");
  for (size_t length = 0; length < good.size(); length += 97) {
    write_bytes(path, std::vector<char>(good.begin(), good.begin() + static_cast<ptrdiff_t>(length)));
    EXPECT_THROW(io::load_torch_checkpoint(path), Error) << length << " bytes";
  }
  std::mt19937 rng(5);
  int refused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<char> bad = good;
    for (int k = 0; k < 3; ++k) bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
    write_bytes(path, bad);
    try {
      io::load_torch_checkpoint(path);
    } catch (const Error&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace nf
