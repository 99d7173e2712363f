// polyk-tune's NVRTC checks (Nvrtc.h): the device part of a generated .cu (what is kept, what is
// host code), the kernel instances named for NVRTC, ptxas's report read per kernel; and, where
// NVRTC is installed, a generated file compiled and a spilling kernel told from one that does not.
#include "polyk/Emit.h"
#include "polyk/Flatten.h"
#include "polyk/Nvrtc.h"
#include "polyk/Program.h"
#include "polyk/Schedule.h"
#include "polyk/Bind.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

using namespace polyk;

namespace {

const char *kFile = R"(/* header */
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include "polyk/runtime.cuh"
typedef int polyk_idx;
static inline __attribute__((unused)) __host__ __device__ polyk_idx polyk_min(polyk_idx a, polyk_idx b) { return a < b ? a : b; }
#define S0(i) do { y[(i)] = x[(i)]; } while (0)
struct Pair { int a; int b; };
template <bool POLYK_ALIGNED>
__global__ void __launch_bounds__(256) copy_k0(const float *__restrict__ x, float *__restrict__ y) {
  const char *s = "}"; /* } */ // }
  char c = '{';
#pragma unroll
  for (int i = 0; i < 4; ++i) S0(i);
}
#undef S0
extern "C" cudaError_t polyk_copy(const float *x, float *y, cudaStream_t stream) {
  if (x) { copy_k0<true><<<1, 256, 0, stream>>>(x, y); }
  return cudaGetLastError();
}
static const char *names[] = {"a{", "b}"};
int main(int argc, char **argv) { printf("{\n"); return 0; }
)";

} // namespace

TEST(Nvrtc, DeviceSourceKeepsKernelsAndDropsHostCode) {
  std::string d = deviceSource(kFile);
  EXPECT_NE(d.find("#include <cuda_fp16.h>"), std::string::npos);
  EXPECT_NE(d.find("#include \"polyk/runtime.cuh\""), std::string::npos);
  EXPECT_EQ(d.find("cuda_runtime.h"), std::string::npos);
  EXPECT_EQ(d.find("stdint.h"), std::string::npos);
  EXPECT_NE(d.find("typedef int polyk_idx;"), std::string::npos);
  EXPECT_NE(d.find("__host__ __device__ polyk_idx polyk_min"), std::string::npos);
  EXPECT_NE(d.find("struct Pair { int a; int b; };"), std::string::npos);
  // The kernel whole: its literals and comments with braces do not end it early.
  EXPECT_NE(d.find("for (int i = 0; i < 4; ++i) S0(i);\n}"), std::string::npos);
  EXPECT_NE(d.find("#define S0(i)"), std::string::npos);
  EXPECT_NE(d.find("#undef S0"), std::string::npos);
  EXPECT_EQ(d.find("polyk_copy"), std::string::npos);
  EXPECT_EQ(d.find("names[]"), std::string::npos);
  EXPECT_EQ(d.find("main("), std::string::npos);
  std::vector<std::string> k = kernelInstances(d);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0], "copy_k0<true>");
  EXPECT_EQ(k[1], "copy_k0<false>");
}

TEST(Nvrtc, ReadsPtxasReportPerKernel) {
  std::string log = "ptxas info    : 28 bytes gmem\n"
                    "ptxas info    : Compiling entry function '_Z7copy_k0ILb1EEvPKfPf' for 'sm_90'\n"
                    "ptxas info    : Function properties for _Z7copy_k0ILb1EEvPKfPf\n"
                    "    24 bytes stack frame, 16 bytes spill stores, 12 bytes spill loads\n"
                    "ptxas info    : Used 255 registers, used 1 barriers, 4096 bytes smem, 400 bytes cmem[0]\n"
                    "ptxas info    : Compiling entry function '_Z10polyk_holdx' for 'sm_90'\n"
                    "ptxas info    : Function properties for _Z10polyk_holdx\n"
                    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                    "ptxas info    : Used 14 registers, used 0 barriers\n";
  std::vector<KernelResources> ks = parsePtxasInfo(log);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].name, "copy_k0<true>");
  EXPECT_EQ(ks[0].registers, 255);
  EXPECT_EQ(ks[0].stackBytes, 24);
  EXPECT_EQ(ks[0].spillStores, 16);
  EXPECT_EQ(ks[0].spillLoads, 12);
  EXPECT_EQ(ks[0].sharedBytes, 4096);
  EXPECT_EQ(ks[1].name, "polyk_hold");
  EXPECT_EQ(ks[1].registers, 14);
  EXPECT_EQ(ks[1].spillStores, 0);
}

namespace {

/// `program` through the four stages at `sizes`, its CUDA (with the harness: host code to drop).
std::string cudaOf(const std::string &file, const std::string &sizes) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  ScheduleOptions so;
  so.sizes = sizes;
  EmitOptions eo;
  eo.harness = true;
  return emit(bind(schedule(flatten(readProgram(text.str(), file)), so), {}), eo).code;
}

} // namespace

TEST(Nvrtc, CompilesGeneratedKernelsAndSeesSpills) {
#ifdef POLYK_SANITIZED
  // (NVRTC's own allocations are not ours to check; the release build runs this.)
  GTEST_SKIP() << "NVRTC is not run under the sanitizers";
#endif
  std::string why;
  if (!nvrtcAvailable(&why)) GTEST_SKIP() << why;
  // A generated file (its harness's host code dropped): each kernel instance reported, none spills.
  DeviceCompile gemv = nvrtcCompile(deviceSource(cudaOf("examples/blas/gemv.yaml", "")), "sm_90", {"libcore/runtime"});
  ASSERT_TRUE(gemv.ok) << gemv.log;
  std::set<std::string> names;
  for (const auto &k : gemv.kernels) names.insert(k.name);
  EXPECT_EQ(names, (std::set<std::string>{"gemv_k1<true>", "gemv_k1<false>", "polyk_hold"})) << gemv.log;
  for (const auto &k : gemv.kernels) {
    EXPECT_GT(k.registers, 0) << k.name;
    EXPECT_EQ(k.spillStores, 0) << k.name;
  }
  // 1024 threads leave a thread 64 registers; 80 values must be live at once here (the volatile
  // loads keep their order, the sum its order), so ptxas spills.
  DeviceCompile spill = nvrtcCompile(R"(
extern "C" __global__ void __launch_bounds__(1024) k(const float *x, float *y) {
  const volatile float *vx = x;
  float v[160];
#pragma unroll
  for (int i = 0; i < 160; ++i) v[i] = vx[threadIdx.x + 1024 * i];
  float s = 0;
#pragma unroll
  for (int i = 0; i < 80; ++i) s += v[i] * v[i + 80];
  y[threadIdx.x] = s;
})", "sm_90", {});
  ASSERT_TRUE(spill.ok) << spill.log;
  ASSERT_EQ(spill.kernels.size(), 1u) << spill.log;
  EXPECT_EQ(spill.kernels[0].name, "k");
  EXPECT_LE(spill.kernels[0].registers, 64);
  EXPECT_GT(spill.kernels[0].spillStores, 0) << spill.log;
  // A compile error is reported, with NVRTC's message.
  DeviceCompile bad = nvrtcCompile("__global__ void k() { undeclared = 1; }", "sm_90", {});
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.log.find("undeclared"), std::string::npos) << bad.log;
}
