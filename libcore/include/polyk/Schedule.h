// polyk-schedule (Panamera §4.1-4.2): flow dependences from isl, the isl scheduler with outer
// parallelism (so a y-reduce comes out as an x-reduce), fusion of producers into reductions,
// tiling of each kernel's band with given or default sizes, reduction dependences relaxed and
// reduction statements marked. Sizes take PPCG's form:
//   { kernel[0] -> tile[32, 256]; kernel[0] -> block[32, 8] }
// one entry per band member, outermost first, for tile sizes and threads per block alike.
#pragma once

#include "polyk/Scop.h"
#include "polyk/Sizes.h"

#include <isl/cpp.h>

#include <map>
#include <vector>

namespace polyk {

struct ScheduleOptions {
  std::string sizes; // isl union map text; kernels it does not name get the defaults
  /// "auto": a kernel per program statement (its init, update, store); "all" (a map over
  /// independent instances, Fousek et al.): one kernel whose band is the statements' common
  /// outermost dim, each thread running every statement, in order, for its instances.
  std::string fusion = "auto";
  /// Under fusion "shared": the cover of the map's functions by fused kernels, `f0+f1+f2,f3` (a
  /// kernel per set, MapDag's names); empty: one kernel of all.
  std::string cover;
  /// Steps a launch of an iterated stencil, each block's tile kept in shared memory over them
  /// (polyk/TimeTiles.h): the sizes' `kernel[0] -> time[T]`. -1 (auto): kAutoTimeTile steps where
  /// the program takes them and the sizes give kernel[0] no tile; 0: none unless the sizes say so.
  long long timeTile = -1;
  /// Planes a block of a 2-d or 3-d stencil walks along its outermost dim (polyk/TimeTiles.h,
  /// streamRefusal): the sizes' `kernel[0] -> stream[C]`. 0: as the sizes say (none).
  long long stream = 0;
  /// The shared memory a block may take on the target (its opt-in limit per block): the budget the
  /// defaults give batches of small products on the tensor cores (batchedMma). sm_90's 227 KB by
  /// default; an A100's is 166912, sm_86's 101376.
  long long sharedLimit = kMaxShared;
  /// The GPUs the program will be partitioned over (polyk-partition): the affine defaults size
  /// grids, and split-K, for that many cards' SMs (each device runs a 1/N share of the blocks).
  long long devices = 1;
};

/// Returns the schedule/1 content; `usedSizes` receives the sizes of every kernel.
Scop schedule(const Scop &scop, const ScheduleOptions &options, std::map<int, KernelSizes> *usedSizes = nullptr);

/// The shape of one kernel's outermost band, as the default-size rule sees it.
struct BandShape {
  Form form = Form::Elementwise;
  std::vector<long long> extent;   // per band member
  std::vector<bool> reduced;       // per band member
  std::vector<bool> symbolic;      // per band member: its extent depends on a parameter
  int contiguous = -1;             // member whose unit step reads consecutive addresses
  /// Elements each thread takes at a time along the contiguous member (16 bytes of the narrowest
  /// tensor the band's statements access, fewer where the extent asks): 1 for a y-reduce, whose
  /// threads own one output each, and where the contiguous member's extent is symbolic.
  int vector = 1;
  /// Bytes of the narrowest element the band's statements access (16 where they access none).
  int elementBytes = 4;
  /// Whether every statement of the band is a reduction's initialisation (they read nothing).
  bool initOnly = false;
  /// A y-reduce whose columns are read as they lie (flatten's batched columns: x[a, b, c] over
  /// b, columns (a, c)): the columns of one contiguous run (the extent of c), where the runs are
  /// fewer than the columns; 0 otherwise.
  long long run = 0;
  /// An x-reduce's rows: the largest power of 2 of at most 16 bytes of elements that every row's
  /// first element (each read's linear index at the reduced dim's 0) is a multiple of; 1 otherwise.
  int rowAlign = 1;
};

/// Every statement's writes and reads, restricted to its domain (flow analysis needs bounded
/// relations); a reduce statement also reads the element it updates.
void accessRelations(const Scop &scop, isl::union_map &writes, isl::union_map &reads);

/// polyk-schedule on the affine path (statements of Form::Affine): one kernel per program
/// statement, its parallel band tiled (AffineSchedule.cpp).
Scop scheduleAffine(const Scop &scop, const ScheduleOptions &options, std::map<int, KernelSizes> *usedSizes = nullptr);

/// Analyses a kernel's band (tiled or not) for the reduction statement it holds.
BandShape analyseBand(const Scop &scop, const isl::schedule_node_band &band);
/// For each member of `band`, the dim of statement `stmt` it depends on (-1: none or several).
std::vector<int> bandMemberDims(const isl::schedule_node_band &band, const std::string &stmt);

/// A window reduction (affine path): every reduced dim of `update` moves some read's subscript
/// together with a parallel dim (Gaussian2D's A(i + u - 2, j + v - 2): a stencil with weights),
/// so neighbouring points of the parallel band read overlapping windows.
bool windowReduction(const ScopStatement &update, size_t parallel);

/// Whether polyk-bind's `--points auto` deals statement `st`'s register-tile points blocked: a
/// window reduction (a thread's consecutive points share their windows' reads), or a reduction
/// over a padded tensor (a convolution: a thread's output channels read the filter's staged copy as
/// float4s, its consecutive x the input's row once), or a stencil (a tensor read at two places:
/// the rows between a thread's consecutive points are read once).
bool blockedPoints(const Scop &s, const ScopStatement &st, size_t parallel);

/// The analytical rule for default tile and block sizes (documented in docs/sizes.md).
KernelSizes defaultSizes(const BandShape &band);

} // namespace polyk
