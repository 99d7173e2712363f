// Standalone GPU test of libcore/runtime/polyk/runtime.cuh.
//
// Build (from the repository root):
//   nvcc -std=c++17 -O2 -arch=sm_90 -I libcore/runtime test/runtime/runtime_test.cu -o runtime_test
// Run:  ./runtime_test        (exit code 0 iff every case passes)
//
// Each case prints "PASS|FAIL <what> maxerr=<x>", the last line is
// "N passed, M failed".  Block reductions are tested through both
// implementations in one binary: the public polyk::block_reduce_* (CUB, since
// POLYK_BLOCK_REDUCE_CUB is defined below) and polyk::detail::shfl_block_reduce_*
// (the own warp-shuffle version used when the macro is not defined).
#ifndef POLYK_BLOCK_REDUCE_CUB
#define POLYK_BLOCK_REDUCE_CUB 1
#endif
#include "polyk/runtime.cuh"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <algorithm>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace polyk;

// ---------------------------------------------------------------------------
// harness
// ---------------------------------------------------------------------------
static int g_pass = 0, g_fail = 0;
static std::mt19937_64 g_rng(0x5eed1234abcdULL);

static void finish_and_exit(int code) {
  printf("%d passed, %d failed\n", g_pass, g_fail);
  exit(code);
}

#define CK(call)                                                                         \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      printf("FAIL cuda call %s at %s:%d: %s maxerr=inf\n", #call, __FILE__, __LINE__,   \
             cudaGetErrorString(e_));                                                    \
      g_fail++;                                                                          \
      finish_and_exit(1);                                                                \
    }                                                                                    \
  } while (0)
#define CK_LAUNCH()                   \
  do {                                \
    CK(cudaGetLastError());           \
    CK(cudaDeviceSynchronize());      \
  } while (0)

static void report(bool ok, const std::string& what, double maxerr) {
  (ok ? g_pass : g_fail)++;
  printf("%s %s maxerr=%.3g\n", ok ? "PASS" : "FAIL", what.c_str(), maxerr);
  fflush(stdout);
}

template <class T> const char* tname();
template <> const char* tname<bool>() { return "bool"; }
template <> const char* tname<int32_t>() { return "int32"; }
template <> const char* tname<int64_t>() { return "int64"; }
template <> const char* tname<__half>() { return "f16"; }
template <> const char* tname<__nv_bfloat16>() { return "bf16"; }
template <> const char* tname<float>() { return "f32"; }
template <> const char* tname<double>() { return "f64"; }

template <class Op> const char* oname();
template <> const char* oname<OpSum>() { return "OpSum"; }
template <> const char* oname<OpProd>() { return "OpProd"; }
template <> const char* oname<OpMax>() { return "OpMax"; }
template <> const char* oname<OpMin>() { return "OpMin"; }
template <> const char* oname<OpAnd>() { return "OpAnd"; }
template <> const char* oname<OpOr>() { return "OpOr"; }

template <class T> double to_d(T v) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
  else if constexpr (std::is_same_v<T, bool>) return v ? 1.0 : 0.0;
  else return double(v);
}
template <class T> T from_d(double d) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(float(d));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(float(d));
  else if constexpr (std::is_same_v<T, bool>) return d != 0.0;
  else return T(d);
}
template <class T> bool same_bits(const T& a, const T& b) { return memcmp(&a, &b, sizeof(T)) == 0; }
template <class T> bool is_nan_t(T v) { double d = to_d(v); return d != d; }

// error measure for a mismatch in exact mode
template <class T> double diff_of(T got, T want) {
  if (same_bits(got, want)) return 0.0;
  double d = std::fabs(to_d(got) - to_d(want));
  if (!(d > 0.0)) return std::numeric_limits<double>::infinity();  // NaN / signed zero / nan vs value
  return d;
}

template <class T> using is_float_arith = std::bool_constant<std::is_same_v<T, float> || std::is_same_v<T, double>>;
template <class Op, class T>
constexpr bool tol_mode = is_float_arith<T>::value && (std::is_same_v<Op, OpSum> || std::is_same_v<Op, OpProd>);
template <class Op, class T>
constexpr bool logical_mode = std::is_same_v<T, bool> || std::is_same_v<Op, OpAnd> || std::is_same_v<Op, OpOr>;

// ---------------------------------------------------------------------------
// random data
// ---------------------------------------------------------------------------
static double urand(double lo, double hi) {
  return lo + (hi - lo) * (double(g_rng() >> 11) * (1.0 / 9007199254740992.0));
}
static bool coin(double p) { return urand(0, 1) < p; }

template <class T> T rand_nonzero() {
  if constexpr (std::is_same_v<T, bool>) return true;
  else if constexpr (std::is_integral_v<T>) {
    const int64_t vals[] = {1, 2, 5, 7, -1, -3, 100, -100000};
    return T(vals[g_rng() % 8]);
  } else {
    double d = urand(0.5, 100.0);
    return from_d<T>(coin(0.5) ? d : -d);
  }
}
template <class T> T rand_zero() {
  if constexpr (std::is_same_v<T, bool> || std::is_integral_v<T>) return T(0);
  else return from_d<T>(coin(0.5) ? 0.0 : -0.0);
}
// logical kinds: "common" values do not change the result, "rare" ones decide it
template <class Op, class T> T rand_common() {
  constexpr int k = detail::bool_kind<Op>;
  if constexpr (std::is_same_v<T, bool>) return k == 2;
  else if constexpr (std::is_same_v<Op, OpAnd>) return rand_nonzero<T>();
  else return rand_zero<T>();
}
template <class Op, class T> T rand_rare() {
  constexpr int k = detail::bool_kind<Op>;
  if constexpr (std::is_same_v<T, bool>) return k != 2;
  else if constexpr (std::is_same_v<Op, OpAnd>) return rand_zero<T>();
  else return rand_nonzero<T>();
}

template <class T> T rand_int_full() {
  if constexpr (sizeof(T) == 4) return T(uint32_t(g_rng()));
  else return T(g_rng());
}

// arithmetic kinds
template <class Op, class T> T rand_val() {
  constexpr bool f16 = detail::is_f16_v<T>;
  if constexpr (std::is_same_v<Op, OpSum>) {
    if constexpr (std::is_integral_v<T>) return rand_int_full<T>();
    else if constexpr (f16) return from_d<T>(coin(0.5) ? 1.0 : -1.0);  // partial sums exact
    else return from_d<T>(urand(-1.0, 1.0));
  } else if constexpr (std::is_same_v<Op, OpProd>) {
    if constexpr (std::is_integral_v<T>) return T(rand_int_full<T>() | T(1));  // odd: never 0 mod 2^k
    else if constexpr (f16) {
      const double r = urand(0, 1);
      return from_d<T>(r < 0.01 ? 2.0 : r < 0.02 ? 0.5 : r < 0.5 ? -1.0 : 1.0);  // exact products
    } else return from_d<T>(urand(0.999, 1.001));
  } else {  // Max / Min
    if constexpr (std::is_integral_v<T>) return rand_int_full<T>();
    else {
      const double r = urand(0, 1);
      if (r < 0.01) return from_d<T>(std::numeric_limits<double>::quiet_NaN());
      if (r < 0.03) return rand_zero<T>();
      return from_d<T>(urand(-1000.0, 1000.0));
    }
  }
}

// Host buffer (std::vector<bool> is bit-packed, so it cannot be used for T=bool).
template <class T> struct Buf {
  std::unique_ptr<T[]> p;
  size_t n = 0;
  Buf() = default;
  explicit Buf(size_t n_) : p(new T[n_]()), n(n_) {}
  Buf(const Buf& o) : Buf(o.n) { std::copy(o.begin(), o.end(), p.get()); }
  Buf& operator=(const Buf& o) { Buf t(o); p.swap(t.p); n = o.n; return *this; }
  Buf(Buf&&) = default;
  Buf& operator=(Buf&&) = default;
  size_t size() const { return n; }
  T* data() { return p.get(); }
  const T* data() const { return p.get(); }
  T& operator[](size_t i) { return p[i]; }
  const T& operator[](size_t i) const { return p[i]; }
  T* begin() { return p.get(); }
  T* end() { return p.get() + n; }
  const T* begin() const { return p.get(); }
  const T* end() const { return p.get() + n; }
};

template <class T> T* dev_alloc(size_t n) {
  T* p = nullptr;
  CK(cudaMalloc(&p, n * sizeof(T) + 16));
  return p;
}
template <class T> void h2d(T* d, const Buf<T>& h) {
  CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
}
template <class T> Buf<T> d2h(const T* d, size_t n) {
  Buf<T> h(n);
  CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// ---------------------------------------------------------------------------
// 1. Op::apply / Op::identity on device == on host, special values
// ---------------------------------------------------------------------------
template <class Op, class T>
__global__ void k_apply(const T* a, const T* b, T* out, T* ident, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = Op::apply(a[i], b[i]);
  if (i == 0) *ident = Op::template identity<T>();
}

template <class T> Buf<T> special_values() {
  std::vector<double> d;
  if constexpr (std::is_same_v<T, bool>) {
    d = {0.0, 1.0};
  } else if constexpr (std::is_integral_v<T>) {
    Buf<T> v(8);
    const int64_t xs[8] = {int64_t(std::numeric_limits<T>::min()), -7, -1, 0, 1, 2, 5,
                           int64_t(std::numeric_limits<T>::max())};
    for (int i = 0; i < 8; ++i) v[i] = T(xs[i]);
    return v;
  } else {
    const double inf = std::numeric_limits<double>::infinity();
    d = {std::numeric_limits<double>::quiet_NaN(), -inf, -3.0, -1.0, -0.0, 0.0, 0.5, 1.0, 2.5, inf};
  }
  Buf<T> v(d.size());
  for (size_t i = 0; i < d.size(); ++i) v[i] = from_d<T>(d[i]);
  return v;
}

template <class Op, class T> double expected_identity() {
  const double inf = std::numeric_limits<double>::infinity();
  if constexpr (std::is_same_v<Op, OpSum> || std::is_same_v<Op, OpOr>) return 0.0;
  else if constexpr (std::is_same_v<Op, OpProd> || std::is_same_v<Op, OpAnd>) return 1.0;
  else if constexpr (std::is_same_v<Op, OpMax>) {
    if constexpr (std::is_same_v<T, bool>) return 0.0;
    else if constexpr (std::is_integral_v<T>) return double(std::numeric_limits<T>::lowest());
    else return -inf;
  } else {
    if constexpr (std::is_same_v<T, bool>) return 1.0;
    else if constexpr (std::is_integral_v<T>) return double(std::numeric_limits<T>::max());
    else return inf;
  }
}

// semantic spot checks of host apply (bit-level expectations)
template <class Op, class T> bool host_semantics_ok() {
  bool ok = true;
  if constexpr (!std::is_integral_v<T>) {
    const T nan = from_d<T>(std::numeric_limits<double>::quiet_NaN());
    const T pz = from_d<T>(0.0), nz = from_d<T>(-0.0), one = from_d<T>(1.0), two = from_d<T>(2.0);
    if constexpr (std::is_same_v<Op, OpMax>) {
      ok = ok && same_bits(Op::apply(nan, one), one) && same_bits(Op::apply(one, nan), one);
      ok = ok && same_bits(Op::apply(nz, pz), pz) && same_bits(Op::apply(pz, nz), pz);
      ok = ok && same_bits(Op::apply(one, two), two) && is_nan_t(Op::apply(nan, nan));
    } else if constexpr (std::is_same_v<Op, OpMin>) {
      ok = ok && same_bits(Op::apply(nan, one), one) && same_bits(Op::apply(one, nan), one);
      ok = ok && same_bits(Op::apply(nz, pz), nz) && same_bits(Op::apply(pz, nz), nz);
      ok = ok && same_bits(Op::apply(one, two), one);
    } else if constexpr (std::is_same_v<Op, OpAnd>) {
      ok = ok && same_bits(Op::apply(two, from_d<T>(-3.0)), one) && same_bits(Op::apply(two, nz), pz);
    } else if constexpr (std::is_same_v<Op, OpOr>) {
      ok = ok && same_bits(Op::apply(nz, from_d<T>(-3.0)), one) && same_bits(Op::apply(nz, pz), pz);
    }
  } else if constexpr (!std::is_same_v<T, bool>) {
    if constexpr (std::is_same_v<Op, OpAnd>) ok = Op::apply(T(5), T(-3)) == T(1) && Op::apply(T(5), T(0)) == T(0);
    if constexpr (std::is_same_v<Op, OpOr>) ok = Op::apply(T(0), T(-3)) == T(1) && Op::apply(T(0), T(0)) == T(0);
    if constexpr (std::is_same_v<Op, OpSum>)
      ok = Op::apply(std::numeric_limits<T>::max(), T(1)) == std::numeric_limits<T>::min();  // wraps
  } else {
    if constexpr (detail::bool_kind<Op> == 1) ok = Op::apply(true, false) && !Op::apply(false, false);
    else ok = !Op::apply(true, false) && Op::apply(true, true);
  }
  return ok;
}

template <class Op, class T> void test_apply() {
  const Buf<T> sv = special_values<T>();
  const int m = int(sv.size()), n = m * m;
  Buf<T> a(n), b(n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j) a[i * m + j] = sv[i], b[i * m + j] = sv[j];
  T *da = dev_alloc<T>(n), *db = dev_alloc<T>(n), *dout = dev_alloc<T>(n), *did = dev_alloc<T>(1);
  h2d(da, a);
  h2d(db, b);
  k_apply<Op, T><<<(n + 127) / 128, 128>>>(da, db, dout, did, n);
  CK_LAUNCH();
  const Buf<T> out = d2h(dout, n), id = d2h(did, 1);
  double maxerr = 0;
  bool ok = true;
  for (int i = 0; i < n; ++i) {
    const T want = Op::apply(a[i], b[i]);
    const bool eq = same_bits(out[i], want) || (is_nan_t(out[i]) && is_nan_t(want));
    if (!eq) ok = false, maxerr = std::max(maxerr, diff_of(out[i], want));
  }
  const T hid = Op::template identity<T>();
  if (!same_bits(id[0], hid)) ok = false, maxerr = std::max(maxerr, diff_of(id[0], hid));
  if (to_d(hid) != expected_identity<Op, T>()) ok = false, maxerr = std::max(maxerr, 1.0);
  if (!host_semantics_ok<Op, T>()) ok = false, maxerr = std::max(maxerr, 1.0);
  report(ok, std::string("apply+identity<") + oname<Op>() + "," + tname<T>() + "> device==host", maxerr);
  CK(cudaFree(da));
  CK(cudaFree(db));
  CK(cudaFree(dout));
  CK(cudaFree(did));
}

// ---------------------------------------------------------------------------
// 2. atomic_combine
// ---------------------------------------------------------------------------
constexpr int kAddrs = 7;   // dst[1..7]; dst[0] and dst[8..15] are guards
constexpr int kDst = 16;

// PATH 0: the public atomic_combine; 1: detail::subword_cas_combine (the
// fallback of 16-bit types before sm_70, and of bool); 2: detail::cas_combine
// (the generic fallback, e.g. double sum before sm_60)
template <class Op, class T, int PATH>
__global__ void k_atomic(const T* vals, T* dst, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  T* p = dst + 1 + i % kAddrs;
  if constexpr (PATH == 0) atomic_combine<Op>(p, vals[i]);
  else if constexpr (PATH == 1) detail::subword_cas_combine<Op>(p, vals[i]);
  else detail::cas_combine<Op>(p, vals[i]);
}

template <class Op, class T, int PATH = 0> void test_atomic() {
  constexpr int kBlocks = 64, kThreads = 256, n = kBlocks * kThreads;
  Buf<T> vals(n), dst(kDst);
  // guards
  for (int i = 0; i < kDst; ++i) {
    if constexpr (std::is_same_v<T, bool>) dst[i] = coin(0.5);
    else dst[i] = rand_val<OpSum, T>();
  }
  Buf<T> init(kAddrs);
  if constexpr (logical_mode<Op, T>) {
    const double p_rare[kAddrs] = {0.0, 0.0, 0.0005, 0.002, 0.01, 0.1, 0.5};
    for (int a = 0; a < kAddrs; ++a) init[a] = rand_common<Op, T>();
    if constexpr (!std::is_same_v<T, bool>) init[0] = from_d<T>(std::is_same_v<Op, OpAnd> ? -3.0 : 5.0);  // unnormalised
    for (int i = 0; i < n; ++i) {
      const int a = i % kAddrs;
      vals[i] = coin(p_rare[a]) ? rand_rare<Op, T>() : rand_common<Op, T>();
    }
    vals[1 + kAddrs * int(g_rng() % (n / kAddrs - 1))] = rand_rare<Op, T>();  // address 1: exactly one rare
  } else {
    for (int i = 0; i < n; ++i) vals[i] = rand_val<Op, T>();
    for (int a = 0; a < kAddrs; ++a) init[a] = rand_val<Op, T>();
    if constexpr (std::is_same_v<Op, OpSum> && detail::is_f16_v<T>) init[0] = from_d<T>(3.0);
    if constexpr (std::is_same_v<Op, OpProd> && detail::is_f16_v<T>)
      for (int a = 0; a < kAddrs; ++a) init[a] = from_d<T>(1.0);
    if constexpr ((std::is_same_v<Op, OpMax> || std::is_same_v<Op, OpMin>) && !std::is_integral_v<T>) {
      // address 6: signed zeros only, one "winning" zero; address 5: NaN except one value
      const bool is_max = std::is_same_v<Op, OpMax>;
      const T lose = from_d<T>(is_max ? -0.0 : 0.0), win = from_d<T>(is_max ? 0.0 : -0.0);
      const T nan = from_d<T>(std::numeric_limits<double>::quiet_NaN());
      for (int i = 6; i < n; i += kAddrs) vals[i] = lose;
      for (int i = 5; i < n; i += kAddrs) vals[i] = nan;
      vals[6 + kAddrs * int(g_rng() % (n / kAddrs - 1))] = win;
      vals[5 + kAddrs * int(g_rng() % (n / kAddrs - 1))] = from_d<T>(42.0);
      init[6] = lose;
      init[5] = nan;
    }
  }
  for (int a = 0; a < kAddrs; ++a) dst[1 + a] = init[a];

  // host reference
  Buf<T> ref(init);
  std::vector<long double> refd(kAddrs), absd(kAddrs);
  for (int a = 0; a < kAddrs; ++a) refd[a] = to_d(init[a]), absd[a] = std::fabs(to_d(init[a]));
  for (int i = 0; i < n; ++i) {
    const int a = i % kAddrs;
    ref[a] = Op::apply(ref[a], vals[i]);
    if constexpr (std::is_same_v<Op, OpProd>) refd[a] *= (long double)to_d(vals[i]);
    else refd[a] += (long double)to_d(vals[i]);
    absd[a] += std::fabs(to_d(vals[i]));
  }

  T* dvals = dev_alloc<T>(n);
  T* ddst = dev_alloc<T>(kDst);
  h2d(dvals, vals);
  h2d(ddst, dst);
  k_atomic<Op, T, PATH><<<kBlocks, kThreads>>>(dvals, ddst, n);
  CK_LAUNCH();
  const Buf<T> got = d2h(ddst, kDst);
  CK(cudaFree(dvals));
  CK(cudaFree(ddst));

  bool ok = true;
  double maxerr = 0;
  for (int i = 0; i < kDst; ++i) {
    if (i >= 1 && i <= kAddrs) continue;
    if (!same_bits(got[i], dst[i])) ok = false, maxerr = std::max(maxerr, diff_of(got[i], dst[i]));
  }
  for (int a = 0; a < kAddrs; ++a) {
    const T g = got[1 + a];
    if constexpr (tol_mode<Op, T>) {
      const double eps = std::is_same_v<T, float> ? 1e-5 : 1e-13;
      const double tol = std::is_same_v<Op, OpSum> ? eps * double(absd[a]) : 3.0 * eps * std::fabs(double(refd[a]));
      const double err = std::fabs(to_d(g) - double(refd[a]));
      maxerr = std::max(maxerr, err);
      if (!(err <= tol)) ok = false;
    } else {
      const double err = diff_of(g, ref[a]);
      maxerr = std::max(maxerr, err);
      if (err != 0.0) ok = false;
    }
  }
  report(ok, std::string("atomic_combine<") + oname<Op>() + "," + tname<T>() + "> " +
                 std::to_string(n) + " threads -> 7 adjacent addresses" +
                 (PATH == 1 ? " [subword CAS fallback]" : PATH == 2 ? " [CAS fallback]" : ""),
         maxerr);
}

template <class T> void test_atomic_all_ops() {
  test_atomic<OpSum, T>();
  test_atomic<OpProd, T>();
  test_atomic<OpMax, T>();
  test_atomic<OpMin, T>();
  test_atomic<OpAnd, T>();
  test_atomic<OpOr, T>();
}
template <class T> void test_apply_all_ops() {
  test_apply<OpSum, T>();
  test_apply<OpProd, T>();
  test_apply<OpMax, T>();
  test_apply<OpMin, T>();
  test_apply<OpAnd, T>();
  test_apply<OpOr, T>();
}

// ---------------------------------------------------------------------------
// 3. block reductions
// ---------------------------------------------------------------------------
enum { FN_X = 0, FN_Y = 1, FN_ALL = 2 };

template <class Op, class T, int BX, int BY, int FN, bool OWN>
__device__ __forceinline__ T call_reduce(T v) {
  if constexpr (FN == FN_X) {
    if constexpr (OWN) return detail::shfl_block_reduce_x<Op, T, BX, BY>(v);
    else return block_reduce_x<Op, T, BX, BY>(v);
  } else if constexpr (FN == FN_Y) {
    if constexpr (OWN) return detail::shfl_block_reduce_y<Op, T, BX, BY>(v);
    else return block_reduce_y<Op, T, BX, BY>(v);
  } else {
    if constexpr (OWN) return detail::shfl_block_reduce_all<Op, T, BX, BY>(v);
    else return block_reduce_all<Op, T, BX, BY>(v);
  }
}

// Each block reduces `ntiles` consecutive tiles of BX*BY values in a loop (so
// every function is called repeatedly at the same point: exercises reuse of
// its shared memory).
template <class Op, class T, int BX, int BY, int FN, bool OWN>
__global__ void __launch_bounds__(BX* BY) k_block(const T* in, T* out, int ntiles) {
  constexpr int N = BX * BY;
  constexpr int NOUT = FN == FN_X ? BY : FN == FN_Y ? BX : 1;
  const int x = threadIdx.x, y = threadIdx.y;
#pragma unroll 1
  for (int t = 0; t < ntiles; ++t) {
    const int tile = blockIdx.x * ntiles + t;
    const T v = in[size_t(tile) * N + x + y * BX];
    const T r = call_reduce<Op, T, BX, BY, FN, OWN>(v);
    if (FN == FN_X && x == 0) out[tile * NOUT + y] = r;
    if (FN == FN_Y && y == 0) out[tile * NOUT + x] = r;
    if (FN == FN_ALL && x == 0 && y == 0) out[tile] = r;
  }
}

template <class Op, class T, int BX, int BY, int FN, bool OWN>
void run_block_case(const Buf<T>& in, const T* din, int nblocks, int ntiles) {
  constexpr int N = BX * BY;
  constexpr int NOUT = FN == FN_X ? BY : FN == FN_Y ? BX : 1;
  const int ntot = nblocks * ntiles;
  T* dout = dev_alloc<T>(size_t(ntot) * NOUT);
  CK(cudaMemset(dout, 0x5A, size_t(ntot) * NOUT * sizeof(T)));
  k_block<Op, T, BX, BY, FN, OWN><<<nblocks, dim3(BX, BY)>>>(din, dout, ntiles);
  CK_LAUNCH();
  const Buf<T> got = d2h(dout, size_t(ntot) * NOUT);
  CK(cudaFree(dout));

  bool ok = true;
  double maxerr = 0;
  for (int tile = 0; tile < ntot; ++tile) {
    for (int o = 0; o < NOUT; ++o) {
      // the reduced index set
      const int cnt = FN == FN_X ? BX : FN == FN_Y ? BY : N;
      auto idx = [&](int k) {
        if (FN == FN_X) return o * BX + k;
        if (FN == FN_Y) return o + k * BX;
        return k;
      };
      const T* base = in.data() + size_t(tile) * N;
      T ref = base[idx(0)];
      long double s = to_d(base[idx(0)]), sabs = std::fabs(to_d(base[idx(0)]));
      for (int k = 1; k < cnt; ++k) {
        const T e = base[idx(k)];
        ref = Op::apply(ref, e);
        if constexpr (std::is_same_v<Op, OpProd>) s *= (long double)to_d(e);
        else s += (long double)to_d(e);
        sabs += std::fabs(to_d(e));
      }
      const T g = got[size_t(tile) * NOUT + o];
      if constexpr (tol_mode<Op, T>) {
        const double eps = std::is_same_v<T, float> ? 4e-6 : 1e-14;
        const double tol = std::is_same_v<Op, OpSum> ? eps * double(sabs) + 1e-30 : cnt * eps * std::fabs(double(s));
        const double err = std::fabs(to_d(g) - double(s));
        maxerr = std::max(maxerr, err);
        if (!(err <= tol)) ok = false;
      } else {
        const double err = diff_of(g, ref);
        maxerr = std::max(maxerr, err);
        if (err != 0.0) ok = false;
      }
    }
  }
  const char* fname = FN == FN_X ? "block_reduce_x" : FN == FN_Y ? "block_reduce_y" : "block_reduce_all";
  report(ok, std::string(fname) + "<" + oname<Op>() + "," + tname<T>() + "," + std::to_string(BX) + "," +
                 std::to_string(BY) + ">" + (OWN ? "[own]" : "[cub]"),
         maxerr);
}

template <class Op, class T, int BX, int BY> void test_block() {
  constexpr int N = BX * BY;
  constexpr int nblocks = 2, ntiles = 4, ntot = nblocks * ntiles;
  Buf<T> in(size_t(ntot) * N);
  for (int tile = 0; tile < ntot; ++tile) {
    T* p = in.data() + size_t(tile) * N;
    if constexpr (logical_mode<Op, T>) {
      // tile%4 == 0: no rare value, 1: one, 2: three, 3: each with p = 1/16
      const int kind = tile % 4;
      for (int i = 0; i < N; ++i) p[i] = (kind == 3 && coin(1.0 / 16)) ? rand_rare<Op, T>() : rand_common<Op, T>();
      const int nr = kind == 1 ? 1 : kind == 2 ? 3 : 0;
      for (int r = 0; r < nr; ++r) p[g_rng() % N] = rand_rare<Op, T>();
    } else {
      for (int i = 0; i < N; ++i) p[i] = rand_val<Op, T>();
    }
  }
  T* din = dev_alloc<T>(in.size());
  h2d(din, in);
  run_block_case<Op, T, BX, BY, FN_X, false>(in, din, nblocks, ntiles);
  run_block_case<Op, T, BX, BY, FN_X, true>(in, din, nblocks, ntiles);
  run_block_case<Op, T, BX, BY, FN_Y, false>(in, din, nblocks, ntiles);
  run_block_case<Op, T, BX, BY, FN_Y, true>(in, din, nblocks, ntiles);
  run_block_case<Op, T, BX, BY, FN_ALL, false>(in, din, nblocks, ntiles);
  run_block_case<Op, T, BX, BY, FN_ALL, true>(in, din, nblocks, ntiles);
  CK(cudaFree(din));
}

// Representative (type, op) pairs: every type and every op at least once.
template <int BX, int BY> void test_block_shape() {
  test_block<OpSum, float, BX, BY>();
  test_block<OpMax, int32_t, BX, BY>();
  test_block<OpMin, __half, BX, BY>();
  test_block<OpAnd, bool, BX, BY>();
  test_block<OpOr, bool, BX, BY>();
  test_block<OpProd, int64_t, BX, BY>();
  test_block<OpSum, double, BX, BY>();
  test_block<OpSum, __nv_bfloat16, BX, BY>();
  test_block<OpMax, float, BX, BY>();
}

// ---------------------------------------------------------------------------
// 4. ordered_combine
// ---------------------------------------------------------------------------
constexpr int kOcSlots = 40, kOcOuts = 5, kOcThreads = 256, kOcChunk = 4096;

__global__ void __launch_bounds__(kOcThreads)
    k_ordered_f32(const float* in, float* partials, unsigned* counters, float* out, bool overwrite) {
  const int s = blockIdx.x, o = blockIdx.y;
  const float* p = in + (size_t(o) * kOcSlots + s) * kOcChunk;
  float acc = 0.0f;
  for (int i = threadIdx.x; i < kOcChunk; i += kOcThreads) acc += p[i];
  const float bv = block_reduce_all<OpSum, float, kOcThreads, 1>(acc);
  if (threadIdx.x == 0)
    ordered_combine<OpSum, float>(partials + o * kOcSlots, counters + o, s, kOcSlots, bv, out + o, overwrite);
}

static void test_ordered_f32() {
  const size_t n = size_t(kOcOuts) * kOcSlots * kOcChunk;
  Buf<float> in(n);
  for (auto& v : in) v = float(urand(-1.0, 1.0));
  std::vector<long double> ref(kOcOuts, 0.0L), sabs(kOcOuts, 0.0L);
  for (size_t i = 0; i < n; ++i) ref[i / (size_t(kOcSlots) * kOcChunk)] += in[i], sabs[i / (size_t(kOcSlots) * kOcChunk)] += std::fabs(in[i]);
  float *din = dev_alloc<float>(n), *dpart = dev_alloc<float>(kOcOuts * kOcSlots), *dout = dev_alloc<float>(kOcOuts);
  unsigned* dcnt = dev_alloc<unsigned>(kOcOuts);
  h2d(din, in);
  CK(cudaMemset(dcnt, 0, kOcOuts * sizeof(unsigned)));

  std::vector<Buf<float>> runs;
  bool counters_ok = true, order_ok = true;
  for (int r = 0; r < 5; ++r) {
    CK(cudaMemset(dout, 0xFF, kOcOuts * sizeof(float)));  // garbage: must be overwritten
    k_ordered_f32<<<dim3(kOcSlots, kOcOuts), kOcThreads>>>(din, dpart, dcnt, dout, true);
    CK_LAUNCH();
    runs.push_back(d2h(dout, kOcOuts));
    for (unsigned c : d2h(dcnt, kOcOuts)) counters_ok = counters_ok && c == 0;
    // the result must be the index-ordered fold of the partials
    const Buf<float> part = d2h(dpart, kOcOuts * kOcSlots);
    for (int o = 0; o < kOcOuts; ++o) {
      float f = part[o * kOcSlots];
      for (int s = 1; s < kOcSlots; ++s) f = f + part[o * kOcSlots + s];
      order_ok = order_ok && same_bits(f, runs.back()[o]);
    }
  }
  bool identical = true;
  for (int r = 1; r < 5; ++r) identical = identical && memcmp(runs[r].data(), runs[0].data(), kOcOuts * sizeof(float)) == 0;
  double maxerr = 0;
  bool close = true;
  for (int o = 0; o < kOcOuts; ++o) {
    const double err = std::fabs(double(runs[0][o]) - double(ref[o]));
    maxerr = std::max(maxerr, err);
    close = close && err <= 1e-5 * double(sabs[o]);
  }
  report(identical, "ordered_combine<OpSum,f32> 40 blocks x 5 outputs: 5 runs bit-identical", identical ? 0.0 : maxerr);
  report(close && order_ok, "ordered_combine<OpSum,f32> result == index-ordered fold of partials, close to CPU", maxerr);
  report(counters_ok, "ordered_combine counters reset to 0 after each launch", counters_ok ? 0.0 : 1.0);

  // accumulate mode: out = out + result
  k_ordered_f32<<<dim3(kOcSlots, kOcOuts), kOcThreads>>>(din, dpart, dcnt, dout, false);
  CK_LAUNCH();
  const Buf<float> acc = d2h(dout, kOcOuts);
  bool ok = true;
  maxerr = 0;
  for (int o = 0; o < kOcOuts; ++o) {
    const float want = runs[0][o] + runs[0][o];  // same partials, same order
    const double err = diff_of(acc[o], want);
    maxerr = std::max(maxerr, err);
    ok = ok && err == 0.0;
  }
  report(ok, "ordered_combine<OpSum,f32> overwrite_out=false accumulates into *out", maxerr);
  CK(cudaFree(din));
  CK(cudaFree(dpart));
  CK(cudaFree(dout));
  CK(cudaFree(dcnt));
}

// one thread per block, block value = input: the result is exactly the host
// index-ordered fold (all types)
constexpr int kOtSlots = 7, kOtOuts = 3;

template <class Op, class T>
__global__ void k_ordered_small(const T* in, T* partials, unsigned* counters, T* out, bool overwrite) {
  const int s = blockIdx.x, o = blockIdx.y;
  ordered_combine<Op, T>(partials + o * kOtSlots, counters + o, s, kOtSlots, in[o * kOtSlots + s], out + o,
                         overwrite);
}

template <class Op, class T> void test_ordered_small() {
  Buf<T> in(kOtSlots * kOtOuts), out0(kOtOuts);
  for (auto& v : in) v = logical_mode<Op, T> ? (coin(0.3) ? rand_rare<Op, T>() : rand_common<Op, T>()) : rand_val<Op, T>();
  for (auto& v : out0) v = logical_mode<Op, T> ? rand_common<Op, T>() : rand_val<Op, T>();
  T *din = dev_alloc<T>(in.size()), *dpart = dev_alloc<T>(in.size()), *dout = dev_alloc<T>(kOtOuts);
  unsigned* dcnt = dev_alloc<unsigned>(kOtOuts);
  h2d(din, in);
  CK(cudaMemset(dcnt, 0, kOtOuts * sizeof(unsigned)));
  bool ok = true;
  double maxerr = 0;
  for (int pass = 0; pass < 2; ++pass) {
    const bool overwrite = pass == 0;
    h2d(dout, out0);
    k_ordered_small<Op, T><<<dim3(kOtSlots, kOtOuts), 1>>>(din, dpart, dcnt, dout, overwrite);
    CK_LAUNCH();
    const Buf<T> got = d2h(dout, kOtOuts);
    for (int o = 0; o < kOtOuts; ++o) {
      T r = in[o * kOtSlots];
      for (int s = 1; s < kOtSlots; ++s) r = Op::apply(r, in[o * kOtSlots + s]);
      if (!overwrite) r = Op::apply(out0[o], r);
      const double err = diff_of(got[o], r);
      maxerr = std::max(maxerr, err);
      ok = ok && err == 0.0;
    }
    for (unsigned c : d2h(dcnt, kOtOuts)) ok = ok && c == 0;
  }
  report(ok, std::string("ordered_combine<") + oname<Op>() + "," + tname<T>() + "> 7 slots x 3 outputs, both modes",
         maxerr);
  CK(cudaFree(din));
  CK(cudaFree(dpart));
  CK(cudaFree(dout));
  CK(cudaFree(dcnt));
}

// ---------------------------------------------------------------------------
// 5. ordered_combine_block: what generated kernels call (every thread of the block, lines of
// threads along AXIS reducing into one output each, the last block combining with its line)
// ---------------------------------------------------------------------------
constexpr int kObSlots = 37, kObLinesGrid = 3;

template <class Op, class T, class TOut, int BX, int BY, int AXIS>
__global__ void k_ordered_block(const T* in, T* partials, unsigned* counters, TOut* out) {
  constexpr int LINES = AXIS == 0 ? BY : BX, B = AXIS == 0 ? BX : BY;
  const int line = AXIS == 0 ? threadIdx.y : threadIdx.x, k = AXIS == 0 ? threadIdx.x : threadIdx.y;
  const int o = blockIdx.y * LINES + line, slot = blockIdx.x;
  T v = in[(size_t(o) * kObSlots + slot) * B + k];
  v = AXIS == 0 ? block_reduce_x<Op, T, BX, BY>(v) : block_reduce_y<Op, T, BX, BY>(v);
  ordered_combine_block<Op, T, BX, BY, AXIS>(partials, counters, kObSlots, kObLinesGrid * LINES, slot, k == 0, o, v, out);
}

// The host side of the ordered-combine tests: `outs` outputs, output o reducing the kObSlots *
// per_slot inputs from in[o * kObSlots * per_slot]; launch(in, partials, counters, out) runs the
// kernel. Four runs must give identical bits, reset every counter and come close to the CPU.
template <class Op, class T, class TOut, class Launch>
void check_ordered(int outs, int per_slot, double tol, const std::string& what, Launch launch) {
  Buf<T> in(size_t(outs) * kObSlots * per_slot);
  for (auto& v : in) v = logical_mode<Op, T> ? (coin(0.02) ? rand_rare<Op, T>() : rand_common<Op, T>()) : rand_val<Op, T>();
  T *din = dev_alloc<T>(in.size()), *dpart = dev_alloc<T>(size_t(outs) * kObSlots);
  TOut* dout = dev_alloc<TOut>(outs);
  unsigned* dcnt = dev_alloc<unsigned>(outs);
  h2d(din, in);
  CK(cudaMemset(dcnt, 0, outs * sizeof(unsigned)));
  std::vector<Buf<TOut>> runs;
  bool counters_ok = true;
  for (int r = 0; r < 4; ++r) {
    CK(cudaMemset(dout, 0xFF, outs * sizeof(TOut)));  // poison: every output must be written
    launch(din, dpart, dcnt, dout);
    CK_LAUNCH();
    runs.push_back(d2h(dout, outs));
    for (unsigned c : d2h(dcnt, outs)) counters_ok = counters_ok && c == 0;
  }
  bool identical = true;
  for (int r = 1; r < 4; ++r) identical = identical && memcmp(runs[r].data(), runs[0].data(), outs * sizeof(TOut)) == 0;
  double maxerr = 0;
  for (int o = 0; o < outs; ++o) {
    T want = Op::template identity<T>();
    for (int i = 0; i < kObSlots * per_slot; ++i) want = Op::apply(want, in[size_t(o) * kObSlots * per_slot + i]);
    maxerr = std::max(maxerr, diff_of(runs[0][o], static_cast<TOut>(want)));
  }
  report(identical && counters_ok && maxerr <= tol, what + ": 4 runs bit-identical, counters reset, close to CPU", maxerr);
  CK(cudaFree(din));
  CK(cudaFree(dpart));
  CK(cudaFree(dout));
  CK(cudaFree(dcnt));
}

template <class Op, class T, class TOut, int BX, int BY, int AXIS>
void test_ordered_block(double tol) {
  constexpr int LINES = AXIS == 0 ? BY : BX, B = AXIS == 0 ? BX : BY;
  check_ordered<Op, T, TOut>(kObLinesGrid * LINES, B, tol,
                             std::string("ordered_combine_block<") + oname<Op>() + "," + tname<T>() + "> " +
                                 std::to_string(BX) + "x" + std::to_string(BY) + " axis " + std::to_string(AXIS),
                             [](const T* in, T* partials, unsigned* counters, TOut* out) {
                               k_ordered_block<Op, T, TOut, BX, BY, AXIS>
                                   <<<dim3(kObSlots, kObLinesGrid), dim3(BX, BY)>>>(in, partials, counters, out);
                             });
}

// ordered_combine_block_lanes: the same with V outputs per thread (a y-reduce's lanes), the
// inputs of each lane reduced first by block_reduce_y_lanes, as generated kernels do. Packed: the
// V outputs of a line are consecutive from a multiple of V, as in generated kernels (partials
// move as vectors); else strided (the function must not assume consecutive ones).
template <class Op, class T, class TOut, int BX, int BY, int V, bool Packed>
__global__ void k_ordered_block_lanes(const T* in, T* partials, unsigned* counters, TOut* out) {
  constexpr int outs_per_lane = kObLinesGrid * BX;
  const int line = threadIdx.x, k = threadIdx.y, slot = blockIdx.x;
  T acc[V];
  long long oidx[V];
  for (int l = 0; l < V; ++l) {
    oidx[l] = Packed ? (long long)(blockIdx.y * BX + line) * V + l : (long long)l * outs_per_lane + blockIdx.y * BX + line;
    acc[l] = in[(size_t(oidx[l]) * kObSlots + slot) * BY + k];
  }
  block_reduce_y_lanes<Op, T, BX, BY, V>(acc);
  ordered_combine_block_lanes<Op, T, BX, BY, V>(partials, counters, kObSlots, outs_per_lane * V, slot, k == 0, oidx, acc,
                                                out);
}

template <class Op, class T, class TOut, int BX, int BY, int V, bool Packed = false>
void test_ordered_block_lanes(double tol) {
  check_ordered<Op, T, TOut>(kObLinesGrid * BX * V, BY, tol,
                             std::string("ordered_combine_block_lanes<") + oname<Op>() + "," + tname<T>() + "> " +
                                 std::to_string(BX) + "x" + std::to_string(BY) + " x " + std::to_string(V) + " lanes" +
                                 (Packed ? " packed" : " strided"),
                             [](const T* in, T* partials, unsigned* counters, TOut* out) {
                               k_ordered_block_lanes<Op, T, TOut, BX, BY, V, Packed>
                                   <<<dim3(kObSlots, kObLinesGrid), dim3(BX, BY)>>>(in, partials, counters, out);
                             });
}

// ---------------------------------------------------------------------------
// ---------------------------------------------------------------------------
// load_vec: plain and streaming vector loads return the V elements at p, bit for bit
// ---------------------------------------------------------------------------
template <class T, int V, bool Stream>
__global__ void k_load_vec(const T* __restrict__ in, T* out, int nvec) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= nvec) return;
  const Vec<T, V> v = load_vec<V, Stream>(in + (size_t)i * V);
  for (int l = 0; l < V; ++l) out[(size_t)i * V + l] = v[l];
}

// `count` elements of T with random bytes (bool: 0 or 1) in, `launch(in, out)` on the device, and
// the bytes of `out` (zeroed first) back: {input bytes, output bytes}.
template <class T, class Launch>
std::pair<std::vector<unsigned char>, std::vector<unsigned char>> bytes_through(size_t count, Launch launch) {
  const size_t bytes = count * sizeof(T);
  std::vector<unsigned char> h(bytes), back(bytes, 0);
  for (auto& b : h) b = (unsigned char)(g_rng() & (std::is_same<T, bool>::value ? 1 : 0xFF));
  T *din = nullptr, *dout = nullptr;
  CK(cudaMalloc(&din, bytes));
  CK(cudaMalloc(&dout, bytes));
  CK(cudaMemcpy(din, h.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemset(dout, 0, bytes));
  launch(din, dout);
  CK_LAUNCH();
  CK(cudaMemcpy(back.data(), dout, bytes, cudaMemcpyDeviceToHost));
  CK(cudaFree(din));
  CK(cudaFree(dout));
  return {std::move(h), std::move(back)};
}

template <class T, int V, bool Stream>
void test_load_vec() {
  const int nvec = 1000;  // not a multiple of the block
  const size_t bytes = (size_t)nvec * V * sizeof(T);
  const auto [h, back] = bytes_through<T>((size_t)nvec * V, [&](const T* in, T* out) {
    k_load_vec<T, V, Stream><<<(nvec + 127) / 128, 128>>>(in, out, nvec);
  });
  size_t bad = 0;
  for (size_t k = 0; k < bytes; ++k) bad += back[k] != h[k];
  report(bad == 0, std::string("load_vec<") + std::to_string(V) + (Stream ? ", stream> " : "> ") + tname<T>(), (double)bad);
}

template <class T, int V>
void test_load_vec_both() {
  test_load_vec<T, V, false>();
  test_load_vec<T, V, true>();
}

// ---------------------------------------------------------------------------
// block_broadcast: every thread of a row (Axis 0) or column (Axis 1) gets its leader's value, bit
// for bit; called twice in a row (the shared-memory path reuses its scratch)
// ---------------------------------------------------------------------------
template <int Axis, class T, int BX, int BY>
__global__ void k_block_broadcast(const T* in, T* out) {
  const int tid = int(threadIdx.x + threadIdx.y * BX), n = BX * BY;
  const T a = block_broadcast<Axis, T, BX, BY>(in[blockIdx.x * 2 * n + tid]);
  const T b = block_broadcast<Axis, T, BX, BY>(in[blockIdx.x * 2 * n + n + tid]);
  out[blockIdx.x * 2 * n + tid] = a;
  out[blockIdx.x * 2 * n + n + tid] = b;
}

template <int Axis, class T, int BX, int BY>
void test_block_broadcast() {
  constexpr int n = BX * BY, blocks = 3;
  const size_t count = size_t(blocks) * 2 * n;
  const auto [h, back] = bytes_through<T>(count, [](const T* in, T* out) {
    k_block_broadcast<Axis, T, BX, BY><<<blocks, dim3(BX, BY)>>>(in, out);
  });
  size_t bad = 0;
  for (size_t k = 0; k < count; ++k) {
    const size_t base = k / n * n, x = (k % n) % BX, y = (k % n) / BX;
    const size_t leader = base + (Axis == 0 ? y * BX : x);
    bad += memcmp(back.data() + k * sizeof(T), h.data() + leader * sizeof(T), sizeof(T)) != 0;
  }
  report(bad == 0, std::string("block_broadcast<") + (Axis == 0 ? "x, " : "y, ") + tname<T>() + ", " + std::to_string(BX) +
                       ", " + std::to_string(BY) + ">",
         (double)bad);
}

// ---------------------------------------------------------------------------
// OrderedScratch: one set of partials and zeroed counters per stream, reused on that stream,
// grown (counters alone too) in stream order, never made during a graph capture.
// ---------------------------------------------------------------------------
static bool counters_zero(const unsigned int* c, long long n, cudaStream_t s) {
  CK(cudaStreamSynchronize(s));
  Buf<unsigned int> h = d2h(c, (size_t)n);
  return std::all_of(h.begin(), h.end(), [](unsigned int v) { return v == 0u; });
}

void test_ordered_scratch() {
  OrderedScratch<float> scratch;
  cudaStream_t sa, sb;
  CK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
  float *pa = nullptr, *pb = nullptr, *p = nullptr;
  unsigned int *ca = nullptr, *cb = nullptr, *c = nullptr;
  CK(scratch.get(sa, 100, 10, &pa, &ca));
  CK(scratch.get(sb, 100, 10, &pb, &cb));
  report(pa && pb && pa != pb && ca != cb && counters_zero(ca, 10, sa) && counters_zero(cb, 10, sb),
         "OrderedScratch: two streams get two zeroed sets", 0);
  CK(scratch.get(sa, 60, 10, &p, &c));
  report(p == pa && c == ca, "OrderedScratch: a stream's set is reused when it is large enough", 0);
  // More outputs with fewer slots each: the partials fit, the counters must still grow.
  CK(scratch.get(sa, 50, 1000, &p, &c));
  report(p == pa && c != ca && counters_zero(c, 1000, sa), "OrderedScratch: counters grow on their own, zeroed", 0);
  ca = c;
  CK(scratch.get(sa, 5000, 1000, &p, &c));
  report(p != pa && c == ca, "OrderedScratch: partials grow on their own", 0);
  pa = p;
  // The per-thread default stream is one stream per host thread: two sets.
  float* pt[2] = {};
  unsigned int* ct[2] = {};
  cudaError_t et[2] = {};
  std::thread t0([&] { et[0] = scratch.get(cudaStreamPerThread, 8, 8, &pt[0], &ct[0]); });
  std::thread t1([&] { et[1] = scratch.get(cudaStreamPerThread, 8, 8, &pt[1], &ct[1]); });
  t0.join();
  t1.join();
  report(et[0] == cudaSuccess && et[1] == cudaSuccess && pt[0] != pt[1] && ct[0] != ct[1],
         "OrderedScratch: the per-thread default streams of two threads get two sets", 0);
  // During a capture, the stream's existing set is handed out; a new or larger one is refused.
  cudaGraph_t graph = nullptr;
  CK(cudaStreamBeginCapture(sa, cudaStreamCaptureModeGlobal));
  const cudaError_t fits = scratch.get(sa, 5000, 1000, &p, &c);
  const bool same = p == pa && c == ca;
  const cudaError_t grows = scratch.get(sa, 10000, 1000, &p, &c);
  const cudaError_t end = cudaStreamEndCapture(sa, &graph);
  if (graph) CK(cudaGraphDestroy(graph));
  (void)cudaGetLastError();
  report(fits == cudaSuccess && same && grows == cudaErrorStreamCaptureUnsupported && end == cudaSuccess,
         std::string("OrderedScratch: under capture, existing set ") + cudaGetErrorString(fits) + ", growth " +
             cudaGetErrorString(grows) + ", end capture " + cudaGetErrorString(end),
         0);
  CK(cudaStreamDestroy(sa));
  CK(cudaStreamDestroy(sb));
}

int main() {
  int ndev = 0;
  CK(cudaGetDeviceCount(&ndev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);

  test_apply_all_ops<bool>();
  test_apply_all_ops<int32_t>();
  test_apply_all_ops<int64_t>();
  test_apply_all_ops<__half>();
  test_apply_all_ops<__nv_bfloat16>();
  test_apply_all_ops<float>();
  test_apply_all_ops<double>();

  test_atomic_all_ops<bool>();
  test_atomic_all_ops<int32_t>();
  test_atomic_all_ops<int64_t>();
  test_atomic_all_ops<__half>();
  test_atomic_all_ops<__nv_bfloat16>();
  test_atomic_all_ops<float>();
  test_atomic_all_ops<double>();
  // fallback paths that sm_90 does not take through atomic_combine
  test_atomic<OpSum, __half, 1>();
  test_atomic<OpMax, __nv_bfloat16, 1>();
  test_atomic<OpMin, __half, 1>();
  test_atomic<OpProd, bool, 1>();
  test_atomic<OpOr, bool, 1>();
  test_atomic<OpSum, double, 2>();
  test_atomic<OpSum, __half, 2>();
  test_atomic<OpAnd, int32_t, 2>();

  test_block_shape<256, 1>();
  test_block_shape<1024, 1>();
  test_block_shape<32, 8>();
  test_block_shape<96, 3>();
  test_block_shape<8, 32>();
  test_block_shape<1, 64>();
  test_block_shape<3, 11>();   // 33 threads: partial warp, rows straddle warps
  test_block_shape<40, 5>();   // 200 threads: BX > 32 not a multiple of 32

  test_ordered_f32();
  test_ordered_small<OpSum, float>();
  test_ordered_small<OpSum, int32_t>();
  test_ordered_small<OpProd, int64_t>();
  test_ordered_small<OpMax, __half>();
  test_ordered_small<OpMin, __nv_bfloat16>();
  test_ordered_small<OpMax, double>();
  test_ordered_small<OpOr, bool>();
  test_ordered_small<OpAnd, bool>();

  test_ordered_block<OpSum, float, float, 512, 1, 0>(1e-3);
  test_ordered_block<OpSum, float, float, 32, 8, 0>(1e-3);
  test_ordered_block<OpSum, float, float, 32, 8, 1>(1e-3);
  test_ordered_block<OpSum, int32_t, int32_t, 40, 5, 0>(0.0);
  test_ordered_block<OpMax, float, float, 3, 11, 1>(0.0);
  test_ordered_block<OpAnd, bool, bool, 256, 1, 0>(0.0);
  test_ordered_block_lanes<OpSum, float, float, 32, 8, 2>(1e-3);
  test_ordered_block_lanes<OpSum, float, __half, 32, 8, 4>(0.13);
  test_ordered_block_lanes<OpMax, float, float, 3, 11, 4>(0.0);
  test_ordered_block_lanes<OpAnd, bool, bool, 32, 8, 16>(0.0);
  test_ordered_block_lanes<OpOr, bool, bool, 32, 8, 4>(0.0);
  test_ordered_block_lanes<OpMin, int32_t, int32_t, 64, 4, 4>(0.0);
  test_ordered_block_lanes<OpSum, double, double, 16, 16, 2>(1e-9);
  test_ordered_block_lanes<OpSum, float, float, 32, 8, 4, true>(1e-3);      // 16-byte pieces
  test_ordered_block_lanes<OpSum, float, __half, 32, 8, 2, true>(0.13);     // 8-byte pieces
  test_ordered_block_lanes<OpMax, float, float, 3, 11, 8, true>(0.0);       // two 16-byte pieces
  test_ordered_block_lanes<OpAnd, bool, bool, 32, 8, 16, true>(0.0);        // 16 bools, one piece
  test_ordered_block_lanes<OpOr, bool, bool, 32, 8, 4, true>(0.0);          // 4-byte piece
  test_ordered_block_lanes<OpOr, bool, bool, 16, 4, 2, true>(0.0);          // no piece: element by element
  test_ordered_block_lanes<OpMin, int32_t, int32_t, 64, 4, 3, true>(0.0);   // 12 bytes: 4-byte pieces
  test_ordered_block_lanes<OpSum, double, double, 16, 16, 2, true>(1e-9);   // 16-byte piece
  test_ordered_block<OpOr, bool, bool, 8, 32, 1>(0.0);
  test_ordered_block<OpSum, float, __half, 64, 4, 0>(0.13);

  test_load_vec_both<float, 1>();
  test_load_vec_both<float, 2>();
  test_load_vec_both<float, 4>();
  test_load_vec_both<__half, 2>();
  test_load_vec_both<__half, 8>();
  test_load_vec_both<__nv_bfloat16, 4>();
  test_load_vec_both<int32_t, 4>();
  test_load_vec_both<double, 2>();
  test_load_vec_both<bool, 16>();
  test_load_vec_both<bool, 4>();

  test_block_broadcast<0, float, 32, 8>();          // one shuffle a row
  test_block_broadcast<0, __half, 8, 32>();
  test_block_broadcast<0, bool, 16, 4>();
  test_block_broadcast<0, int64_t, 4, 64>();        // 8 bytes through the shuffle
  test_block_broadcast<0, double, 64, 4>();         // rows over two warps: shared memory
  test_block_broadcast<0, __nv_bfloat16, 3, 11>();  // partial warp
  test_block_broadcast<0, int32_t, 16, 1>();        // half a warp
  test_block_broadcast<1, float, 32, 8>();
  test_block_broadcast<1, bool, 1, 64>();
  test_block_broadcast<1, int64_t, 40, 5>();
  test_block_broadcast<1, float, 256, 1>();         // one row: the value itself

  test_ordered_scratch();

  finish_and_exit(g_fail == 0 ? 0 : 1);
}
