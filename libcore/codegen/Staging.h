// Shared-memory staging in the generated code (PPCG's gpu_group.c decides, polyk-bind's
// Promotion.cpp here): the kernel's shared arrays, the copy at each `shared` mark, the reads of
// the copy, and the prefetch of the next reduced tile's copy into registers. Private to
// libcore/codegen.
#pragma once

#include "EmitParts.h"

#include "polyk/Promotion.h"

#include <algorithm>

namespace polyk::codegen {

/// A kernel's tiles staged in shared memory (Promotion.h), and the statements that read them.
struct Staging {
  std::vector<SharedTile> tiles;
  std::vector<std::string> stmts;
  isl::union_map prefix;
  unsigned reducedMembers = 0; // the prefix's last members: the reduced tiles' band
  /// CUDA: at each `shared` mark, after the barrier, each thread loads its share of the next
  /// reduced tile's copy (the innermost reduced tile band's next value) into registers, in flight
  /// during the compute; the next mark stores those registers where their tile is the one it
  /// stages (else it loads as without prefetch). The next tile: the innermost reduced tile member
  /// with several values one further (a conv's channel tiles, its filter's one tile inside).
  /// `nextOffset`: per tile, the next tile's first element as a function of the prefix.
  bool prefetch = false;
  /// Instead, where the registers would not do: two copies of each tile in shared memory, the
  /// next tile's copied into the other one during the compute by asynchronous copies (cp.async,
  /// no registers); each mark switches copies where the previous one prefetched. (The mapped C
  /// copies both at the mark: the same switching, run by one thread.)
  bool async = false;
  std::vector<isl::multi_aff> nextOffset;
  /// The bytes the copies may take (the kernel's shared[..], Sizes.h). Where they take more than
  /// kStaticShared, the kernel declares them in dynamic shared memory (dynamicShared).
  long long budget = kStaticShared;
  bool reads(const std::string &stmt) const { return std::find(stmts.begin(), stmts.end(), stmt) != stmts.end(); }
  const SharedTile *tile(const std::string &tensor) const {
    for (const auto &t : tiles)
      if (t.tensor == tensor) return &t;
    return nullptr;
  }
};

std::string sharedName(const std::string &t);
/// The variable holding dim d of tensor t's tile's first element; nextOffsetName: of the next
/// tile's (prefetch).
std::string offsetName(const std::string &t, size_t d);
std::string nextOffsetName(const std::string &t, size_t d);
/// The two copies of tensor t's tile (Staging::async); sharedName then points at the current one.
std::string buffersName(const std::string &t);

/// Turns on `st`'s prefetch where some block's reduced tiles follow one another and the
/// registers it takes (each thread's share of every tile's copy) are at most kPrefetchWords
/// 32-bit words. H100 (bench/results/2026-11-25-h100-prefetch.txt): 8 words, GEMM 1024^3 103.5 ->
/// 83.0 us; 16, GEMM 4096^3 4781 -> 4212, ab-bc 583 -> 550, abc-bda-dc 365 -> 312; 20,
/// abcdef-gdab-efgc 121 -> 217 (its kernel already took 128 registers: spills).
/// Else, under `mode` "auto", or always under "async": the asynchronous copy (Staging::async),
/// where two copies of the tiles fit in the budget (Staging::budget) and every staged element
/// takes 4 or 8 bytes (cp.async's sizes).
constexpr long long kPrefetchWords = 16;
void planPrefetch(const Scop &s, Staging &st, const KernelConfig &kc, const std::string &mode);

/// The kernel's shared arrays (local arrays in the mapped C), the variables holding each tile's
/// first element, and the prefetch's registers.
std::string stagingDecls(const Scop &s, const Staging &st, Dialect d, const KernelConfig &kc);
/// The bytes of shared memory `st`'s copies take as declared, and of those the kernel's dynamic
/// shared memory (0: all within the static limit, kStaticShared).
long long stagedBytes(const Scop &s, const Staging &st);
long long dynamicShared(const Scop &s, const Staging &st);

/// The copy at a `shared` mark, up to and including its barrier (and, with prefetch, the next
/// tile's loads). `offsets` / `nextOffsets`: the C setting the tiles' first elements there.
std::string stagingCopy(const Scop &s, const Staging &st, const KernelConfig &kc, Dialect d, const std::string &offsets,
                        const std::string &nextOffsets, int indent);

/// Reads of a staged tensor by a statement below the staging point: its element of the copy.
/// `assumeAligned` (CUDA, where the copies are pointers: two buffers, or dynamic shared memory):
/// each read goes through __builtin_assume_aligned(copy, 16), so that nvcc merges a thread's reads
/// of neighbouring elements into vector loads as it does for a static array (a conv's filter over
/// its register tile's output channels: 8 loads -> 2).
ReadOverride stagedReads(const Staging &st, bool assumeAligned = false);

} // namespace polyk::codegen
