// polyk-emit (Panamera §5): CUDA from isl's AST of the bound schedule. A reduction becomes
// per-thread partials (Part 1), a block reduction (Part 2, CUB's BlockReduce by default) and one
// atomic per block into the output (Part 3), all in one kernel; a host launcher runs the kernels
// in order. `--target=c` prints sequential C of the same schedule, `--target=c-mapped` the
// kernels' own code run on the CPU thread by thread, and `--reference` the
// sequential C of the original program; `--harness` adds a main() that checks one against the
// other (C) or the CUDA code against the reference on random data and times it (CUDA).
#pragma once

#include "polyk/Scop.h"

#include <string>

namespace polyk {

struct Partition;

struct EmitOptions {
  /// Cuda; C: sequential C of the bound schedule; MappedC: the CUDA kernels' code (ids, guards,
  /// partials) run on the CPU block by block, thread by thread.
  enum class Target { Cuda, C, MappedC } target = Target::Cuda;
  bool harness = false;
  bool referenceOnly = false;
  std::string blockReduce = "cub"; // cub | shfl (own warp shuffles)
  /// not_guaranteed: Panamera's atomic return; run_to_run: the same bits on every run (per-block
  /// partials combined in block order by the last block to finish, still one kernel). The names
  /// are CUB's. f16 / bf16 outputs always take the ordered path, to accumulate in f32.
  std::string determinism = "not_guaranteed";
  /// How the blocks of a reduction combine into a shared output: auto (the ordered return, which
  /// measured as fast as the atomics or faster on every case of the H100 benchmark and needs no
  /// initialisation kernel; f16 / bf16 atomics under --accumulate=input), ordered, or atomic
  /// (Panamera's one atomic per block; f16 / bf16 outputs accumulated in f32 stay ordered).
  std::string combine = "auto";
  /// Accumulation type of f16 / bf16 reductions: f32 (default: partials, block reductions and the
  /// cross-block combine in f32, one rounding at the end) or input (rounded to the input type at
  /// every step, f16 / bf16 atomics across blocks: what a kernel in that type alone would do).
  std::string accumulate = "f32";
  /// Unroll factor of the kernels' per-thread loops: 1 (default) leaves them to nvcc, which
  /// measured best on the H100 (bench/results, variants u1 / u16 / auto); 0 picks 16 bytes' worth of
  /// the narrowest element read (at least 4); N > 1 asks `#pragma unroll N`. Affine kernels: N > 1
  /// asks it of each innermost loop not already unrolled whole (a reduced tile's loop, its
  /// remainder); 0 and 1 leave those loops to nvcc.
  int unroll = 1;
  /// Vector loads of inputs the program reads once: auto (streaming loads, no L1 allocation and
  /// evict-first in L2, where they measured faster on the H100: EmitCuda.cpp, streamedTensors),
  /// all (every input's), off (none).
  std::string streamLoads = "auto";
  /// The copies of staged tiles (affine path): auto (CUDA kernels whose reduced tiles follow one
  /// another load the next tile's copy into registers during this one's compute, where it takes
  /// at most 16 registers a thread: Staging.h) or off.
  std::string prefetch = "auto";
  /// Register-tiled f32 sums of products on the tensor cores (codegen/Mma.h; mma.sync in 3xTF32,
  /// f32 accuracy, sm_80 and later): auto (the kernels whose sizes say `mma[1]`, as
  /// polyk-schedule's defaults do for large f32 GEMM-like tiles), tf32x3 (each kernel that takes
  /// it) or off.
  std::string mma = "auto";
  /// The blocks an SM each register-tiled affine kernel's registers are budgeted for
  /// (`__launch_bounds__`'s second argument): 0 (auto: AffineKernels.cpp's rule, by the thread's
  /// points, the copies and the tensor cores) or N, 1 to 32; N times the block's threads at most
  /// 2048. Reductions and kernels without a register tile are not affected.
  int blocksPerSm = 0;
  int repetitions = 100;           // timed runs of the CUDA harness
  /// polyk-partition's model of this program (--partition): the split kernels take a block
  /// offset (Matz §7's clone), and the file gains the enumerators and polyk_NAME_multi, the
  /// launcher over several devices (codegen/Multi.cpp); with --harness, main() runs it on 1, 2,
  /// 3, 4 and 8 devices against the one-device run. Affine programs only, for now.
  const Partition *partition = nullptr;
  std::string sourceName;          // name of the .cu written, for kernel/1
};

struct EmitResult {
  std::string code;
  Scop kernelInfo; // kernel/1: the bound program plus the launcher's signature
};

EmitResult emit(const Scop &bound, const EmitOptions &options);

/// Why the tensor cores (EmitOptions::mma) cannot compute a reduction's update `update` of `s`,
/// whatever its kernel's sizes: empty where it is an f32 sum of products, `ACC + X * Y`, each
/// factor an f32 value of f32, f16 or bf16 elements (polyk-schedule asks `mma[1]` only there).
/// Given the update's dims along the tile's rows and columns (>= 0), also one factor that moves
/// with the rows only and one with the columns only.
std::string mmaProductRefusal(const Scop &s, const ScopStatement &update, int rowDim = -1, int colDim = -1);

} // namespace polyk
