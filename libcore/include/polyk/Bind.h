// polyk-bind (Panamera §4.2, §5.3): maps each kernel's tile loops to blocks and its point loops to
// threads, the reduced dims to the inner x of the grid so one reduction spans several blocks,
// keeps fused temporaries in registers, and computes the launch configuration. Decisions are
// recorded as schedule-tree marks (`kernel_k`, `blocks_y_x`, `threads_x_y`, `reduction`) and in
// the `kernels:` list; applyMapping turns the marks into isl filters on block / thread ids.
#pragma once

#include "polyk/Scop.h"
#include "polyk/Sizes.h"

#include <isl/cpp.h>

#include <map>

namespace polyk {

struct BindOptions {
  std::string sizes; // overrides the block sizes of the schedule file (PPCG form)
  /// Shared-memory staging on the affine path (Promotion.h): "auto" stages the reused operands of
  /// each kernel whose reduced band is tiled (`reduce` sizes) where they fit, "off" none.
  std::string shared = "auto";
  /// Which points of a register tile a thread owns (affine path): "cyclic", one every block size
  /// (t, t + B, ...), or "blocked", consecutive ones (P t, P t + 1, ...: their windows overlap,
  /// and a thread's operands lie side by side in shared memory). "auto": blocked for window
  /// reductions (Schedule.h, windowReduction), cyclic otherwise.
  std::string points = "auto";
};

Scop bind(const Scop &scheduled, const BindOptions &options);
/// The schedule file's sizes with the block sizes of `--sizes` applied (tile sizes there are a
/// UsageError: polyk-schedule chooses them).
std::map<int, KernelSizes> boundSizes(const Scop &scheduled, const BindOptions &options);
/// Sizes that do not fit a kernel came from the file (an InputError at its sizes) or from
/// `--sizes` where it was given (a UsageError).
[[noreturn]] void sizeError(const Scop &scheduled, const BindOptions &options, const std::string &message);
/// The `kernel_k` mark of a bound or scheduled tree (null where there is none), and the
/// statements with instances under a node.
isl::schedule_node findMark(const isl::schedule &s, const std::string &name);
std::vector<std::string> statementsIn(const Scop &scop, const isl::union_set &dom);
/// The affine path (AffineBind.cpp): x, y and z, outer members folded into z.
Scop bindAffine(const Scop &scheduled, const BindOptions &options);
/// The ids of one affine kernel: b_x, b_y, t_x, t_y and one b_z<i> / t_z<i> per band member
/// folded into z (outermost first), which the kernel's prologue takes apart from blockIdx.z and
/// threadIdx.z (the counts may be symbolic: isl sees independent parameters).
struct AffineKernelIds {
  unsigned members = 0;
  std::vector<std::string> blocksZ; // tile counts of the z members (C)
  std::vector<long long> threadsZ;  // thread counts of the z members
  std::string prologue() const;     // the C declarations of the ids
};
struct AffineMapping {
  isl::schedule schedule;                 // each blocks_ / threads_ band fixed by a filter on the ids
  std::map<int, AffineKernelIds> kernels; // by kernel number
};
/// applyMapping for the affine path's marks. Build each kernel's AST from
/// affineMappingContext(kernel, its ids).
AffineMapping applyAffineMapping(const isl::schedule &bound, const Scop &s);
isl::set affineMappingContext(const KernelConfig &kernel, const AffineKernelIds &ids);

/// The bound tree with each `blocks_*` / `threads_*` band fixed to the parameters b_x, b_y, t_x,
/// t_y by a filter above it (with the ids' ranges in that kernel). Build its AST from
/// mappingContext(), which introduces the parameters (a filter may not).
isl::schedule applyMapping(const isl::schedule &bound, const std::vector<KernelConfig> &kernels);
isl::set mappingContext(const std::vector<KernelConfig> &kernels);

} // namespace polyk
