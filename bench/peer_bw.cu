// The copy bandwidths polyk-partition's projection needs, measured on this machine: a 1 GiB
// device-to-device copy within GPU 0 (what a virtual device's halo copy costs) and, where there is
// a second GPU, a 1 GiB cudaMemcpyPeerAsync from GPU 0 to GPU 1 and back (peer access enabled).
// Median of 7 after one warm-up. Prints `BW kind GB/s=...` lines.
//   nvcc -O2 -arch=sm_90 bench/peer_bw.cu -o peer_bw && ./peer_bw
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));     \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

static const size_t kBytes = size_t(1) << 30;

// Times `reps` copies of kBytes from (src, from) to (dst, to) on a stream of dst.
static int timeCopy(int dst, void *to, int src, const void *from, double *gbps) {
  CHECK(cudaSetDevice(dst));
  cudaStream_t s;
  cudaEvent_t a, b;
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<float> ms;
  for (int r = 0; r < 8; ++r) {
    CHECK(cudaEventRecord(a, s));
    if (src == dst)
      CHECK(cudaMemcpyAsync(to, from, kBytes, cudaMemcpyDeviceToDevice, s));
    else
      CHECK(cudaMemcpyPeerAsync(to, dst, from, src, kBytes, s));
    CHECK(cudaEventRecord(b, s));
    CHECK(cudaEventSynchronize(b));
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, a, b));
    if (r > 0) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  *gbps = double(kBytes) / (ms[ms.size() / 2] * 1e-3) / 1e9;
  CHECK(cudaStreamDestroy(s));
  return 0;
}

int main() {
  int gpus = 0;
  CHECK(cudaGetDeviceCount(&gpus));
  std::vector<void *> a(2, nullptr), b(2, nullptr);
  for (int g = 0; g < std::min(gpus, 2); ++g) {
    CHECK(cudaSetDevice(g));
    CHECK(cudaMalloc(&a[g], kBytes));
    CHECK(cudaMalloc(&b[g], kBytes));
    CHECK(cudaMemset(a[g], 1, kBytes));
  }
  double gbps = 0;
  if (timeCopy(0, b[0], 0, a[0], &gbps)) return 1;
  // A copy reads and writes each byte: the bytes moved per second are twice this.
  printf("BW d2d_gpu0 GB/s=%.1f (1 GiB cudaMemcpyAsync within GPU 0, bytes copied per second)\n", gbps);
  if (gpus >= 2) {
    int can = 0;
    CHECK(cudaDeviceCanAccessPeer(&can, 0, 1));
    if (can) {
      CHECK(cudaSetDevice(0));
      CHECK(cudaDeviceEnablePeerAccess(1, 0));
      CHECK(cudaSetDevice(1));
      CHECK(cudaDeviceEnablePeerAccess(0, 0));
    }
    if (timeCopy(1, a[1], 0, a[0], &gbps)) return 1;
    printf("BW peer_0to1 GB/s=%.1f (1 GiB cudaMemcpyPeerAsync, peer access %s)\n", gbps, can ? "on" : "off");
    if (timeCopy(0, b[0], 1, a[1], &gbps)) return 1;
    printf("BW peer_1to0 GB/s=%.1f\n", gbps);
  }
  return 0;
}
