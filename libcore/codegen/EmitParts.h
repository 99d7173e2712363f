// The parts of a generated file, shared by emit's C, CUDA and harness printers. Private to
// libcore/codegen.
#pragma once

#include "CodegenInternal.h"

#include "polyk/Bind.h"
#include "polyk/Emit.h"

#include <optional>
#include <set>

namespace polyk::codegen {

struct SplitK;

/// `fn(const float *x, float *out` (no closing parenthesis): the inputs and outputs.
std::string hostSignature(const Scop &s, const std::string &fn, bool cuda);
std::string emitReference(const Scop &s);
std::string emitScheduleC(const Scop &s);
std::string cPrologue(const Scop &s, Dialect d);
/// `#define S(i, j) do { ... } while (0)` for every statement; `reduce` and `init` print the
/// reduction update (given the value) and the initialisation.
/// `read`, where given, replaces the lvalue of a statement's k-th read (a tensor element) with
/// another expression; `only`, where not empty, names the one statement to define. Reads of the
/// tensors in `unguarded` keep no padding guard (their override reads a copy that holds the
/// padding).
using ReadOverride = std::function<std::string(const ScopStatement &, size_t k, const std::string &lvalue)>;
std::string statementMacros(const Scop &s, Dialect d, const std::set<std::string> &promoted,
                            const std::function<std::string(const ScopStatement &, const std::string &value)> &reduce,
                            const std::function<std::string(const ScopStatement &)> &init,
                            const ReadOverride &read = nullptr, const std::string &only = "",
                            const std::set<std::string> &unguarded = {}, const std::set<std::string> &rows = {});
/// Each tensor's element type, by name.
std::map<std::string, DType> typeTable(const Scop &s);
/// The tensor a statement writes.
std::string writtenTensor(const ScopStatement &st);
/// Replaces each whole word (identifier) `word` of `text` with `with` (AffineKernels.cpp).
std::string replaceWord(const std::string &text, const std::string &word, const std::string &with);
/// statementMacros' printer of a statement's reads (a promoted temporary's register, else the
/// element, through `read` where given, guarded where padded and not in `unguarded`).
AccessPrinter statementReads(const Scop &s, const ScopStatement &st, Dialect d, const std::set<std::string> &promoted,
                             const ReadOverride &read, const std::set<std::string> &unguarded, const std::set<std::string> &rows);
/// `[sub1][sub2]...`: an access's subscripts after the first, indexing a thread's row of a
/// promoted temporary (`rows` of statementMacros: polyk-bind's rows of a thread per instance).
std::string rowIndex(const std::string &accessMap, size_t rank);
std::string undefMacros(const Scop &s);
/// `prologue`: the includes and index helpers first (off for a second program in the same file).
std::string emitCudaKernels(const Scop &s, const EmitOptions &opt, bool prologue = true);
/// The affine path's kernels and launcher, and their mapped C (AffineKernels.cpp).
/// `dynamicOut`, where given, receives each kernel's bytes of dynamic shared memory.
std::string emitAffineCudaKernels(const Scop &s, const EmitOptions &opt, std::vector<long long> *dynamicOut = nullptr);
std::string emitAffineMappedC(const Scop &s, const EmitOptions &opt);
inline bool isAffine(const Scop &s) { return !s.statements.empty() && s.statements.front().form == Form::Affine; }
/// Sequential C that runs the CUDA kernels' code (mapping, guards, partials) thread by thread.
std::string emitMappedC(const Scop &s, const EmitOptions &opt);
/// Multi-device code (Multi.cpp, Matz et al.): how kernel k is shared out over devices, the
/// launcher polyk_NAME_multi over the runtime's buffers (CUDA, or C++ over the mapped kernels'
/// block ranges), and the harness that runs it on several device counts against one device.
struct SplitPlan {
  bool split = false;
  char axis = 0;          // the grid dim holding the split member: x, y or z (its first member)
  std::string count;      // blocks along the split member (C)
  std::string inner = "1"; // blockIdx.z values per block of the member (the members folded after it)
};
SplitPlan splitPlan(const Scop &s, int k, const AffineKernelIds &ids, const EmitOptions &opt);
/// A kernel body's prologue with the split grid dim offset by polyk_boff (the clone).
std::string offsetBlocks(const std::string &body, const AffineKernelIds &ids, char axis);
/// The affine path's kernel parameters and arguments (params, then every tensor), launch
/// dims, and whether a temporary lives in memory (AffineKernels.cpp).
std::string affineKernelParams(const Scop &s, bool cuda);
std::string affineKernelArgs(const Scop &s);
std::string affineLaunchDims(const KernelConfig &kc);
bool temporaryInMemory(const Scop &s, const TensorDecl &t);
/// A program that ends in reductions over its inputs' first dim, a parameter (sg7: out(h) +=!
/// t(b, s, h)): each device runs it on a share of that batch into partial outputs, combined on
/// device 0. `why` says what stops it.
struct BatchSplit {
  bool ok = false;
  std::string param, why;
};
BatchSplit batchSplit(const Scop &s);
std::string emitBatchLauncher(const Scop &s, const EmitOptions &opt, bool cuda);
/// `splits`: the kernels' split-K (SplitK.h), run per device on its share of the blocks.
std::string emitMultiLauncher(const Scop &s, const AffineMapping &mapped, const EmitOptions &opt, bool cuda,
                              const std::vector<long long> &dynamicShared, const std::map<int, SplitK> &splits);
std::string emitMultiHarness(const Scop &s, const EmitOptions &opt, bool cuda);
/// main() comparing polyk_NAME_<suffix> with the reference.
std::string emitCHarness(const Scop &s, const std::string &suffix, const EmitOptions &opt);
std::string emitCudaHarness(const Scop &s, const EmitOptions &opt);

/// A kernel of one thread (no band: isl found nothing to map) updates outputs directly: no other
/// thread touches them, and one thread may reduce into several outputs.
inline bool singleThread(const KernelConfig &kc) {
  return kc.grid == std::array<std::string, 3>{"1", "1", "1"} && kc.block == std::array<int, 3>{1, 1, 1};
}

/// The launched kernels (in order) grouped into the kernels that run as one: consecutive kernels
/// of one thread each (that thread runs them in order), or consecutive kernels with the same grid
/// and block, each `blockComplete` (its reductions finish inside the block), and
/// every block of a group reading and writing only what its own block of the earlier parts wrote
/// or read (KernelFusion.cpp). One group is one __global__ with a barrier between its parts.
std::vector<std::vector<size_t>> kernelGroups(const Scop &s, const isl::schedule &mapped,
                                              const std::function<bool(const KernelConfig &)> &launched,
                                              const std::function<bool(const KernelConfig &)> &blockComplete);

/// True when, in kernel `reader` (a later part of `writer`'s fused kernel), each row of threads
/// along `axis` ("x": a block's threads with one t_y; "y": with one t_x) reads, of the output of
/// reduction `stmt` of `writer`, only the one element that the same row computed there: the
/// element its leader stored, which block_broadcast can give every thread of the row.
bool readsRowResult(const Scop &s, const isl::schedule &mapped, const KernelConfig &writer, const std::string &stmt,
                    const KernelConfig &reader, const std::string &axis);

/// The vector loops of a kernel: a thread's innermost loop of V iterations with only statements
/// in its body (polyk-bind's vector loop). In it:
///  - a read of an input tensor at `base + lane`, where isl proves the index's step along the
///    loop is 1 and `base` a multiple of V at every instance, is one `polyk::load_vec<V>` of
///    V * size bytes (4, 8 or 16) before the loop (CUDA);
///  - a reduction whose output index is `base + lane` the same way (a y-reduce's vector of
///    columns) keeps one accumulator per lane: the thread owns V outputs.
class VectorReads {
public:
  VectorReads(const Scop &s, const std::set<std::string> &promoted) : s_(s), promoted_(promoted) {}
  /// Facts about the params the checks may assume (the AST's context: a symbolic extent a
  /// multiple of V in a kernel's aligned instance).
  void assume(const isl::set &params) { assumed_ = params; }
  /// The build, recording at each statement instance it reaches the bases of its accesses.
  isl::ast_build attach(const isl::ast_build &build);
  struct Read {
    std::string stmt;
    size_t access;      // index into the statement's reads
    std::string tensor;
    std::string base;   // C expression of the loop's outer iterators
  };
  struct Loop {
    int lanes = 0;                           // 0: not a vector loop
    std::vector<Read> reads;                 // served by one vector load each
    std::vector<std::string> laneReductions; // statements with one accumulator per lane
  };
  /// What `forNode` (printed after the build) is; records its lane reductions.
  Loop loop(const isl::ast_node &forNode);
  /// Accumulators per thread of a reduction statement (after the loops are printed): V or 1.
  int lanesOf(const std::string &stmt) const;
  /// Throws where a reduction's output moves with the innermost iterator outside a whole vector
  /// loop (a partial vector of outputs), which the one-accumulator-per-lane scheme cannot run.
  /// Throws InputError at `sizes` where a statement's lanes do not make whole vectors.
  void checkLanes(const SourceLoc &sizes) const;
  /// N for `for (c = 0; c <= N - 1; c += 1)`, else 0.
  static int constantTrip(const isl::ast_node &forNode);
  /// `sched` with the whole vectors of its vector loops (innermost bands of one member over
  /// 0 .. V - 1) isolated in the AST (isl's `isolate`), where some are partial (an all-reduce
  /// of an odd extent): the whole ones get a loop of V iterations, which `loop` can read with
  /// vector loads, and the partial one a loop of its own. Unchanged where every vector is whole.
  static isl::schedule isolateWholeVectors(const isl::schedule &sched, int V);

private:
  isl::set assumed_;
  struct Candidate {
    size_t access;
    isl::pw_aff base; // index - lane, over the schedule space
    std::string text;
    /// A symbolic extent scales the outer subscripts: `base` is the innermost subscript's, and
    /// the vector needs the innermost extent (this param) a multiple of V as well.
    std::string rowParam;
  };
  struct Instance {
    std::string stmt, lane; // the statement, the innermost iterator
    std::vector<Candidate> candidates;
    bool writeMoves = false; // a reduction whose output index changes with the lane
    std::optional<isl::pw_aff> writeBase; // its index - lane, where that does not depend on the lane
  };
  const Scop &s_;
  std::set<std::string> promoted_;
  std::vector<Instance> instances_;
  std::map<std::string, int> lanesNeeded_, lanesGiven_, lanes_;
};

} // namespace polyk::codegen
