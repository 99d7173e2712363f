// Tensor cores for f32 register tiles (`polyk-emit --mma=tf32x3`): a register-tiled sum of
// products whose threads form warps of 8 x 4 (block [by, 4], by a multiple of 8) computes each
// reduced tile's innermost loop, 8 values at a time, with mma.sync m16n8k8 in 3xTF32 (f32
// accuracy: runtime.cuh, polyk::mma_tf32x3). The accumulators stay where the register tile puts
// them: a thread's points along y, taken in pairs (2q, 2q + 1), are an mma tile's rows l / 4 and
// l / 4 + 8, its points along x in pairs (2c, 2c + 1) the columns 2 (l % 4) and 2 (l % 4) + 1, so
// any layout of the points (blocked, cyclic, runs) is an mma layout, and the code around the loop
// (init, remainder tiles, stores, split-K) is unchanged. Private to libcore/codegen.
#pragma once

#include "CodegenInternal.h"
#include "EmitParts.h"
#include "Staging.h"

#include "polyk/Emit.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace polyk::codegen {

struct MmaPlan {
  bool on = false;
  std::string refusal;          // why the kernel does not take it (off: empty where --mma=off)
  std::string update;           // the register-accumulated update statement
  std::string accumulator;      // its promoted accumulator (NAME_r)
  long long points[2] = {0, 0}; // a thread's points along the register tile's two members
  std::set<unsigned> dimsOf[2]; // the update's domain dims each factor reads
  unsigned reduced = 0;         // the update's innermost reduced dim (the loop the mma takes)
  bool exact[2] = {false, false}; // a factor a tf32 holds exactly (an f16 / bf16 element): no remainder
};

/// The staged tiles of the update's operands padded for the fragments' loads: a tile's 8 lanes
/// along rows (or columns) and 4 along the reduced dim hit 32 distinct banks where the rows run
/// along consecutive elements (the threads' points cyclic, or in runs of 2); unpadded where the
/// padded ones would take more than `budget` bytes.
void mmaStrides(const Scop &s, const MmaPlan &plan, std::vector<SharedTile> &tiles, long long budget);

/// Whether opt.mma asks kernel `k` of `s` to take the tensor cores: tf32x3, or auto where its
/// sizes say `mma[1]`.
bool mmaAsked(const Scop &s, int k, const EmitOptions &opt);

/// Kernel `k` (`kc`)'s plan under opt.mma (CUDA only): `points` its register tile (RegisterTile).
/// Off without a refusal where mmaAsked is not.
MmaPlan mmaPlan(const Scop &s, int k, const KernelConfig &kc, const std::vector<long long> &points, const EmitOptions &opt);

/// NAME_mma0(dims...), NAME_mma1(dims...): the update's two factors in f32, read as its macro reads
/// them (`staging` and `rows`, privateRows: macros()). Empty where the plan is off.
std::string mmaMacros(const Scop &s, const KernelConfig &kc, const MmaPlan &plan, const Staging &staging,
                      const std::set<std::string> &rows);

/// What a kernel's body did with the plan: whether a loop took the tensor cores, and why the loops
/// that call the update did not (the first reason).
struct MmaOutcome {
  bool taken = false;
  std::string why;
};

/// The tensor-core code replacing `loop` where it is the plan's: a loop of constant trip, a
/// multiple of 8, whose body calls the update once at each point of the thread's tile (annotated
/// with its register index). Otherwise nullopt; `outcome` (where given) records either, for the
/// loops whose body calls the update. `printer`, where it unrolls the thread's points itself
/// (AstPrinter::unrolled), gives the body's calls.
std::optional<std::string> mmaLoop(const MmaPlan &plan, const isl::ast_node &loop, int indent, MmaOutcome *outcome = nullptr,
                                   const AstPrinter *printer = nullptr);

std::string mmaUndefs(const MmaPlan &plan);

} // namespace polyk::codegen
