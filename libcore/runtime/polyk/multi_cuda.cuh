// polyk/multi_cuda.cuh -- the CUDA backend of polyk/multi.hpp's tracker: each device is a stream
// with its own allocations, either on one GPU (Mode::Virtual: N virtual devices, so a partitioned
// program can be checked and its transfers counted on a single card) or one GPU each (Mode::Gpu,
// peer copies over NVLink / PCIe). Every device's kernels run on its own non-blocking stream, and
// the copies into it on a second one, so ordering between devices exists only where the data asks
// for it:
//  - a copy waits for the work its source and destination devices' kernel streams hold (the
//    writer of `from`; the last reader of `to`), and for the earlier copy that brought `from`
//    where one is still in flight, but not for the other copies those devices send or receive:
//    a step's halo copies run side by side, not one after another;
//  - a device's kernel stream waits for its incoming copies, and for its outgoing ones to have
//    read, only when it is handed out for the next launch (stream(dev)), and before a fill, an
//    upload, a download or a copy within the device.
// Backend calls may change the current device: call activate(dev) before launching on dev. Only
// for code that nvcc compiles.
#ifndef POLYK_MULTI_CUDA_CUH
#define POLYK_MULTI_CUDA_CUH

#include "polyk/multi.hpp"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

#define POLYK_MULTI_CUDA_CHECK(call) ::polyk::multi::cudaCheck((call), #call)

namespace polyk::multi {

inline void cudaCheck(cudaError_t status, const char *call) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string("polyk::multi::CudaBackend: ") + call + ": " + cudaGetErrorString(status));
}

class CudaBackend : public Backend {
 public:
  enum class Mode { Virtual, Gpu };

  // Mode::Gpu: device d is GPU firstGpu + d (an MPI process drives its node's GPUs from its share on).
  CudaBackend(int devices, Mode m, int firstGpu = 0) : mode(m), count(devices), first(firstGpu) {
    if (devices < 1)
      throw std::invalid_argument("polyk::multi::CudaBackend: needs at least one device");
    if (mode == Mode::Gpu) {
      int gpus = 0;
      POLYK_MULTI_CUDA_CHECK(cudaGetDeviceCount(&gpus));
      if (firstGpu < 0 || firstGpu + devices > gpus)
        throw std::invalid_argument("polyk::multi::CudaBackend: " + std::to_string(devices) + " devices from GPU " +
            std::to_string(firstGpu) + ", " + std::to_string(gpus) + " GPUs");
    } else {
      POLYK_MULTI_CUDA_CHECK(cudaGetDevice(&home));
    }
    try {
      for (int d = 0; d < count; ++d) {
        activate(d);
        cudaStream_t stream;
        POLYK_MULTI_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        streams.push_back(stream);
        cudaStream_t in;
        POLYK_MULTI_CUDA_CHECK(cudaStreamCreateWithFlags(&in, cudaStreamNonBlocking));
        copyStreams.push_back(in);
        cudaEvent_t event;
        POLYK_MULTI_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
        events.push_back(event);
        for (int i = 0; i < ring; ++i) {
          POLYK_MULTI_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
          copied.push_back(event);
        }
      }
      dirty.assign(size_t(count), true);
      copies.assign(size_t(count), 0);
      inflight.resize(size_t(count));
      readers.resize(size_t(count));
      if (mode == Mode::Gpu)
        enablePeerAccess();
    } catch (...) {
      destroy();
      throw;
    }
  }
  ~CudaBackend() override { destroy(); }
  CudaBackend(const CudaBackend &) = delete;
  CudaBackend &operator=(const CudaBackend &) = delete;

  int devices() const override { return count; }
  const char *name() const override { return mode == Mode::Gpu ? "gpu" : "virtual"; }

  void *alloc(int dev, size_t bytes) override {
    activate(dev);
    void *p = nullptr;
    POLYK_MULTI_CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1));
    return p;
  }
  void release(int dev, void *p) override {
    // Another device's queued peer copy may still read p (a window that grew, a buffer going
    // away): every device's work ends first. (cudaFree waits only for the GPU it frees on.)
    synchronize();
    activate(dev);
    POLYK_MULTI_CUDA_CHECK(cudaFree(p));
  }

  void copy(int dst, void *to, int src, const void *from, size_t bytes) override {
    if (dst == src) {
      settle(dst);
      POLYK_MULTI_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, streams[dst]));
      return;
    }
    // After the work on both kernel streams (src's writer of `from`, dst's last reader of `to`)...
    const cudaEvent_t srcDone = tail(src), dstDone = tail(dst);
    activate(dst);
    cudaStream_t in = copyStreams[size_t(dst)];
    POLYK_MULTI_CUDA_CHECK(cudaStreamWaitEvent(in, srcDone, 0));
    POLYK_MULTI_CUDA_CHECK(cudaStreamWaitEvent(in, dstDone, 0));
    // ...and after a copy still in flight that brought (part of) `from` to src.
    const char *lo = static_cast<const char *>(from), *hi = lo + bytes;
    for (const Inflight &f : inflight[size_t(src)])
      if (f.lo < hi && lo < f.hi)
        POLYK_MULTI_CUDA_CHECK(cudaStreamWaitEvent(in, copied[size_t(src) * ring + size_t(f.slot)], 0));
    // ...and after the copies out of dst, not yet joined, that still read (part of) `to` (a device
    // that launched nothing since it sent them: a kernel that ran on other devices only).
    const char *tlo = static_cast<const char *>(to), *thi = tlo + bytes;
    for (const Reader &r : readers[size_t(dst)])
      if (r.lo < thi && tlo < r.hi)
        POLYK_MULTI_CUDA_CHECK(cudaStreamWaitEvent(in, copied[size_t(r.dst) * ring + size_t(r.slot)], 0));
    if (mode == Mode::Gpu)
      POLYK_MULTI_CUDA_CHECK(cudaMemcpyPeerAsync(to, first + dst, from, first + src, bytes, in));
    else
      POLYK_MULTI_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, in));
    // (A slot recorded again later marks a later point of the same stream: waiting for it still
    // waits for this copy.)
    const int slot = int(copies[size_t(dst)]++ % ring);
    POLYK_MULTI_CUDA_CHECK(cudaEventRecord(copied[size_t(dst) * ring + size_t(slot)], in));
    inflight[size_t(dst)].push_back({static_cast<const char *>(to), static_cast<const char *>(to) + bytes, slot});
    readers[size_t(src)].push_back({dst, slot, lo, hi});
  }
  void upload(int dst, void *to, const void *host, size_t bytes) override {
    settle(dst);
    POLYK_MULTI_CUDA_CHECK(cudaMemcpyAsync(to, host, bytes, cudaMemcpyHostToDevice, streams[dst]));
  }
  void download(void *host, int src, const void *from, size_t bytes) override {
    settle(src);
    POLYK_MULTI_CUDA_CHECK(cudaMemcpyAsync(host, from, bytes, cudaMemcpyDeviceToHost, streams[src]));
    POLYK_MULTI_CUDA_CHECK(cudaStreamSynchronize(streams[src]));
  }
  void fill(int dev, void *p, unsigned char byte, size_t bytes) override {
    settle(dev);
    POLYK_MULTI_CUDA_CHECK(cudaMemsetAsync(p, byte, bytes, streams[dev]));
  }
  void activate(int dev) override {
    if (dev < 0 || dev >= count)
      throw std::out_of_range("polyk::multi::CudaBackend: device " + std::to_string(dev) + " of " +
          std::to_string(count));
    POLYK_MULTI_CUDA_CHECK(cudaSetDevice(mode == Mode::Gpu ? first + dev : home));
  }
  // For a launch: work queued on it after this call sees every copy into dev issued before, and
  // does not overwrite what copies out of dev issued before still read. Queue the launch before
  // the next backend call (acquire's copies wait for the stream's end as of their call).
  void *stream(int dev) override {
    settle(dev);
    return streams.at(size_t(dev));
  }
  size_t alignment() const override { return 256; }
  void synchronize() override {
    for (size_t d = 0; d < streams.size(); ++d) {
      POLYK_MULTI_CUDA_CHECK(cudaStreamSynchronize(copyStreams[d]));
      POLYK_MULTI_CUDA_CHECK(cudaStreamSynchronize(streams[d]));
      inflight[d].clear();
      readers[d].clear();
    }
  }

 private:
  void enablePeerAccess() {
    for (int d = 0; d < count; ++d) {
      activate(d);
      for (int peer = 0; peer < count; ++peer) {
        int can = 0;
        if (peer == d)
          continue;
        POLYK_MULTI_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, first + d, first + peer));
        if (!can)
          continue;  // cudaMemcpyPeerAsync stages through the host then
        cudaError_t status = cudaDeviceEnablePeerAccess(first + peer, 0);
        if (status == cudaErrorPeerAccessAlreadyEnabled)
          (void)cudaGetLastError();  // another runtime in this process enabled it: fine
        else
          POLYK_MULTI_CUDA_CHECK(status);
      }
    }
  }
  // The end of dev's kernel stream as an event (recorded again only where work was queued since).
  cudaEvent_t tail(int dev) {
    if (dirty[size_t(dev)]) {
      activate(dev);
      POLYK_MULTI_CUDA_CHECK(cudaEventRecord(events[size_t(dev)], streams[size_t(dev)]));
      dirty[size_t(dev)] = false;
    }
    return events[size_t(dev)];
  }
  // dev's kernel stream waits for the copies into dev (the last one's event: one stream) and for
  // those out of dev (the latest of each destination's) issued so far; work follows it.
  void settle(int dev) {
    activate(dev);
    cudaStream_t s = streams[size_t(dev)];
    if (!inflight[size_t(dev)].empty()) {
      const int last = int((copies[size_t(dev)] - 1) % ring);
      POLYK_MULTI_CUDA_CHECK(cudaStreamWaitEvent(s, copied[size_t(dev) * ring + size_t(last)], 0));
      inflight[size_t(dev)].clear();
    }
    std::vector<Reader> &out = readers[size_t(dev)];
    for (size_t i = 0; i < out.size(); ++i) {
      bool later = false;  // a later copy into the same device covers this one
      for (size_t j = i + 1; j < out.size() && !later; ++j)
        later = out[j].dst == out[i].dst;
      if (!later)
        POLYK_MULTI_CUDA_CHECK(cudaStreamWaitEvent(s, copied[size_t(out[i].dst) * ring + size_t(out[i].slot)], 0));
    }
    out.clear();
    dirty[size_t(dev)] = true;
  }

  // Errors are ignored here: it runs in the destructor, and after a failed call in the constructor.
  void destroy() noexcept {
    for (size_t d = 0; d < streams.size(); ++d) {
      (void)cudaSetDevice(mode == Mode::Gpu ? first + int(d) : home);
      (void)cudaStreamSynchronize(streams[d]);
      (void)cudaStreamDestroy(streams[d]);
    }
    for (size_t d = 0; d < copyStreams.size(); ++d) {
      (void)cudaSetDevice(mode == Mode::Gpu ? first + int(d) : home);
      (void)cudaStreamSynchronize(copyStreams[d]);
      (void)cudaStreamDestroy(copyStreams[d]);
    }
    for (size_t d = 0; d < events.size(); ++d) {
      (void)cudaSetDevice(mode == Mode::Gpu ? first + int(d) : home);
      (void)cudaEventDestroy(events[d]);
    }
    for (size_t i = 0; i < copied.size(); ++i) {
      (void)cudaSetDevice(mode == Mode::Gpu ? first + int(i / ring) : home);
      (void)cudaEventDestroy(copied[i]);
    }
    streams.clear();
    copyStreams.clear();
    events.clear();
    copied.clear();
  }

  static constexpr int ring = 64;  // copy-completion events per device, reused in turn
  struct Inflight {
    const char *lo, *hi;  // the bytes a copy into the device writes
    int slot;
  };
  struct Reader {
    int dst, slot;        // a copy out of the device, by its destination's event
    const char *lo, *hi;  // the bytes it reads
  };

  Mode mode;
  int count;
  int home = 0;  // Virtual: the GPU all devices share
  int first = 0; // Gpu: the GPU of device 0
  std::vector<cudaStream_t> streams;      // kernels, fills, uploads, downloads, copies within
  std::vector<cudaStream_t> copyStreams;  // copies into the device
  std::vector<cudaEvent_t> events;        // the end of each kernel stream (tail)
  std::vector<cudaEvent_t> copied;        // ring events per device, after each copy into it
  std::vector<bool> dirty;                // work queued on the kernel stream since its event
  std::vector<unsigned long long> copies; // copies into each device so far
  std::vector<std::vector<Inflight>> inflight;
  std::vector<std::vector<Reader>> readers;
};

}  // namespace polyk::multi

#endif
