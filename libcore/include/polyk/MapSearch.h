// Map fusion's search (Fousek et al. §4.3-4.4, issue 21): each fusion candidate's
// implementations (threads per instance of each function, a linearization, an allocation of its
// intermediates), their predicted time from benchmarked routines (psi/1, Eq. 3), and the covers of
// the DAG chosen by an ILP (GLPK), with alternatives by restarts.
#pragma once

#include "polyk/MapFusion.h"

#include <map>
#include <string>
#include <vector>

namespace polyk {

/// Timings of the routines on one device (psi/1, written by bench/map/psi.sh), at one or more
/// instance counts: a row copy (load and store of r f32 elements an instance), each function of
/// the example programs alone at each of its granularities, and a kernel's launch.
struct MapPsi {
  struct AtSize {
    long long instances = 0;
    std::map<long long, double> copyUs;         // r -> us for `instances` rows of r elements
    std::map<std::string, double> functionUs;   // "program f1 g3" (its default instances a block) or "program f1 g3 p16" -> us, the function alone
  };
  std::string device;
  double launchUs = 0; // a kernel's launch and drain (a copy of one instance)
  std::vector<AtSize> sizes;
};
MapPsi readPsi(const std::string &path);

/// One implementation of a candidate: its functions in the linearization's order, the threads
/// per instance of each, the instances a block, the shared memory of its intermediates.
struct MapImplementation {
  size_t candidate = 0;
  std::vector<size_t> order;      // MapDag indices, in the order the kernel runs them
  std::vector<long long> threads; // per function of `order`
  long long instances = 1;        // a block's
  long long boundBytes = 0;       // the linearization's lower bound, an instance
  long long allocatedBytes = 0;   // the allocation (branch and bound), an instance
  std::vector<long long> offsets; // per intermediate (MapSearch::intermediates), bytes an instance
  double memUs = 0, computeUs = 0, us = 0; // predicted at the search's instance count (Eq. 3)
};

struct MapCover {
  std::vector<size_t> implementations; // in an order every edge follows
  double us = 0;                       // predicted
};

struct MapSearchResult {
  MapDag dag;
  long long instances = 0; // the instance count predicted for (the program's parameter value)
  std::string basis;       // "psi DEVICE at N" or "model" (no psi/1 given)
  std::vector<std::vector<size_t>> candidates;
  std::vector<MapImplementation> implementations;
  std::vector<MapCover> covers; // best first
  double searchSeconds = 0, coverSeconds = 0;
};

/// The allocation of a fused kernel's intermediates (branch and bound, the paper's §4.3.2): each
/// of `bytes[i]` bytes an instance, aligned to `align[i]`, live from the position in the kernel
/// of the function that writes it to that of the last that reads it (`life[i]`); two live at once
/// never overlap. Each placed at 0 or at the end of one placed before; bound: the best end so far.
/// Returns the offsets (bytes an instance) and the end.
std::pair<std::vector<long long>, long long> allocateRows(const std::vector<long long> &bytes, const std::vector<std::pair<size_t, size_t>> &life,
                                                          const std::vector<long long> &align);

/// The search over `s`'s candidates of at most `k` functions, at most `covers` covers.
MapSearchResult searchFusions(const Scop &s, size_t k, size_t covers, const MapPsi *psi);

/// `--fusion-cover` text and the sizes (kernel[i] -> tile, block, threads) of cover `rank`.
std::string coverText(const MapSearchResult &r, size_t rank);
std::string coverSizes(const MapSearchResult &r, size_t rank);

/// fusion/1 with the search: the candidates' implementations and predictions, and the covers.
std::string writeFusionSearch(const MapSearchResult &r, size_t k);

/// Sub-programs whose times are psi/1's routines (bench/map/psi.sh): each function of `s` alone
/// (program/1 text) with the threads to run it at, and the row copies. Returns NAME -> (program
/// text, polyk-schedule options).
std::map<std::string, std::pair<std::string, std::string>> routinePrograms(const Scop &s);

} // namespace polyk
