// Shared-memory staging on the affine path (PPCG's gpu_group.c and gpu_array_tile.c): the part of
// a tensor that one block reads in one tile of the reduced loops (its footprint, computed by isl),
// over-approximated by a box of fixed size, which the block's threads copy into shared memory
// together before they compute from it.
#pragma once

#include "polyk/Scop.h"
#include "polyk/Sizes.h"

#include <isl/cpp.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace polyk {

/// One tensor's staged tile.
struct SharedTile {
  std::string tensor;
  std::vector<long long> size;   // of the box, per tensor dim
  std::vector<long long> stride; // of the shared array, per tensor dim
  std::vector<int> order;        // the copy's dims, outermost first (KernelConfig::sharedLayout); empty: the tensor's
  isl::multi_aff offset;         // values of the bands above the staging point -> the box's first element
  /// Elements of the shared array: its rows may be padded, so that threads along x reading down a
  /// column hit distinct banks.
  long long elements() const {
    long long e = 1;
    for (size_t d = 0; d < size.size(); ++d) e = std::max(e, size[d] * stride[d]);
    return e;
  }
  /// Its bytes in shared memory (elements of `elementBytes`), as polyk-emit declares each copy:
  /// rounded up to 16, so the next array is aligned.
  long long bytes(int elementBytes) const { return (elements() * elementBytes + 15) / 16 * 16; }
  /// The copy's innermost dim.
  size_t inner() const { return order.empty() ? size.size() - 1 : (size_t)order.back(); }
  /// The order in which the block's threads take the copy's element groups, fastest first: the
  /// tensor's last dim (consecutive threads, consecutive elements in memory), and where the box
  /// has one element along it, the tensor's last dim along which it has several (a 1 x 1 filter's
  /// [k, c, 1, 1] box: c, so a warp still reads consecutive elements); then the copy's innermost
  /// dim where that is another (so a warp's stores spread along it), then the others, innermost
  /// first.
  std::vector<size_t> copyOrder() const {
    size_t n = size.size();
    std::vector<size_t> out{n - 1};
    size_t last = n - 1;
    while (last > 0 && size[last] == 1) --last;
    if (last != n - 1) out.push_back(last);
    if (inner() != n - 1 && inner() != last) out.push_back(inner());
    for (size_t d = n - 1; d-- > 0;)
      if (d != inner() && d != last) out.push_back(d);
    return out;
  }
};

/// Whether `first` (a tile's first element along a dim, a function of the bands above it) is a
/// multiple of 4 at every point but for its constant: no divisions, every coefficient a multiple
/// of 4. Such a tile can be copied in aligned 16-byte vectors (from its constant's multiple of 4).
bool quadAligned(const isl::aff &first);

/// The staged tiles of the statements `stmts` of a kernel, below the bands whose values `prefix`
/// gives for each of their instances; `parallel` maps each instance to its point of the kernel's
/// parallel band (`members` members, the last on threadIdx.x). With `tensors` given: those
/// tensors' tiles, in that order (an InputError-free logic_error where one has no fixed-size box).
/// Without: the tensors worth staging, in declaration order: read and not written there, not
/// scalars, read by several points of the parallel band (so several threads share each element),
/// with a fixed-size box; as many as fit in `limit` bytes. Where a block copies once (one reduced
/// tile), f32 tiles are then widened to whole aligned 16-byte vectors if all of them still fit
/// `limit` (so polyk-bind and polyk-emit, passing the kernel's budget, take the same boxes).
std::vector<SharedTile> sharedTiles(const Scop &s, const std::vector<std::string> &stmts, const isl::union_map &prefix,
                                    const isl::union_map &parallel, unsigned members,
                                    const std::vector<std::string> *tensors,
                                    const std::map<std::string, std::vector<int>> &layouts = {},
                                    long long limit = kStaticShared);

/// The layout that lets a thread read each run of its register tile's points as one vector: where
/// its points along x come in runs (runX > 1) and tile's tensor is read along x in a dim other than
/// its last, that dim moves innermost; where they do not touch the tensor and its points along y
/// come in runs, the dim read along y does. A tensor that neither x nor y moves along (a
/// convolution's filter, read at the same element by all of a block's threads) takes innermost the
/// dim an outer member moves, where a thread owns several points of that member (`points`, per
/// member: tile / block): a thread's reads of it then lie side by side, and nvcc loads them as
/// vectors. Empty where the tensor's own order serves.
std::vector<int> runLayout(const Scop &s, const std::vector<std::string> &stmts, const SharedTile &tile, const isl::union_map &prefix,
                           unsigned members, long long runX, long long runY, const std::vector<long long> &points = {});

/// What the bands `tileBand` (a kernel's tiles, on blocks) and `kTiles` (below it: the reduced
/// tiles) take at each instance under `kTiles`: the prefix of its staging point.
isl::union_map stagingPrefix(const isl::schedule_node &tileBand, const isl::schedule_node &kTiles);

/// The tiles that kernel `k` of a bound tree stages at its `shared` mark (`kernel.shared`, in that
/// order), in `stmts` the statements below the mark, which read them, and in `prefix` their
/// stagingPrefix, and in `reducedMembers` how many of its members the reduced tiles' band gives
/// (its last ones). Empty where the kernel has no such mark.
std::vector<SharedTile> stagedTiles(const Scop &s, const isl::schedule &bound, int k, std::vector<std::string> *stmts,
                                    isl::union_map *prefix, unsigned *reducedMembers = nullptr);

} // namespace polyk
