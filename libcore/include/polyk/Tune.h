// polyk-tune's search space (MDH + ATF, CNNOpt §3): the parameters polyk-schedule and polyk-bind
// can vary for a program, the constraints that link them, and ATF's generation of the valid
// configurations: parameters grouped by the constraints that link them, one tree per group, each
// constraint checked as soon as its last parameter is bound.
//
// space/1 (schemas/space.schema.json), which a user may edit:
//   polyk: space/1
//   name: gemm
//   parameters:
//     - {name: k0.tile.0, values: [1, 2, 4, 8, 16, 32, 64], default: 64}
//     - {name: k0.tile.1, expr: "k0.block.1 * k0.vector"}    (an expression of earlier ones)
//   constraints:
//     - "k0.tile.0 % k0.block.0 == 0"
// Names: k<K>.tile.<m>, k<K>.block.<m>, k<K>.reduce.<r>, k<K>.vector (the sizes map's entries).
#pragma once

#include "polyk/Diagnostics.h"
#include "polyk/Scop.h"

#include <memory>
#include <string>
#include <vector>

namespace polyk {

/// An integer expression over named parameters: + - * / % (C semantics), comparisons, && || !,
/// parentheses. A constraint holds where its value is not 0; division by 0 violates it.
class TuneExpr {
public:
  /// Parses `text`; `names` are the parameters it may use (their positions index the values).
  /// A syntax error or an unknown name is an InputError at `at` shifted to the offending column.
  TuneExpr(const std::string &text, const std::vector<std::string> &names, const SourceLoc &at);
  /// Its value at `values` (indexed like `names`); false in `ok` on a division by 0.
  long long eval(const std::vector<long long> &values, bool &ok) const;
  /// The positions of the parameters it uses.
  const std::vector<int> &uses() const { return uses_; }

private:
  struct Node {
    char op;      // 'n' number, 'v' variable, or the operator ('=' ==, '!' !=, 'l' <=, 'g' >=, '&', '|', 'u' unary -, 'N' not)
    long long v;  // number, or variable position
    int a = -1, b = -1;
  };
  std::vector<Node> nodes_;
  int root_ = -1;
  std::vector<int> uses_;
  long long at(int n, const std::vector<long long> &values, bool &ok) const;
  friend struct TuneExprParser;
};

struct SpaceParam {
  std::string name;
  std::vector<long long> values; // empty where `expr` gives it
  std::string expr;              // an expression of earlier parameters
  long long fallback = 0;        // the default (polyk-schedule's choice)
  SourceLoc at;
};

struct Space {
  std::string name;
  std::vector<SpaceParam> params;
  std::vector<std::string> constraints;
  std::vector<SourceLoc> constraintsAt;
};

/// The space of a flattened program (scop/1): per kernel of its default schedule, the tile and
/// block sizes per band member, a reduction's reduced tiles (affine path) or vector width
/// (reduction path), with polyk-schedule's defaults, the invariants polyk-bind checks, and
/// capacity limits (threads per block, blocks per grid dim, accumulators per thread); on the
/// affine path with reduced tiles, also polyk-bind's points and polyk-emit's prefetch
/// (StageOptions).
Space deriveSpace(const Scop &flattened);
std::string writeSpace(const Space &s);
Space readSpace(const std::string &text, const std::string &file);

struct Generated {
  long long count = 0;                       // valid configurations
  std::vector<long long> groupCounts;        // per tree (group of linked parameters)
  std::vector<std::vector<long long>> first; // the first ones, in tree order (up to the limit asked)
  double seconds = 0;                        // generation time
  /// The constraint the defaults violate (its text); empty where they are a configuration.
  std::string defaultViolates;
};

/// ATF's chain of trees: the valid configurations of `s`, counted, and the first `list` of them;
/// with `sample`, `list` configurations drawn uniformly at random (seeded) instead. A space whose
/// trees would take more than `maxNodes` nodes is an InputError (at its first parameter).
Generated generateSpace(const Space &s, long long list = 0, bool sample = false, unsigned seed = 1,
                        long long maxNodes = 1LL << 28);

/// A configuration as a sizes map for polyk-schedule / polyk-bind `--sizes`.
std::string sizesOf(const Space &s, const std::vector<long long> &values);

/// The stage options a configuration sets (the space's `bind.points`: 0 auto, 1 cyclic, 2
/// blocked; `emit.prefetch`: 1 auto, 0 off), as polyk-bind --points and polyk-emit --prefetch
/// take them; "auto" where the space has no such parameter.
struct StageOptions {
  std::string points = "auto", prefetch = "auto", mma = "off";
  /// polyk-bind --shared (the space's bind.shared: 1 auto, 0 off) and polyk-emit --combine
  /// (emit.combine: 0 auto, 1 atomic).
  std::string shared = "auto", combine = "auto";
  /// polyk-emit --unroll (the space's emit.unroll: 1 nvcc's choice, N > 1 `#pragma unroll N`).
  std::string unroll = "1";
  /// polyk-emit --blocks-per-sm (the space's emit.blocks: 0 polyk-emit's rule, N blocks an SM).
  std::string blocks = "0";
  /// A map's cover (the space's `schedule.cover`: polyk-schedule --fusion=search's rank, polyk-tune
  /// run --fusion-search); -1: none.
  long long cover = -1;
};
StageOptions stageOptionsOf(const Space &s, const std::vector<long long> &values);
/// Whether a space parameter sets a stage's option (bind.points, emit.prefetch, emit.mma,
/// bind.shared, emit.combine), not a kernel's sizes.
bool isStageOption(const std::string &name);

} // namespace polyk
