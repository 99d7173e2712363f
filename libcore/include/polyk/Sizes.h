// The sizes of schedule/1 and of `--sizes` (PPCG's form): per kernel, tile and block sizes per
// band member, outermost first, and the vector width along the contiguous member:
//   { kernel[0] -> tile[32, 256]; kernel[0] -> block[32, 8]; kernel[0] -> vector[4] }
// (on the affine path `vector[Vy, Vx]` gives the runs of a register tile along y and x; and for an
// iterated stencil `time[T]` runs T steps a launch, each block's tile kept in shared memory; and
// `split[S]` shares a sum's reduced tiles out over S blocks, split-K; `mma[1]` asks for the tensor
// cores; `shared[B]` lets the staged copies take B bytes, dynamic shared memory over 48 KB).
#pragma once

#include "polyk/Diagnostics.h"

#include <map>
#include <string>
#include <vector>

namespace polyk {

struct KernelSizes {
  std::vector<long long> tile;
  std::vector<long long> block;
  /// Consecutive elements a thread takes at a time along the contiguous member (`kernel[k] ->
  /// vector[V]`): BandShape::vector by default; 0 in parsed `--sizes` that do not give it.
  long long vector = 1;
  /// On the affine path, a register tile's points along y in runs too (`kernel[k] -> vector[Vy,
  /// Vx]`, polyk-bind): 1 by default; 0 in parsed `--sizes` that do not give it.
  long long vectorY = 1;
  /// Tile sizes of a reduction's reduced band (`kernel[k] -> reduce[...]`, outermost first): the
  /// reduced loops run tile after tile, and polyk-bind may stage each tile's operands in shared
  /// memory. Empty: the reduced loops are not tiled.
  std::vector<long long> reduce;
  /// Time tiling of an iterated program (`kernel[0] -> time[T]`): each launch runs T steps, a block
  /// computing its tile widened by T times the stencil's reach in shared memory
  /// (codegen/TimeTiles.cpp). 0: one step a launch.
  long long time = 0;
  /// A stencil streamed along its outermost dim (`kernel[0] -> stream[C]`): each block walks C
  /// planes of it, keeping the planes its reads reach in a ring in shared memory, each element
  /// read once (codegen/TimeTiles.cpp). 0: none.
  long long stream = 0;
  /// Split-K (`kernel[k] -> split[S]`): a register-tiled sum's outermost reduced member shared out
  /// over S blocks per tile (blockIdx.z), each summing whole reduced tiles of it; the last block of
  /// a tile to finish adds the S partial sums in order and stores (codegen/SplitK.cpp). 0: none.
  long long split = 0;
  /// The tensor cores (`kernel[k] -> mma[1]`): polyk-emit's default (--mma=auto) runs the kernel's
  /// register-tiled f32 sum on them (codegen/Mma.h). 0: not asked.
  long long mma = 0;
  /// The shared memory a block's staged copies may take, in bytes (`kernel[k] -> shared[B]`):
  /// over the static limit (kStaticShared) the kernel declares its copies dynamically and its
  /// launcher raises the kernel's limit first. 0: kStaticShared.
  long long shared = 0;
  /// Fousek's map fusion (`kernel[k] -> threads[g0, g1, ...]`, polyk-schedule --fusion=shared):
  /// the threads per instance of each function of the fused kernel, in order. Its tile is then the
  /// instances a block takes and its block the threads, each function's points (an instance's
  /// row, g threads an instance) dealt to them in turn, its intermediates a block's rows in shared
  /// memory (codegen/MapKernels.cpp). Empty: not such a kernel.
  std::vector<long long> threads;
};

/// Shared memory a kernel may declare statically (48 KB), and the most a block may opt in to
/// (sm_90's 227 KB; older devices refuse more than theirs at launch).
constexpr long long kStaticShared = 48 * 1024;
constexpr long long kMaxShared = 227 * 1024;
/// The bytes `sizes` lets a block's staged copies take.
inline long long sharedBudget(const KernelSizes &sizes) { return sizes.shared > 0 ? sizes.shared : kStaticShared; }

/// The largest kernel number, tile size and vector width a sizes map may give.
constexpr long long kMaxKernels = 4096;
constexpr long long kMaxTile = (1LL << 31) - 1;
constexpr long long kMaxVector = 16;
constexpr long long kMaxTimeTile = 64;
constexpr long long kMaxStream = 4096;
constexpr long long kMaxSplit = 256;

/// Parses a sizes map. Where it is not one: an InputError at `*where` (a file's `sizes:` value),
/// or with `where` null a UsageError (the `--sizes` option).
std::map<int, KernelSizes> parseSizes(const std::string &text, const SourceLoc *where = nullptr);
std::string printSizes(const std::map<int, KernelSizes> &sizes);

} // namespace polyk
