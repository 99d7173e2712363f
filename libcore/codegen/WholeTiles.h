// Partial blocks that run the whole tiles' code (as CUTLASS predicates only its global accesses):
// a register-tiled kernel whose compute reads nothing but its registers and its staged copies
// computes every point of a block's tile, also those past the tensors' ends, and guards only the
// stores. Private to libcore/codegen.
#pragma once

#include "Staging.h"

#include <map>
#include <string>

namespace polyk::codegen {

struct WholeTiles {
  bool apply = false;
  /// Per statement that writes memory: the C condition on its iterators that its instance exists
  /// (empty where every point of a tile exists).
  std::map<std::string, std::string> storeGuards;
  /// The blocks (tile band coordinates) that run it: those holding instances of every statement.
  isl::set blocks;
};

/// Kernel k's tile band (the first band below its mark, on blocks); null where it has none.
isl::schedule_node tileBand(const isl::schedule &bound, int k);

/// Statement `st`'s instances -> their block's coordinates (the tile band's members, of sizes
/// `tile`), one affine function over the statement's whole space: floor(d / T) of the dim d that
/// each member tiles. (The band's own functions hold on the domain only: isl writes a member that
/// is 0 there, as floor(c / 3) for 0 <= c <= 2, as 0.) Null where a member is not of that form.
isl::multi_aff blockOf(const isl::schedule_node &band, const std::vector<long long> &tile, const ScopStatement &st);

/// Whether kernel k's partial blocks may run its whole tiles' code, and the guards of its stores.
/// It may where:
/// - every statement either writes a register accumulator (kc.promoted) and reads only those and
///   its staged copies, with no division in its body (a trap on the CPU for the points past the
///   end), or writes memory with no reduced dims (a store: its whole body, reads of other tensors as an
///   epilogue's included, runs under its guard);
/// - no statement is a window's reduction (a stencil's; Schedule.h's windowReduction);
/// - each computing statement's domain is the product of its parallel dims (the tile band's) and
///   the others, so the whole tile's points take the reduced loops of the points that exist;
/// - isl shows every read of a staged copy by the tiles' points stays inside the copy's box.
WholeTiles wholeTiles(const Scop &s, const isl::schedule &bound, const KernelConfig &kc, int k, const Staging &staging);

} // namespace polyk::codegen
