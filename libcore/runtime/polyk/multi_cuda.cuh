// polyk/multi_cuda.cuh -- the CUDA backend of polyk/multi.hpp's tracker: each device is a stream
// with its own allocations, either on one GPU (Mode::Virtual: N virtual devices, so a partitioned
// program can be checked and its transfers counted on a single card) or one GPU each (Mode::Gpu,
// peer copies over NVLink / PCIe). Every device's work runs on its own non-blocking stream, so
// ordering between devices exists only where the tracker asks for it: a copy waits for its source
// device's earlier work, and the source's later work waits for the copy, through events. Backend
// calls may change the current device: call activate(dev) before launching on dev. Only for code
// that nvcc compiles.
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
        cudaEvent_t event;
        POLYK_MULTI_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
        events.push_back(event);
      }
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
      activate(dst);
      POLYK_MULTI_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, streams[dst]));
      return;
    }
    // The copy may start only once src's earlier kernels have written `from`...
    activate(src);
    POLYK_MULTI_CUDA_CHECK(cudaEventRecord(events[src], streams[src]));
    activate(dst);
    POLYK_MULTI_CUDA_CHECK(cudaStreamWaitEvent(streams[dst], events[src], 0));
    if (mode == Mode::Gpu)
      POLYK_MULTI_CUDA_CHECK(cudaMemcpyPeerAsync(to, first + dst, from, first + src, bytes, streams[dst]));
    else
      POLYK_MULTI_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, streams[dst]));
    // ...and src's later kernels (or poison fills) may overwrite `from` only once it has been
    // read. A wait captures the event's latest record, so one event per device suffices.
    POLYK_MULTI_CUDA_CHECK(cudaEventRecord(events[dst], streams[dst]));
    activate(src);
    POLYK_MULTI_CUDA_CHECK(cudaStreamWaitEvent(streams[src], events[dst], 0));
  }
  void upload(int dst, void *to, const void *host, size_t bytes) override {
    activate(dst);
    POLYK_MULTI_CUDA_CHECK(cudaMemcpyAsync(to, host, bytes, cudaMemcpyHostToDevice, streams[dst]));
  }
  void download(void *host, int src, const void *from, size_t bytes) override {
    activate(src);
    POLYK_MULTI_CUDA_CHECK(cudaMemcpyAsync(host, from, bytes, cudaMemcpyDeviceToHost, streams[src]));
    POLYK_MULTI_CUDA_CHECK(cudaStreamSynchronize(streams[src]));
  }
  void fill(int dev, void *p, unsigned char byte, size_t bytes) override {
    activate(dev);
    POLYK_MULTI_CUDA_CHECK(cudaMemsetAsync(p, byte, bytes, streams[dev]));
  }
  void activate(int dev) override {
    if (dev < 0 || dev >= count)
      throw std::out_of_range("polyk::multi::CudaBackend: device " + std::to_string(dev) + " of " +
          std::to_string(count));
    POLYK_MULTI_CUDA_CHECK(cudaSetDevice(mode == Mode::Gpu ? first + dev : home));
  }
  void *stream(int dev) override { return streams.at(size_t(dev)); }
  size_t alignment() const override { return 256; }
  void synchronize() override {
    for (size_t d = 0; d < streams.size(); ++d)
      POLYK_MULTI_CUDA_CHECK(cudaStreamSynchronize(streams[d]));
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
  // Errors are ignored here: it runs in the destructor, and after a failed call in the constructor.
  void destroy() noexcept {
    for (size_t d = 0; d < streams.size(); ++d) {
      (void)cudaSetDevice(mode == Mode::Gpu ? first + int(d) : home);
      (void)cudaStreamSynchronize(streams[d]);
      (void)cudaStreamDestroy(streams[d]);
    }
    for (size_t d = 0; d < events.size(); ++d) {
      (void)cudaSetDevice(mode == Mode::Gpu ? first + int(d) : home);
      (void)cudaEventDestroy(events[d]);
    }
    streams.clear();
    events.clear();
  }

  Mode mode;
  int count;
  int home = 0;  // Virtual: the GPU all devices share
  int first = 0; // Gpu: the GPU of device 0
  std::vector<cudaStream_t> streams;
  std::vector<cudaEvent_t> events;
};

}  // namespace polyk::multi

#endif
