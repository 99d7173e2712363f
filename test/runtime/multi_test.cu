// Standalone GPU test of libcore/runtime/polyk/multi_cuda.cuh: a 1-D 3-point stencil split over
// the devices of a CudaBackend, each device computing its slice after acquiring its slice +-1,
// against the sequential result, bit for bit. ctest only compiles it (runtime/multi-nvcc).
//
// Build (from the repository root):
//   nvcc -std=c++17 -O2 -arch=sm_90 -I libcore/runtime test/runtime/multi_test.cu -o multi_test
// Run:  ./multi_test [virtual|gpu] [devices]   (exit code 0 iff the result matches)
#include "polyk/multi_cuda.cuh"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace polyk::multi;

__global__ void stencil(float *out, const float *in, idx first, idx last, idx n) {
  idx i = first + idx(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i > last)
    return;
  float left = i > 0 ? in[i - 1] : 0.f, right = i + 1 < n ? in[i + 1] : 0.f;
  out[i] = 0.25f * left + 0.5f * in[i] + 0.25f * right;
}

static void reference(std::vector<float> &out, const std::vector<float> &in) {
  idx n = idx(in.size());
  for (idx i = 0; i < n; ++i) {
    float left = i > 0 ? in[size_t(i - 1)] : 0.f, right = i + 1 < n ? in[size_t(i + 1)] : 0.f;
    out[size_t(i)] = 0.25f * left + 0.5f * in[size_t(i)] + 0.25f * right;
  }
}

int main(int argc, char **argv) {
  CudaBackend::Mode mode = argc > 1 && std::string(argv[1]) == "gpu" ? CudaBackend::Mode::Gpu : CudaBackend::Mode::Virtual;
  int devices = argc > 2 ? std::atoi(argv[2]) : 3;
  const idx n = 1 << 20;
  const int steps = 5;
  std::vector<float> a(n), b(n), expected(n), result(n);
  std::mt19937 rng(7);
  // Integers: every step's sums are then exact in float, so the GPU's fused multiply-adds and
  // the host's separate ones agree bit for bit.
  std::uniform_int_distribution<int> value(1, 1000);
  for (float &x : a)
    x = float(value(rng));
  std::vector<float> x = a, y(n);
  for (int s = 0; s < steps; ++s) {
    reference(y, x);
    x.swap(y);
  }
  expected = x;

  try {
    CudaBackend backend(devices, mode);
    Runtime rt(backend);
    Buffer A(rt, "A", sizeof(float), n), B(rt, "B", sizeof(float), n);
    rt.upload(A, a.data());
    rt.upload(B, b.data());
    Buffer *in = &A, *out = &B;
    for (int s = 0; s < steps; ++s) {
      for (int d = 0; d < devices; ++d) {
        idx first = n * d / devices, last = n * (d + 1) / devices - 1;
        Runs reads, writes;
        Runs::add(first > 0 ? first - 1 : 0, last + 1 < n ? last + 1 : last, &reads);
        Runs::add(first, last, &writes);
        rt.acquire(d, *in, reads);
        backend.activate(d);
        idx count = last - first + 1;
        stencil<<<unsigned((count + 255) / 256), 256, 0, static_cast<cudaStream_t>(backend.stream(d))>>>(
            out->on<float>(d), in->on<float>(d), first, last, n);
        POLYK_MULTI_CUDA_CHECK(cudaGetLastError());
        rt.wrote(d, *out, writes);
      }
      std::swap(in, out);
    }
    rt.download(*in, result.data());
    std::printf("%s x%d: %lld peer bytes, %lld H2D bytes, %lld D2H bytes, %lld copies\n", backend.name(), devices,
        rt.stats.peerBytes, rt.stats.h2dBytes, rt.stats.d2hBytes, rt.stats.copies);
  } catch (const std::exception &e) {
    std::printf("FAIL %s\n", e.what());
    return 1;
  }
  bool same = std::memcmp(result.data(), expected.data(), sizeof(float) * size_t(n)) == 0;
  std::printf("%s stencil over %d devices\n", same ? "PASS" : "FAIL", devices);
  return same ? 0 : 1;
}
