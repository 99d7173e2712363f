// Split-K (`kernel[k] -> split[S]`): a register-tiled sum whose grid has too few blocks for the
// card shares its reduced tiles out over S blocks per tile, along blockIdx.z. Each block sums its
// share of the outermost reduced member into its registers and writes them as partials; the last
// of a tile's blocks to finish (per thread, counted by an atomic) adds the S partials in order and
// runs the store: one kernel, no initialisation, the same bits on every run. Private to
// libcore/codegen.
#pragma once

#include "CodegenInternal.h"

#include "polyk/Bind.h"
#include "polyk/Emit.h"

#include <map>
#include <set>
#include <string>

namespace polyk::codegen {

struct SplitK {
  bool on = false;
  long long splits = 0;            // S of the sizes: the most blocks a tile's sum is shared over
  long long reduceTile = 0;        // the split member's reduced tile (reduce[0])
  unsigned member = 0;             // the split member's dim in the update's domain
  std::string update;              // the update statement
  std::string accumulator;         // its promoted accumulator (NAME_r in the kernel)
  std::set<std::string> stores;    // the statements that read the accumulator into memory
  std::string lo, hi;              // C over the params: the split member's least / greatest value
  std::string type;                // C type of the accumulator and its partials
  std::string extents;             // a thread's register tile, "[8][8]" ("" for one point)
  long long points = 1, threads = 1;
};

/// Kernel k's split, where its sizes give one (not under --partition, which runs it unsplit).
/// Throws an InputError where the kernel cannot be split.
SplitK splitK(const Scop &s, int k, const KernelConfig &kc, const std::string &extents, long long points,
              const EmitOptions &opt);

/// `bound` with each split kernel's update restricted to the reduced tiles [polyk_k0, polyk_k1)
/// of its split member (the block's share, parameters its prologue sets).
isl::schedule restrictSplits(const isl::schedule &bound, const Scop &s, const std::map<int, SplitK> &splits);

/// The kernel's leading parameters (CUDA and mapped C alike).
std::string splitParams(const SplitK &sk, Dialect d);
/// The store's two extra macros: NAME_put (the register into this block's partials) and NAME_sum
/// (the register from every block's partials, in order). `head` is the store macro's
/// `#define NAME(params)`.
std::string splitMacros(const SplitK &sk, const std::string &store, const std::string &head, bool registers, Dialect d);
/// A kernel body (kernelBody: prologue first) patched for the split: blockIdx.z without the split,
/// then the split's index, share and partials' pointer.
std::string splitPrologue(const std::string &body, const std::string &prologue, const SplitK &sk, const KernelConfig &kc);
/// The count after the partials, and `final` (the stores' code) in the last block of the tile.
std::string splitCombine(const std::string &final, Dialect d);
/// Host code before kernel `name`'s launch: its share and scratch (CUDA: polyk::OrderedScratch;
/// C: malloc'd, `splitFree` frees it). Sets polyk_t0, polyk_chunk, polyk_nsplit, polyk_partials,
/// polyk_counters in a block the caller closes. CUDA: the scratch is `stream`'s (and the current
/// device's); an error returns it as `err`, or with `throws`, throws std::runtime_error.
std::string splitLaunch(const SplitK &sk, const KernelConfig &kc, Dialect d, const std::string &stream = "stream", bool throws = false);
std::string splitFree();
/// The arguments before the kernel's own, and its grid's z (blockIdx.z's count).
std::string splitArgs();
std::string splitGridZ(const KernelConfig &kc);

} // namespace polyk::codegen
