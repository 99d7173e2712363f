// What the hand-written kernel probes (bench/*_probe.cu) share: the median of a launch's times
// with L2 flushed before each, as the harness times polyk's kernels (CUDA events, 30 runs).
#pragma once
#include <cuda_runtime.h>
#include <algorithm>
#include <vector>

inline float probeMedian(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// The median microseconds of `launch()` over `runs` runs, each after writing the `flushBytes` at
/// `flush` (larger than L2).
template <class Launch>
float probeMedianUs(void *flush, size_t flushBytes, Launch launch, int runs = 30) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> us;
  for (int r = 0; r < runs; ++r) {
    cudaMemsetAsync(flush, r, flushBytes);
    cudaEventRecord(e0);
    launch();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    us.push_back(ms * 1000);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return probeMedian(us);
}
