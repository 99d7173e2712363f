// Kernels of polyk-schedule --fusion=shared: Fousek et al.'s fused map kernels, each function of
// the map on its own threads per instance (`kernel[k] -> threads[..]`), its intermediates a
// block's rows in shared memory, a barrier between functions. See MapKernels.cpp.
#pragma once

#include "CodegenInternal.h"

#include "polyk/Scop.h"

#include <string>

namespace polyk::codegen {

/// Kernel k's sizes give threads[..]: a fused map kernel (polyk-bind's `map_block`).
bool mapBlockKernel(const Scop &s, int k);

/// Kernel k's code. CUDA: the kernel's body (after its signature's brace; b_x, t_x read from
/// the ids). C: the code of one block `bx` (the block loop is the caller's), each function run
/// by every thread of the block before the next, as the barriers order them on the GPU.
std::string mapBlockCode(const Scop &s, int k, Dialect d);

/// How the CUDA code reads its block's number (once: the block's first instance).
inline constexpr const char *kMapBlockId = "(polyk_idx)blockIdx.x";
/// The CUDA code with its blocks starting at polyk_boff (--partition: Matz's clone).
std::string offsetMapBlocks(const std::string &code);

} // namespace polyk::codegen
