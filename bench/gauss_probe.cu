// Hand-written Gaussian2D 5x5 kernels (f32, zero padding) that probe which structure reaches the
// copy floor on the GPU, before teaching polyk's stages one of them. Each kernel's output is
// compared with the plain one-point-a-thread kernel (same order of the 25 products).
//   nvcc -O3 -arch=sm_90 bench/gauss_probe.cu -o gp && ./gp [N]
#include <cuda_runtime.h>
#include "probe.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void copy_k(long long n, const float4 *__restrict__ a, float4 *__restrict__ b) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) b[i] = a[i];
}

__device__ __forceinline__ float at(int N, const float *__restrict__ A, int i, int j) {
  return (unsigned)i < (unsigned)N && (unsigned)j < (unsigned)N ? __ldg(A + (long long)i * N + j) : 0.f;
}

// One point a thread.
__global__ void flat_k(int N, const float *__restrict__ A, const float *__restrict__ G, float *__restrict__ B) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= N || j >= N) return;
  float acc = 0.f;
  for (int u = 0; u < 5; ++u)
    for (int v = 0; v < 5; ++v) acc = acc + at(N, A, i + u - 2, j + v - 2) * G[u * 5 + v];
  B[(long long)i * N + j] = acc;
}

// Input row r of a thread's R outputs' windows (rows r - 4 .. r): its 5 values a[] into the up to 5
// outputs whose windows hold it, each in the reference's order of products.
__device__ __forceinline__ void loadWeights(const float *__restrict__ G, float (&g)[25]) {
#pragma unroll
  for (int k = 0; k < 25; ++k) g[k] = __ldg(G + k);
}

template <int R>
__device__ __forceinline__ void addRow(float (&acc)[R], const float (&a)[5], const float (&g)[25], int r) {
#pragma unroll
  for (int u = 4; u >= 0; --u) {
    const int o = r - u;
    if (o >= 0 && o < R)
#pragma unroll
      for (int v = 0; v < 5; ++v) acc[o] = acc[o] + a[v] * g[u * 5 + v];
  }
}

// A thread's R outputs (rows r - 4 .. r of each window): the R + 4 input rows that `row(r, a)`
// gives, each into the outputs whose windows hold it.
template <int R, class Row>
__device__ __forceinline__ void windowSum(float (&acc)[R], const float (&g)[25], Row row) {
#pragma unroll
  for (int o = 0; o < R; ++o) acc[o] = 0.f;
#pragma unroll
  for (int r = 0; r < R + 4; ++r) {
    float a[5];
    row(r, a);
    addRow<R>(acc, a, g, r);
  }
}

// One column of R rows a thread; each input row's 5 values are loaded once (L1) and feed the up
// to 5 outputs whose windows hold it.
template <int R>
__global__ void __launch_bounds__(256) rows_k(int N, const float *__restrict__ A, const float *__restrict__ G, float *__restrict__ B) {
  float g[25];
  loadWeights(G, g);
  const int j = blockIdx.x * blockDim.x + threadIdx.x, i0 = (blockIdx.y * blockDim.y + threadIdx.y) * R;
  if (j >= N || i0 >= N) return;
  float acc[R];
  windowSum<R>(acc, g, [&](int r, float(&a)[5]) {
#pragma unroll
    for (int v = 0; v < 5; ++v) a[v] = at(N, A, i0 + r - 2, j + v - 2);
  });
#pragma unroll
  for (int o = 0; o < R; ++o)
    if (i0 + o < N) B[(long long)(i0 + o) * N + j] = acc[o];
}

// As rows_k, each row loaded as 3 values a lane (j - 2, j, j + 2) and the other two taken from
// the neighbouring lanes. Needs blockDim.x a multiple of 32.
template <int R>
__global__ void __launch_bounds__(256) shfl_k(int N, const float *__restrict__ A, const float *__restrict__ G, float *__restrict__ B) {
  float g[25];
  loadWeights(G, g);
  const int lane = threadIdx.x & 31;
  const int j = blockIdx.x * blockDim.x + threadIdx.x, i0 = (blockIdx.y * blockDim.y + threadIdx.y) * R;
  if (i0 >= N) return;  // whole warps leave together (i0 is the warp's)
  float acc[R];
  windowSum<R>(acc, g, [&](int r, float(&a)[5]) {
    const int i = i0 + r - 2;
    const float lo = at(N, A, i, j - 2), c = at(N, A, i, j), hi = at(N, A, i, j + 2);
    const float cu = __shfl_up_sync(~0u, c, 1), lod = __shfl_down_sync(~0u, lo, 1);
    const float cd = __shfl_down_sync(~0u, c, 1), hiu = __shfl_up_sync(~0u, hi, 1);
    a[0] = lo, a[1] = lane >= 1 ? cu : lod, a[2] = c, a[3] = lane <= 30 ? cd : hiu, a[4] = hi;
  });
  if (j >= N) return;
#pragma unroll
  for (int o = 0; o < R; ++o)
    if (i0 + o < N) B[(long long)(i0 + o) * N + j] = acc[o];
}

// Shared-memory tile (TY + 4) x (TX + 4) staged with 16-byte loads where the row is aligned, one
// column of TY / BY rows a thread.
template <int TX, int TY, int BY>
__global__ void __launch_bounds__(TX * BY) smem_k(int N, const float *__restrict__ A, const float *__restrict__ G, float *__restrict__ B) {
  constexpr int W = TX + 8;  // 4 columns each side keep the rows' 16-byte alignment
  __shared__ __align__(16) float t[TY + 4][W];
  float g[25];
  loadWeights(G, g);
  const int j0 = blockIdx.x * TX, i0 = blockIdx.y * TY;
  const int tid = threadIdx.y * TX + threadIdx.x;
  const bool inner = j0 >= 4 && j0 + TX + 4 <= N && (N % 4) == 0;
  for (int e = tid; e < (TY + 4) * (W / 4); e += TX * BY) {
    const int y = e / (W / 4), x = (e % (W / 4)) * 4;
    const int gi = i0 + y - 2, gj = j0 + x - 4;
    float4 v;
    if (inner && (unsigned)gi < (unsigned)N) v = __ldg((const float4 *)(A + (long long)gi * N + gj));
    else v = make_float4(at(N, A, gi, gj), at(N, A, gi, gj + 1), at(N, A, gi, gj + 2), at(N, A, gi, gj + 3));
    *(float4 *)&t[y][x] = v;
  }
  __syncthreads();
  constexpr int R = TY / BY;
  const int x = threadIdx.x, y0 = threadIdx.y * R;
  float acc[R];
  windowSum<R>(acc, g, [&](int r, float(&a)[5]) {
#pragma unroll
    for (int v = 0; v < 5; ++v) a[v] = t[y0 + r][x + v + 2];
  });
  const int j = j0 + x;
  if (j >= N) return;
#pragma unroll
  for (int o = 0; o < R; ++o)
    if (i0 + y0 + o < N) B[(long long)(i0 + y0 + o) * N + j] = acc[o];
}

int main(int argc, char **argv) {
  const int N = argc > 1 ? atoi(argv[1]) : 8192;
  const size_t n = (size_t)N * N;
  float *A, *B, *R, *G, *flush;
  cudaMalloc(&A, n * 4);
  cudaMalloc(&B, n * 4);
  cudaMalloc(&R, n * 4);
  cudaMalloc(&G, 25 * 4);
  cudaMalloc(&flush, 256 << 20);
  std::vector<float> h(n), hg(25);
  unsigned s = 12345;
  for (auto &v : h) v = ((s = s * 1664525u + 1013904223u) >> 8) * (1.f / 16777216.f) - 0.5f;
  for (auto &v : hg) v = ((s = s * 1664525u + 1013904223u) >> 8) * (1.f / 16777216.f);
  cudaMemcpy(A, h.data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(G, hg.data(), 25 * 4, cudaMemcpyHostToDevice);
  flat_k<<<dim3((N + 31) / 32, (N + 7) / 8), dim3(32, 8)>>>(N, A, G, R);
  std::vector<float> ref(n), out(n);
  cudaMemcpy(ref.data(), R, n * 4, cudaMemcpyDeviceToHost);
  auto time = [&](const char *name, auto launch, bool check) {
    cudaMemset(B, 0, n * 4);
    launch();
    if (cudaDeviceSynchronize() != cudaSuccess) { printf("%-22s ERROR %s\n", name, cudaGetErrorString(cudaGetLastError())); return; }
    double err = 0;
    if (check) {
      cudaMemcpy(out.data(), B, n * 4, cudaMemcpyDeviceToHost);
      for (size_t p = 0; p < n; ++p) err = std::max(err, (double)std::fabs(out[p] - ref[p]));
    }
    const float us = probeMedianUs(flush, 256 << 20, launch);
    printf("%-22s %-4s max_err=%.2e median_us=%8.2f\n", name, !check ? "-" : err < 1e-5 ? "PASS" : "FAIL", err, us);
  };
  time("copy", [&] { copy_k<<<132 * 16, 256>>>((long long)(n / 4), (const float4 *)A, (float4 *)B); }, false);
  time("flat32x8", [&] { flat_k<<<dim3((N + 31) / 32, (N + 7) / 8), dim3(32, 8)>>>(N, A, G, B); }, true);
#define ROWS(K, R, BX, BY)                                                                                              \
  time(#K "_r" #R "_" #BX "x" #BY,                                                                                      \
       [&] { K<R><<<dim3((N + BX - 1) / BX, (N + BY * R - 1) / (BY * R)), dim3(BX, BY)>>>(N, A, G, B); }, true);
  ROWS(rows_k, 4, 32, 8) ROWS(rows_k, 8, 32, 8) ROWS(rows_k, 16, 32, 8) ROWS(rows_k, 8, 64, 4) ROWS(rows_k, 16, 64, 4)
  ROWS(rows_k, 8, 128, 2) ROWS(rows_k, 16, 128, 2) ROWS(rows_k, 32, 64, 4) ROWS(rows_k, 16, 256, 1)
  ROWS(shfl_k, 8, 32, 8) ROWS(shfl_k, 16, 32, 8) ROWS(shfl_k, 16, 64, 4) ROWS(shfl_k, 16, 128, 2) ROWS(shfl_k, 32, 64, 4)
#define SMEM(TX, TY, BY) \
  time("smem_" #TX "x" #TY "_" #BY, [&] { smem_k<TX, TY, BY><<<dim3((N + TX - 1) / TX, (N + TY - 1) / TY), dim3(TX, BY)>>>(N, A, G, B); }, true);
  SMEM(32, 32, 8) SMEM(64, 32, 4) SMEM(64, 64, 4) SMEM(128, 32, 2) SMEM(64, 64, 8) SMEM(128, 64, 4)
  return 0;
}
