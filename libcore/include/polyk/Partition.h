// polyk-partition's model (Matz et al. §4-5, issue 25): per kernel of a bound program, the
// elements each array's reads and writes touch from a block of the grid (isl maps from the block
// ids, threads projected out), whether the writes let the grid be split over devices (exact, and
// injective over blocks: no element written by two blocks), and the grid dimension to split along
// (the smallest read halo). Written as partition/1 (schemas/partition.schema.yaml) and read back.
#pragma once

#include "polyk/Diagnostics.h"
#include "polyk/Scop.h"

#include <string>
#include <vector>

namespace polyk {

struct PartitionAccess {
  std::string tensor;
  std::string kind; // read | write
  bool must = true; // every element of the map is accessed (polyk's affine accesses are exact)
  std::string map;  // isl: { block[b...] -> T[...] }, over the program's parameters
};

struct KernelPartition {
  std::string name;
  std::vector<std::string> axes; // per block-id member: x, y or z (the grid dim it is mapped to)
  std::string blocks;            // isl: the grid's blocks, { block[b...] : ... }
  /// The member split over devices; -1: the kernel runs on one device (`reason` says why).
  int split = -1;
  std::string reason;
  /// Per member the read halo of one slab of blocks (elements it reads but does not write, over
  /// all arrays, at the parameters' values): why `split` was chosen. -1 where the member has one
  /// block.
  std::vector<long long> halo;
  bool writesExact = true, writesInjective = true;
  std::vector<PartitionAccess> accesses;
  SourceLoc at;
};

struct Partition {
  std::string name;
  std::vector<std::pair<std::string, long long>> params;
  std::vector<KernelPartition> kernels;
  Provenance provenance;
};

/// The model of a bound program (bound/1).
Partition partition(const Scop &bound);

std::string writePartition(const Partition &p);

/// C enumerators (Matz §6) for the split kernels of `p`: per array and kind, a function listing
/// the contiguous runs (first and last linear offsets) that blocks polyk_lo..polyk_hi along the
/// split member touch: `polyk_enum_KERNEL_TENSOR_KIND(params..., lo, hi, run, user)`.
std::string emitEnumerators(const Partition &p, const Scop &bound);
/// Reads partition/1; an InputError at file:line:col for another kind, a bad field or isl text.
Partition readPartition(const std::string &text, const std::string &file);

} // namespace polyk
