// What verifying checksums costs when a checkpoint loads (io/tensor_checksums.h): a gpt2-124m
// checkpoint (498 MB of f32, written once to a temporary directory; the page cache then holds it,
// as it does for the second load of any file) loaded by load_checkpoint, which verifies every
// tensor, against the same load without the verification (the model built and its tensors copied
// from the mapping), and the verification alone.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>

#include "bench_support.h"
#include "nanoformer/io/tensor_checksums.h"
#include "nanoformer/nanoformer.h"

namespace {

namespace fs = std::filesystem;

// The checkpoint, written on first use and removed at exit.
const std::string& checkpoint() {
  struct File {
    std::string path = (fs::temp_directory_path() / ("nf_bench_checkpoint_" + std::to_string(::getpid()) + ".safetensors")).string();
    File() {
      nf::Generator gen(1);
      nf::formats::save_checkpoint(*nf::models::build_model_from("gpt2-124m", gen), path);
    }
    ~File() { fs::remove(path); }
  };
  static const File file;
  return file.path;
}

void BM_load_verified(benchmark::State& state) {
  const std::string& path = checkpoint();
  for (auto _ : state) benchmark::DoNotOptimize(nf::formats::load_checkpoint(path).get());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(fs::file_size(path)));
}

// load_checkpoint's work without the verification
void BM_load_unverified(benchmark::State& state) {
  const std::string& path = checkpoint();
  for (auto _ : state) {
    const nf::io::SafetensorsFile file = nf::io::SafetensorsFile::open(path);
    nf::Generator gen(0);
    std::shared_ptr<nf::models::Model> model;
    {
      const nf::SkipRandomInitGuard every_weight_is_loaded;
      model = nf::models::build_model(nf::formats::read_checkpoint_config_json(path), path, gen);
    }
    nf::nn::StateDict tensors;
    for (const nf::io::TensorEntry& e : file.entries()) tensors[e.name] = file.view(e.name);
    model->load_state_dict(tensors);
    benchmark::DoNotOptimize(model.get());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(fs::file_size(path)));
}

void BM_verify_only(benchmark::State& state) {
  const std::string& path = checkpoint();
  for (auto _ : state) nf::io::verify_tensor_checksums(nf::io::SafetensorsFile::open(path));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(fs::file_size(path)));
}

BENCHMARK(BM_load_verified)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_load_unverified)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_verify_only)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  return nf::bench::run_benchmarks(argc, argv, {{"BM_load_verified", "BM_load_unverified"}});
}
