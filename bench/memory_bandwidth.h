#pragma once
// The machine's memory-read bandwidth, the limit of decoding: at batch 1 every weight is read
// once per new token, so tokens/s <= read GB/s / weight bytes. Measured as PyTorch's and
// llama.cpp's users see it: `threads` threads summing a buffer much larger than the last-level
// cache (each thread its own contiguous part, 32 independent accumulators: four AVX2 vectors, so
// the adds never wait on each other; with 8, one vector's chain of adds measured 15% slower),
// median over repetitions after one untimed pass that faults the pages in.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace nf::bench {

struct Bandwidth {
  double read_gb_per_s = 0;  // 1e9 bytes per second
  double checksum = 0;       // the sum, so the reads cannot be optimised away
};

inline Bandwidth measure_read_bandwidth(int threads, int64_t bytes = int64_t{1} << 30, int repetitions = 7) {
  const int64_t n = bytes / static_cast<int64_t>(sizeof(float));
  std::vector<float> buffer(static_cast<size_t>(n), 1.0f);
  const float* data = buffer.data();
  std::vector<double> seconds;
  double checksum = 0;
  for (int r = 0; r <= repetitions; ++r) {
    const auto start = std::chrono::steady_clock::now();
    double total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
      const int64_t parts = omp_get_num_threads(), part = omp_get_thread_num();
      const int64_t begin = n * part / parts, end = n * (part + 1) / parts;
      float acc[32] = {};
      int64_t i = begin;
      for (; i + 32 <= end; i += 32)
        for (int k = 0; k < 32; ++k) acc[k] += data[i + k];
      for (; i < end; ++i) acc[0] += data[i];
      for (float a : acc) total += a;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) seconds.push_back(s);  // pass 0 faults the pages in
    checksum += total;
  }
  std::sort(seconds.begin(), seconds.end());
  return {static_cast<double>(bytes) / seconds[seconds.size() / 2] / 1e9, checksum};
}

}  // namespace nf::bench
