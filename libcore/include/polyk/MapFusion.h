// Map fusion (Fousek et al., issue 21): the DAG of a map's elementary functions and the fusible
// candidates, the search's first two steps, written as a readable file (fusion/1).
#pragma once

#include "polyk/Scop.h"
#include "polyk/Sizes.h"

#include <optional>
#include <string>
#include <vector>

namespace polyk {

/// One elementary function of a map: a program statement (its init, update and store), the
/// tensor it produces, the row of that tensor an instance owns, and the threads per instance it
/// may run on (Fousek's granularities: 1, and the products of the row's leading or trailing dims).
struct MapFunction {
  std::string name;                     // f0, f1, ... in program order
  std::string source;                   // the program statement
  std::vector<std::string> statements;  // its scop statements
  std::string output;
  std::vector<long long> row;           // the output's dims after the instance
  std::vector<long long> statementRow;  // its first statement's parallel dims after the instance
  std::vector<long long> granularities; // threads per instance
  std::vector<std::string> reads;       // tensors it reads (not its own accumulators)
};

struct MapEdge {
  size_t from = 0, to = 0;
  std::string tensor;
};

struct MapDag {
  std::string program;
  std::vector<MapFunction> functions;
  std::vector<MapEdge> edges;
};

/// The DAG of `s`'s functions, edges from a function to those that read what it produces. Throws
/// UsageError where `s` is not a map (an affine program whose statements' first dim is the
/// instance, and whose outputs keep constant dims after it).
MapDag mapDag(const Scop &s);

/// The candidates for fusion: the sets of at most `k` functions, connected in the DAG (edges taken
/// either way), that no path leaves and re-enters (a fusion runs as one kernel), each sorted, the
/// sets in order of size, then of members.
std::vector<std::vector<size_t>> fusionCandidates(const MapDag &dag, size_t k);

/// A statement's dims as a box: dim 0 (the instance) from 0 to `instances` (C), the others from 0
/// to constant extents. Throws UsageError where the domain is not such a box (a fused map
/// kernel's statements run over whole rows).
struct MapBox {
  std::string instances;
  std::vector<long long> extents; // dims 1..
  std::vector<std::string> names; // all dims
};
MapBox mapBox(const ScopStatement &st);

/// polyk-schedule --fusion=shared: the sizes of the one fused kernel, from those `requested`
/// (`kernel[0] -> threads[g0, ...]`, tile[P], block[B]) or by default: each function on as many
/// threads per instance as its row's last dim has elements, 256 threads a block, and the fewest
/// instances a block, a power of two, that give the widest function a point for every thread.
/// Throws UsageError for counts that are not a function's granularities.
/// `functions`: the kernel's (MapDag indices, in order).
KernelSizes mapBlockSizes(const Scop &s, const KernelSizes &requested, const std::vector<size_t> &functions);

/// The dims [lo, hi) of a function's statement row that `g` threads an instance take: all of
/// them, else trailing dims, else leading ones whose product is g; none where no such dims exist.
std::optional<std::pair<size_t, size_t>> threadedDims(const std::vector<long long> &row, long long g);

/// The kernels of `--fusion-cover` text (`f0+f1+f2,f3`): sets of MapDag indices, in an order in
/// which every edge goes forward. A set's functions keep the order the text gives them where
/// every edge inside the set goes forward in it (`f0+f2+f1`: the kernel runs f2 before f1), else
/// they run in program order. Throws UsageError where the text names an unknown function, a
/// function twice or not at all, a set that is not convex, or sets whose edges form a cycle.
std::vector<std::vector<size_t>> parseCover(const MapDag &dag, const std::string &text);

/// fusion/1: the DAG and the candidates.
std::string writeFusionCandidates(const MapDag &dag, const std::vector<std::vector<size_t>> &candidates, size_t k);

} // namespace polyk
