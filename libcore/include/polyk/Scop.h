// The polyhedral model of a program and what the later stages add to it. One structure serves the
// file kinds scop/1 (written by flatten), schedule/1 (+ schedule tree, sizes, dependences),
// bound/1 (+ the mapped tree and launch configurations) and kernel/1 (what emit produced); each
// kind has its own reader and writer below, which check the sections that kind must have.
// isl objects are kept as isl text.
#pragma once

#include "polyk/Program.h"

#include <array>
#include <optional>
#include <map>
#include <string>
#include <vector>

namespace polyk {

enum class StmtKind { Assign, Reduce, Init };
/// Panamera Fig. 3: the canonical forms after coalescing; Elementwise for statements that are not
/// reductions and were not propagated into one.
/// Affine: a statement of the affine path (flatten/Affine.cpp), its original loops kept.
enum class Form { Elementwise, AllReduce, XReduce, YReduce, Affine };
const char *formName(Form f);

struct ScopStatement {
  std::string name;      // domain tuple name: S0, S1, S1_init
  StmtKind kind = StmtKind::Assign;
  std::string source;    // the program statement it comes from
  /// An elementwise program statement fused into this one (the affine path's reduction store:
  /// a conv's bias and ReLU); it writes what the statement writes. Empty: none.
  std::string epilogue;
  std::optional<ReduceOp> op;
  std::string reduction; // Init: the reduction statement it initialises
  Form form = Form::Elementwise;
  std::vector<std::string> dims;      // per coalesced dim: "parallel" or "reduced"
  std::vector<std::string> iterators; // original index names, in the order of `recovery`
  std::string domain;    // isl set over the coalesced dims
  std::string recovery;  // isl multi_aff: coalesced dims -> original iterators (Formula 1)
  std::string write;     // isl map
  std::vector<std::string> reads; // isl maps, one per access of `body`, in order
  std::string body;      // right-hand side in the input syntax, over the original iterators
  bool interchanged = false;      // interleaved parallel / reduced dims were reordered
  SourceLoc loc;         // in the file it was read from (not written)
  /// Where each field's value was read (empty when built in memory), for the validator's errors.
  struct Locs {
    SourceLoc name, source, epilogue, initialises, dims, iterators, domain, recovery, write, body;
    std::vector<SourceLoc> reads;
  } at;
};

/// A tensor flatten re-laid out so an interchanged reduction reads consecutive addresses
/// (Panamera §3.1): `as` holds `tensor` with its dims permuted, as[d] = tensor[order[d]].
struct Relayout {
  std::string tensor, as;
  std::vector<int> order;
  SourceLoc loc;
};

/// One kernel of the bound program: a child of the schedule tree's top-level sequence.
struct KernelConfig {
  std::string name;
  std::vector<std::string> statements;
  std::array<std::string, 3> grid{"1", "1", "1"}; // blocks per axis (integer literals for now)
  std::array<int, 3> block{1, 1, 1};
  std::string reduceAxis = "none";       // thread axis of the block reduction: none, x, y
  std::string reduceBlockAxis = "none";  // grid axis over which one reduction spans blocks
  std::vector<std::string> promoted;     // temporaries kept in registers
  std::vector<std::string> shared;       // tensors staged in shared memory at its `shared` mark
  /// A staged tensor's copy whose dims lie in another order than the tensor's: its dims, outermost
  /// first (`shared_layout: {A: [1, 0]}`: A's copy is transposed).
  std::map<std::string, std::vector<int>> sharedLayout;
  /// kernel/1: the bytes of dynamic shared memory the kernel is launched with (its staged copies
  /// past 48 KB; the launcher raises the kernel's limit to them first). 0: none.
  long long dynamicShared = 0;
  /// Where each field's value was read (empty when built in memory).
  struct Locs {
    SourceLoc kernel, name, grid, block;
    std::vector<SourceLoc> statements, promoted, shared;
    std::map<std::string, SourceLoc> sharedLayout;
  } at;
};

struct Scop {
  std::string kind = "scop"; // of the file it was read from
  std::string name;
  std::vector<std::pair<std::string, long long>> params;
  std::vector<TensorDecl> tensors;
  std::vector<ScopStatement> statements;
  std::vector<Relayout> relayouts;
  Iterate iterate; // the program's, unchanged by every stage
  // schedule/1
  std::string schedule;       // isl schedule tree (block YAML text)
  std::string sizes;          // isl union map: kernel[k] -> tile[..]; kernel[k] -> block[..]
  std::string flow;           // isl union map: flow dependences
  std::string reductionDeps;  // isl union map: the relaxed reduction dependences
  // bound/1
  std::vector<KernelConfig> kernels;
  // kernel/1
  std::string launcher;       // C signature of the host launcher
  std::string source;         // file name of the CUDA source, if known
  Provenance provenance;
  /// Where the top-level fields were read (empty when built in memory).
  struct Locs {
    SourceLoc name, statements, schedule, sizes, flow, reduction, kernels, launcher;
  } at;

  const TensorDecl *tensor(const std::string &n) const;
  const ScopStatement *statement(const std::string &n) const;
};

/// The number of elements of `t` as a C expression (symbolic extents by name).
std::string elementsExpr(const TensorDecl &t);
/// `[N] -> { T[d0, ..] : 0 <= d0 < N and .. }`: the elements of `t` as an isl set over the
/// program's parameters.
std::string tensorBox(const Scop &s, const TensorDecl &t);
/// `[B] -> { : B = 64 }`: the parameters at the values the program gives them (for decisions that
/// need numbers, like default sizes; the code stays symbolic).
std::string paramDefaults(const Scop &s);
/// The iterations of statement `st`'s reduced dims at the parameters' defaults (1 without any):
/// their extents' product, an affine statement's from each dim's lowest value.
long long reducedIterations(const Scop &s, const ScopStatement &st);

/// The file kinds that share this structure, each adding to the one before.
enum class ScopLevel { Scop, Schedule, Bound, Kernel };

/// Checks what the schemas cannot (names defined once and resolved, bounded domains, matching
/// spaces and arities, sizes and marks in range, a schedule tree that covers the statements);
/// throws InputError at the offending value. Every reader below calls it.
void validate(const Scop &s, ScopLevel level);

Scop readScop(const std::string &text, const std::string &file);
std::string writeScop(const Scop &s);
Scop readSchedule(const std::string &text, const std::string &file);
std::string writeSchedule(const Scop &s);
Scop readBound(const std::string &text, const std::string &file);
std::string writeBound(const Scop &s);
Scop readKernel(const std::string &text, const std::string &file);
std::string writeKernel(const Scop &s);

} // namespace polyk
