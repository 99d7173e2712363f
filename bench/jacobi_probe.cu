// Hand-written Jacobi3D 7-point kernels (512^3, f32) that probe which structure reaches the copy
// floor on the GPU, before teaching polyk's stages one of them. Each kernel's output is compared
// bit for bit with the plain one-point-a-thread kernel (same expression order).
//   nvcc -O3 -arch=sm_90 bench/jacobi_probe.cu -o jp && ./jp [N]
// vec_k (4 consecutive k a thread as float4s, the k neighbours by shuffles, 4 planes a thread)
// runs at the probe's own copy speed (378 us, 2026-11-28); run_k is what per-point scalar reads
// give: nvcc merges none of them into vectors, even with the pointers and N known aligned (its
// PTX has no ld.global.v4), so polyk-emit prints the vectors itself (emitRegisterStreamed).
#include <cuda_runtime.h>
#include "probe.h"
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define F(a, c, im, ip, jm, jp, km, kp) (0.142857f * ((((((c + im) + ip) + jm) + jp) + km) + kp))

__global__ void copy_k(int n, const float4 *__restrict__ a, float4 *__restrict__ b) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) b[i] = a[i];
}

// One point a thread, flat index (what torch.compile's kernel does).
__global__ void flat_k(int N, const float *__restrict__ A, float *__restrict__ B) {
  long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  int k = p % N, j = (p / N) % N, i = p / ((long long)N * N);
  if (i < 1 || j < 1 || k < 1 || i >= N - 1 || j >= N - 1 || k >= N - 1) return;
  const int s = N, t = N * N;
  const float *a = A + p;
  B[p] = F(0, a[0], a[-t], a[t], a[-s], a[s], a[-1], a[1]);
}

// Threads on (k, j); each marches C planes along i with the i neighbours in registers.
template <int C>
__global__ void march_k(int N, const float *__restrict__ A, float *__restrict__ B) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y * blockDim.y + threadIdx.y;
  const int i0 = blockIdx.z * C;
  if (k < 1 || j < 1 || k >= N - 1 || j >= N - 1) return;
  const int s = N, t = N * N;
  const int lo = max(i0, 1), hi = min(i0 + C, N - 1);
  if (lo >= hi) return;
  const float *a = A + (long long)lo * t + j * s + k;
  float *b = B + (long long)lo * t + j * s + k;
  float prev = a[-t], cur = a[0];
#pragma unroll 4
  for (int i = lo; i < hi; ++i) {
    float next = a[t];
    *b = F(0, cur, prev, next, a[-s], a[s], a[-1], a[1]);
    prev = cur;
    cur = next;
    a += t;
    b += t;
  }
}

// As march_k, with the current plane's (BY + 2) x (BX + 2) tile in shared memory.
template <int BX, int BY, int C>
__global__ void __launch_bounds__(BX * BY) smem_k(int N, const float *__restrict__ A, float *__restrict__ B) {
  __shared__ float tile[2][BY + 2][BX + 2];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int k = blockIdx.x * BX + tx, j = blockIdx.y * BY + ty;
  const int i0 = blockIdx.z * C;
  const int s = N, t = N * N;
  const int lo = max(i0, 1), hi = min(i0 + C, N - 1);
  const bool in = k >= 1 && j >= 1 && k < N - 1 && j < N - 1;
  const bool load = k < N && j < N;
  auto fill = [&](int buf, int i) {
    const float *p = A + (long long)i * t;
    // Centre and halo: each thread loads its point; edge threads load the halo.
    if (load) tile[buf][ty + 1][tx + 1] = p[j * s + k];
    if (tx == 0 && k >= 1 && j < N) tile[buf][ty + 1][0] = p[j * s + k - 1];
    if (tx == BX - 1 && k + 1 < N && j < N) tile[buf][ty + 1][BX + 1] = p[j * s + k + 1];
    if (ty == 0 && j >= 1 && k < N) tile[buf][0][tx + 1] = p[(j - 1) * s + k];
    if (ty == BY - 1 && j + 1 < N && k < N) tile[buf][BY + 1][tx + 1] = p[(j + 1) * s + k];
  };
  if (lo >= hi) return;
  float prev = load ? A[(long long)(lo - 1) * t + j * s + k] : 0.f;
  float next = 0.f;
  fill(0, lo);
  __syncthreads();
  int buf = 0;
  for (int i = lo; i < hi; ++i) {
    if (load) next = A[(long long)(i + 1) * t + j * s + k];
    if (i + 1 < hi) fill(buf ^ 1, i + 1);
    const float cur = tile[buf][ty + 1][tx + 1];
    if (in)
      B[(long long)i * t + j * s + k] = F(0, cur, prev, next, tile[buf][ty][tx + 1], tile[buf][ty + 2][tx + 1],
                                          tile[buf][ty + 1][tx], tile[buf][ty + 1][tx + 2]);
    prev = cur;
    __syncthreads();
    buf ^= 1;
  }
}


// Four consecutive k a thread (float4 reads and stores), the k neighbours from the lanes beside
// it (shuffles; a warp's end lanes read the one element past it). MARCH: each thread walks C
// planes along i with its i neighbours in registers; otherwise one plane a thread (C = 1).
__device__ __forceinline__ float4 ld4(const float *p) { return *reinterpret_cast<const float4 *>(p); }
template <int C>
__global__ void vec_k(int N, const float *__restrict__ A, float *__restrict__ B) {
  const int k0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  const int j = blockIdx.y * blockDim.y + threadIdx.y;
  const int i0 = blockIdx.z * C;
  const int lane = threadIdx.x & 31;
  if (j < 1 || j >= N - 1) return; // (a warp shares its j)
  const int s = N, t = N * N;
  const int lo = max(i0, 1), hi = min(i0 + C, N - 1);
  if (lo >= hi) return;
  const bool kin = k0 < N;
  size_t off = (size_t)lo * t + (size_t)j * s + (kin ? k0 : 0);
  float4 prev = ld4(A + off - t), cur = ld4(A + off);
#pragma unroll 4
  for (int i = lo; i < hi; ++i) {
    const float4 next = ld4(A + off + t), up = ld4(A + off - s), dn = ld4(A + off + s);
    float left = __shfl_up_sync(0xffffffffu, cur.w, 1), right = __shfl_down_sync(0xffffffffu, cur.x, 1);
    if (lane == 0) left = k0 > 0 ? A[off - 1] : 0.f;
    if (lane == 31) right = k0 + 4 < N ? A[off + 4] : 0.f;
    float4 o;
    o.x = F(0, cur.x, prev.x, next.x, up.x, dn.x, left, cur.y);
    o.y = F(0, cur.y, prev.y, next.y, up.y, dn.y, cur.x, cur.z);
    o.z = F(0, cur.z, prev.z, next.z, up.z, dn.z, cur.y, cur.w);
    o.w = F(0, cur.w, prev.w, next.w, up.w, dn.w, cur.z, right);
    if (kin) {
      if (k0 >= 1 && k0 + 4 <= N - 1) {
        *reinterpret_cast<float4 *>(B + off) = o;
      } else {
        const float v[4] = {o.x, o.y, o.z, o.w};
        for (int e = 0; e < 4; ++e)
          if (k0 + e >= 1 && k0 + e < N - 1) B[off + e] = v[e];
      }
    }
    prev = cur;
    cur = next;
    off += t;
  }
}

// What polyk's stages would print for runs of 4 along k: a thread's C x 4 points unrolled, each
// point reading its 7 values as scalars; in the aligned instance the base pointers are assumed
// 16-byte aligned and N a multiple of 4, so nvcc may merge a run's reads into vectors.
template <int C, bool ALIGNED>
__global__ void run_k(int N_, const float *__restrict__ A_, float *__restrict__ B_) {
  const int N = ALIGNED ? (N_ >> 2) << 2 : N_;
  const float *__restrict__ A = ALIGNED ? (const float *)__builtin_assume_aligned(A_, 16) : A_;
  float *__restrict__ B = ALIGNED ? (float *)__builtin_assume_aligned(B_, 16) : B_;
  const int k0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  const int j = blockIdx.y * blockDim.y + threadIdx.y;
  const int i0 = blockIdx.z * C;
  const size_t s = N, t = (size_t)N * N;
#define S0(i, j, k) B[(i) * t + (j) * s + (k)] = F(0, A[(i) * t + (j) * s + (k)], A[((i) - 1) * t + (j) * s + (k)], \
    A[((i) + 1) * t + (j) * s + (k)], A[(i) * t + ((j) - 1) * s + (k)], A[(i) * t + ((j) + 1) * s + (k)],             \
    A[(i) * t + (j) * s + (k) - 1], A[(i) * t + (j) * s + (k) + 1])
  if (i0 >= 1 && i0 + C <= N - 1 && j >= 1 && j < N - 1 && k0 >= 4 && k0 + 4 <= N - 4) {
#pragma unroll
    for (int c = 0; c < C; ++c)
#pragma unroll
      for (int e = 0; e < 4; ++e) S0((size_t)(i0 + c), (size_t)j, (size_t)(k0 + e));
  } else {
    for (int c = 0; c < C; ++c)
      for (int e = 0; e < 4; ++e) {
        int i = i0 + c, k = k0 + e;
        if (i >= 1 && i < N - 1 && j >= 1 && j < N - 1 && k >= 1 && k < N - 1) S0((size_t)i, (size_t)j, (size_t)k);
      }
  }
#undef S0
}

int main(int argc, char **argv) {
  const int N = argc > 1 ? atoi(argv[1]) : 512;
  const size_t n = (size_t)N * N * N;
  float *A, *B, *R, *flush;
  cudaMalloc(&A, n * 4);
  cudaMalloc(&B, n * 4);
  cudaMalloc(&R, n * 4);
  cudaMalloc(&flush, 256 << 20);
  std::vector<float> h(n);
  unsigned x = 12345;
  for (auto &v : h) v = ((x = x * 1664525u + 1013904223u) >> 8) * (1.f / 16777216.f) - 0.5f;
  cudaMemcpy(A, h.data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemset(R, 0, n * 4);
  const int flatBlocks = (int)((n + 255) / 256);
  flat_k<<<flatBlocks, 256>>>(N, A, R);
  std::vector<float> ref(n), out(n);
  cudaMemcpy(ref.data(), R, n * 4, cudaMemcpyDeviceToHost);
  auto time = [&](const char *name, auto launch, bool check) {
    cudaMemset(B, 0, n * 4);
    launch();
    if (cudaDeviceSynchronize() != cudaSuccess) { printf("%-22s ERROR %s\n", name, cudaGetErrorString(cudaGetLastError())); return; }
    const char *verdict = "-";
    if (check) {
      cudaMemcpy(out.data(), B, n * 4, cudaMemcpyDeviceToHost);
      size_t bad = 0;
      for (int i = 1; i < N - 1; ++i)
        for (int j = 1; j < N - 1; ++j)
          for (int k = 1; k < N - 1; ++k) {
            size_t p = ((size_t)i * N + j) * N + k;
            bad += out[p] != ref[p];
          }
      verdict = bad ? "FAIL" : "PASS";
    }
    const float us = probeMedianUs(flush, 256 << 20, launch);
    printf("%-22s %-4s median_us=%8.2f\n", name, verdict, us);
  };
  time("copy", [&] { copy_k<<<132 * 16, 256>>>((int)(n / 4), (const float4 *)A, (float4 *)B); }, false);
  time("flat256", [&] { flat_k<<<flatBlocks, 256>>>(N, A, B); }, true);
  time("flat512", [&] { flat_k<<<(int)((n + 511) / 512), 512>>>(N, A, B); }, true);
#define MARCH(C, BX, BY)                                                                                         \
  time("march_c" #C "_" #BX "x" #BY,                                                                             \
       [&] { march_k<C><<<dim3((N + BX - 1) / BX, (N + BY - 1) / BY, (N + C - 1) / C), dim3(BX, BY)>>>(N, A, B); }, \
       true);
  MARCH(8, 32, 8) MARCH(16, 32, 8) MARCH(32, 32, 8) MARCH(64, 32, 8) MARCH(16, 64, 4) MARCH(32, 64, 4)
  MARCH(16, 128, 2) MARCH(64, 128, 2) MARCH(32, 32, 16)
#define SMEM(C, BX, BY)                                                                                          \
  time("smem_c" #C "_" #BX "x" #BY,                                                                              \
       [&] { smem_k<BX, BY, C><<<dim3((N + BX - 1) / BX, (N + BY - 1) / BY, (N + C - 1) / C), dim3(BX, BY)>>>(N, A, B); }, \
       true);
  SMEM(16, 32, 8) SMEM(32, 32, 8) SMEM(64, 32, 8) SMEM(32, 64, 4) SMEM(32, 32, 16) SMEM(64, 64, 8)
#define VEC(C, BY)                                                                                               \
  time("vec_c" #C "_128x" #BY,                                                                                   \
       [&] { vec_k<C><<<dim3((N / 4 + 127) / 128, (N + BY - 1) / BY, (N + C - 1) / C), dim3(128, BY)>>>(N, A, B); }, \
       true);
  VEC(1, 1) VEC(1, 2) VEC(1, 4) VEC(2, 2) VEC(4, 1) VEC(4, 2) VEC(8, 1) VEC(8, 2) VEC(8, 4) VEC(16, 1) VEC(16, 2)
  VEC(16, 4) VEC(32, 1) VEC(32, 2) VEC(64, 1) VEC(64, 2)
#define RUN(C, BY)                                                                                               \
  time("run_c" #C "_128x" #BY,                                                                                   \
       [&] { run_k<C, true><<<dim3((N / 4 + 127) / 128, (N + BY - 1) / BY, (N + C - 1) / C), dim3(128, BY)>>>(N, A, B); }, \
       true);                                                                                                    \
  time("run_unaligned_c" #C "_128x" #BY,                                                                         \
       [&] { run_k<C, false><<<dim3((N / 4 + 127) / 128, (N + BY - 1) / BY, (N + C - 1) / C), dim3(128, BY)>>>(N, A, B); }, \
       true);
  RUN(1, 2) RUN(2, 2) RUN(4, 1) RUN(4, 2) RUN(4, 4) RUN(8, 2)
  return 0;
}
