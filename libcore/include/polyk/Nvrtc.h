// The kernels of a generated .cu compiled by NVRTC (issue 19: "variants compile with NVRTC",
// "capacity pruning from ptxas / NVRTC resource usage"). NVRTC compiles device code only and
// needs no GPU, so polyk-tune learns each variant's registers, spills and shared memory in
// process, on the CPU cores, before anything is built by nvcc or run.
//
// The library is opened at run time (dlopen: libnvrtc.so from $CUDA_HOME, /usr/local/cuda or the
// loader's path), so polyk builds and runs where no CUDA toolkit is installed; there the checks
// are unavailable and say why.
#pragma once

#include <string>
#include <vector>

namespace polyk {

/// The device part of a .cu that polyk-emit wrote: its preprocessor lines, types and
/// __global__ / __device__ / __host__ __device__ functions, without host functions (launchers,
/// the reference, the harness) and without host-only includes. Top-level items are told apart by
/// their braces, skipping comments and string and character literals.
std::string deviceSource(const std::string &cu);

/// The __global__ templates of `deviceSource` instantiated as polyk's launchers instantiate them
/// (`NAME<true>`, `NAME<false>` for `template <bool POLYK_ALIGNED>`): NVRTC name expressions.
std::vector<std::string> kernelInstances(const std::string &deviceCode);

struct KernelResources {
  std::string name;           // demangled (`softmax_k2<true>`)
  int registers = 0;
  long long stackBytes = 0, spillStores = 0, spillLoads = 0, sharedBytes = 0; // static shared
};

struct DeviceCompile {
  bool ok = false;
  std::string log;            // NVRTC's log (errors, ptxas info)
  std::vector<KernelResources> kernels;
  double seconds = 0;
};

/// Whether NVRTC can be opened here; `why` says why not.
bool nvrtcAvailable(std::string *why = nullptr);

/// `source` (a .cu's device part) compiled for `arch` (sm_90) by NVRTC with ptxas's resource
/// report; `includeDirs`: polyk's runtime directory (the CUDA toolkit's own are added).
/// Thread-safe: NVRTC compiles programs in parallel.
DeviceCompile nvrtcCompile(const std::string &source, const std::string &arch, const std::vector<std::string> &includeDirs,
                           const std::string &name = "polyk.cu");

/// ptxas's resource lines (`--ptxas-options=-v`) per kernel, demangled.
std::vector<KernelResources> parsePtxasInfo(const std::string &log);

} // namespace polyk
