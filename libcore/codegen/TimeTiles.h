// The time-tiled kernel of an iterated stencil and its launcher (polyk/TimeTiles.h says what it
// computes). Private to libcore/codegen.
#pragma once

#include "CodegenInternal.h"

#include "polyk/Emit.h"
#include "polyk/TimeTiles.h"

#include <optional>
#include <string>
#include <vector>

namespace polyk::codegen {

struct TimeTilePlan {
  long long steps = 0;         // T: steps a launch (the last launch may run fewer)
  std::string in, out;         // the swapped pair: each step reads `in`, writes `out`
  const ScopStatement *statement = nullptr;
  std::vector<long long> tile;   // output points a block, outermost dim first
  std::vector<long long> below;  // per dim: how far the stencil reads below its point
  std::vector<long long> above;  // ... and above
  std::vector<long long> region; // tile + steps * (below + above): what a block holds
  long long regionPoints() const;
};

/// The plan of `s`'s time-tiled kernel where its sizes ask for one (`kernel[0] -> time[T]`), else
/// none; an InputError at the sizes where the program cannot take it (timeTileRefusal).
std::optional<TimeTilePlan> timeTilePlan(const Scop &s);
/// The kernel and its launcher polyk_NAME (CUDA), or the mapped C's polyk_NAME_mapped, which runs
/// the kernel's phases block by block (each phase over all of a block's threads, as the barrier
/// between phases has it).
std::string emitTimeTiled(const Scop &s, const TimeTilePlan &p, Dialect d);

/// A stencil streamed along its outermost dim (polyk/TimeTiles.h, streamRefusal).
struct StreamPlan {
  std::string in, out;
  const ScopStatement *statement = nullptr;
  long long chunk = 0;             // planes a block walks
  std::vector<long long> block;    // threads per dim, outermost first (the first 1)
  std::vector<long long> tile;     // a block's points of a plane per dim (the first 1): multiples of block
  std::vector<long long> below, above;
  /// Consecutive points a thread takes along the innermost dim (`kernel[0] -> vector[V]`): with V
  /// > 1 the planes stay in registers (emitRegisterStreamed), not in a ring in shared memory.
  long long vector = 1;
};
/// The plan where the sizes ask for streaming (`kernel[0] -> stream[C]`), else none; an
/// InputError at the sizes where the program cannot take it.
std::optional<StreamPlan> streamPlan(const Scop &s);
std::string emitStreamed(const Scop &s, const StreamPlan &p, Dialect d);
/// Streaming with the planes in registers (`stream[C]` with `vector[V]`, V > 1): a thread owns V
/// consecutive points along the innermost dim and walks C planes along the outermost; each row its
/// reads reach is a window of registers (V elements read as one vector where aligned, and the
/// reach on either side), carried from plane to plane along the outermost dim.
std::string emitRegisterStreamed(const Scop &s, const StreamPlan &p, Dialect d);

/// The time-tiled or streamed kernel and its launcher where the sizes ask for one, else none
/// (a UsageError under --partition, which neither takes yet).
std::optional<std::string> stencilKernel(const Scop &s, const EmitOptions &opt, Dialect d);

} // namespace polyk::codegen
