// polyk::mma_tf32x3 against f64 sums (build: nvcc -std=c++17 -arch=sm_90 -I libcore/runtime; runs on a
// GPU, where it prints PASS or FAIL and exits 1; ctest only compiles it). One warp multiplies a 16 x 8
// tile of A by an 8 x 8 tile of B: random values (relative error against f64 below 2^-19 |A||B|),
// then with infinities and a NaN among them (the f32 result's infinities, signs and NaNs exactly).
#include "polyk/runtime.cuh"

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <random>

__global__ void tile(const float *a, const float *b, float *d) {
  const unsigned l = threadIdx.x, g = l / 4, t = l % 4;
  polyk::Tf32x2 fa[4] = {polyk::tf32_split(a[g * 8 + t]), polyk::tf32_split(a[(g + 8) * 8 + t]),
                         polyk::tf32_split(a[g * 8 + t + 4]), polyk::tf32_split(a[(g + 8) * 8 + t + 4])};
  polyk::Tf32x2 fb[2] = {polyk::tf32_split(b[t * 8 + g]), polyk::tf32_split(b[(t + 4) * 8 + g])};
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  polyk::mma_tf32x3(d0, d1, d2, d3, fa, fb);
  d[g * 8 + 2 * t] = d0, d[g * 8 + 2 * t + 1] = d1, d[(g + 8) * 8 + 2 * t] = d2, d[(g + 8) * 8 + 2 * t + 1] = d3;
}

static int check(const float *ha, const float *hb, bool specials) {
  float *a, *b, *d, hd[128];
  cudaMalloc(&a, 128 * 4), cudaMalloc(&b, 64 * 4), cudaMalloc(&d, 128 * 4);
  cudaMemcpy(a, ha, 128 * 4, cudaMemcpyHostToDevice), cudaMemcpy(b, hb, 64 * 4, cudaMemcpyHostToDevice);
  tile<<<1, 32>>>(a, b, d);
  if (cudaError_t e = cudaMemcpy(hd, d, 128 * 4, cudaMemcpyDeviceToHost); e != cudaSuccess) {
    printf("FAIL mma_tf32x3: %s\n", cudaGetErrorString(e));
    exit(1);
  }
  cudaFree(a), cudaFree(b), cudaFree(d);
  int bad = 0;
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      double s = 0, m = 0;
      for (int k = 0; k < 8; ++k) s += (double)ha[i * 8 + k] * hb[k * 8 + j], m += std::fabs((double)ha[i * 8 + k] * hb[k * 8 + j]);
      float want = (float)s, got = hd[i * 8 + j];
      bool ok = specials && !std::isfinite(want) ? (std::isnan(want) ? std::isnan(got) : got == want)
                                                 : std::fabs(got - s) <= std::ldexp(m, -19);
      if (!ok && bad++ < 5) printf("d[%d][%d] = %.9g, want %.9g\n", i, j, got, want);
    }
  return bad;
}

int main() {
  std::mt19937 rng(20261126);
  std::uniform_real_distribution<float> u(-1, 1);
  float a[128], b[64];
  for (float &x : a) x = u(rng) * std::ldexp(1.0f, (int)(rng() % 20) - 10);
  for (float &x : b) x = u(rng);
  int bad = check(a, b, false);
  a[3] = INFINITY, a[2 * 8 + 5] = -INFINITY, a[9 * 8 + 1] = 3.4028235e38f /* FLT_MAX: its big part saturates */, b[7 * 8 + 2] = NAN, b[3 * 8 + 4] = 0;
  bad += check(a, b, true);
  printf("%s mma_tf32x3 (%d wrong)\n", bad ? "FAIL" : "PASS", bad);
  return bad ? 1 : 0;
}
