// The CUB peer of the benchmark (bench/reduce_bench.py loads it with ctypes): cub::DeviceReduce
// for reductions over every dim, cub::DeviceSegmentedReduce for reductions over the trailing
// (contiguous) dims. Temporary storage and segment offsets are allocated on the first call with
// given sizes and kept, so timed calls launch CUB's kernels only, as a user who keeps them would.
// It also holds the benchmark's two reference kernels: an empty kernel (the launch floor) and a
// kernel that only moves a case's bytes (the floor at that size, see move_launch).
//   op: 0 sum, 1 max, 2 logical and;  dtype: 0 f32, 1 f16, 2 i32, 3 bool
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cuda/functional>
#include <cuda/std/functional>
#include <cuda_fp16.h>

#include <algorithm>

namespace {

struct LogicalAnd {
  __host__ __device__ bool operator()(bool a, bool b) const { return a && b; }
};

struct Scratch {
  void *temp = nullptr;
  size_t bytes = 0;
  long long *offsets = nullptr;
  long long rows = -1, cols = -1;
};
Scratch scratch;

cudaError_t reserve(size_t bytes) {
  if (bytes <= scratch.bytes) return cudaSuccess;
  cudaFree(scratch.temp);
  scratch.bytes = bytes;
  return cudaMalloc(&scratch.temp, bytes);
}

__global__ void fillOffsets(long long *o, long long rows, long long cols) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i <= rows) o[i] = i * cols;
}

cudaError_t offsetsFor(long long rows, long long cols) {
  if (scratch.rows == rows && scratch.cols == cols) return cudaSuccess;
  cudaFree(scratch.offsets);
  cudaError_t err = cudaMalloc(&scratch.offsets, sizeof(long long) * (rows + 1));
  if (err != cudaSuccess) return err;
  fillOffsets<<<(unsigned)((rows + 256) / 256), 256>>>(scratch.offsets, rows, cols);
  scratch.rows = rows;
  scratch.cols = cols;
  return cudaDeviceSynchronize();
}

template <class T, class Op>
cudaError_t all(const void *in, void *out, long long n, Op op, T init, cudaStream_t s) {
  size_t bytes = 0;
  auto run = [&](void *temp) {
    return cub::DeviceReduce::Reduce(temp, bytes, static_cast<const T *>(in), static_cast<T *>(out), n, op, init, s);
  };
  cudaError_t err = run(nullptr);
  if (err == cudaSuccess) err = reserve(bytes);
  return err == cudaSuccess ? run(scratch.temp) : err;
}

template <class T, class Op>
cudaError_t rows(const void *in, void *out, long long nrows, long long ncols, Op op, T init, cudaStream_t s) {
  cudaError_t err = offsetsFor(nrows, ncols);
  if (err != cudaSuccess) return err;
  size_t bytes = 0;
  auto run = [&](void *temp) {
    return cub::DeviceSegmentedReduce::Reduce(temp, bytes, static_cast<const T *>(in), static_cast<T *>(out), nrows,
                                              scratch.offsets, scratch.offsets + 1, op, init, s);
  };
  err = run(nullptr);
  if (err == cudaSuccess) err = reserve(bytes);
  return err == cudaSuccess ? run(scratch.temp) : err;
}

// Sum and max in the input type (CUB's own choice of accumulator), logical and over bool.
template <class Do>
cudaError_t dispatch(int op, int dtype, Do &&go) {
  switch (op * 4 + dtype) {
  case 0: return go(::cuda::std::plus<float>{}, 0.0f);
  case 1: return go(::cuda::std::plus<__half>{}, __float2half(0.0f));
  case 2: return go(::cuda::std::plus<int>{}, 0);
  case 4: return go(::cuda::maximum<float>{}, -INFINITY);
  case 5: return go(::cuda::maximum<__half>{}, __float2half(-INFINITY));
  case 6: return go(::cuda::maximum<int>{}, INT_MIN);
  case 11: return go(LogicalAnd{}, true);
  default: return cudaErrorInvalidValue;
  }
}

} // namespace

extern "C" int cub_all(int op, int dtype, const void *in, void *out, long long n, cudaStream_t s) {
  return dispatch(op, dtype, [&](auto f, auto init) { return all<decltype(init)>(in, out, n, f, init, s); });
}

extern "C" int cub_rows(int op, int dtype, const void *in, void *out, long long nrows, long long ncols, cudaStream_t s) {
  return dispatch(op, dtype, [&](auto f, auto init) { return rows<decltype(init)>(in, out, nrows, ncols, f, init, s); });
}

// The launch floor: an empty kernel of one thread (torch's add_ on an empty tensor launches nothing).
__global__ void empty_kernel() {}

extern "C" int empty_launch(cudaStream_t s) {
  empty_kernel<<<1, 1, 0, s>>>();
  return (int)cudaGetLastError();
}

// The floor at a case's size: a kernel that reads `rbytes` from `src` and writes `wbytes` to `dst`
// in 16-byte vectors and does nothing else (the loaded words are folded into one that is stored
// only if it equals a constant, so the loads stay live). Any kernel reading a case's inputs and
// writing its outputs moves at least these bytes; `config` picks the launch shape, and the
// benchmark keeps the faster of the two:
//   0: 512 threads, 4 vectors in flight a thread, at most 4 blocks an SM (grid-stride);
//   1: 256 threads, 2 vectors a thread, one pass (as many blocks as the bytes need).
template <int U>
__global__ void move_kernel(const uint4 *src, long long nr, uint4 *dst, long long nw, unsigned *sink) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long n = nr > nw ? nr : nw;
  unsigned acc = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      v[u] = i + u * stride < nr ? __ldcs(src + i + u * stride) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
      if (i + u * stride < nw) __stcs(dst + i + u * stride, make_uint4(u, 1, 2, 3));
    }
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

extern "C" int move_launch(int config, const void *src, long long rbytes, void *dst, long long wbytes,
                           unsigned *sink, cudaStream_t s) {
  static int sms = 0;
  if (!sms && cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) return -1;
  const long long nr = rbytes / 16, nw = wbytes / 16, n = nr > nw ? nr : nw;
  if (n == 0) return (int)cudaErrorInvalidValue;
  auto *in = static_cast<const uint4 *>(src);
  auto *out = static_cast<uint4 *>(dst);
  if (config == 0) {
    const long long blocks = std::min<long long>((n + 2047) / 2048, 4LL * sms);
    move_kernel<4><<<(unsigned)blocks, 512, 0, s>>>(in, nr, out, nw, sink);
  } else {
    move_kernel<2><<<(unsigned)((n + 511) / 512), 256, 0, s>>>(in, nr, out, nw, sink);
  }
  return (int)cudaGetLastError();
}
