// polyk-flatten: dimension flattening (Panamera §3). Classifies each loop of each statement as
// parallel or reduced, interchanges interleaved dims, coalesces the contiguous groups into the
// canonical all-reduce / x-reduce / y-reduce forms (Formula 1, with the div/mod recovery of the
// original subscripts), propagates a reduction's coalescing into the elementwise statements that
// feed it (§3.2) and writes the polyhedral model.
#pragma once

#include "polyk/Program.h"
#include "polyk/Scop.h"

namespace polyk {

/// What polyk-flatten may change beyond Panamera's forms.
struct FlattenOptions {
  /// Reductions over "rpr" / "prpr" dims with a short innermost reduced run split in two instead of
  /// transposing their input (splitShortInnerRuns, Coalesce.cpp). Off by default until measured.
  bool splitRuns = false;
};

Scop flatten(const Program &program, const FlattenOptions &opt = {});

/// True when the program takes the affine path: affine subscripts, `where` clauses, padded
/// tensors, or a reduction whose reads reuse each other across outputs (GEMM, contractions).
bool needsAffinePath(const Program &program);
/// The affine path (flatten/Affine.cpp): original loops, affine accesses, reductions through an
/// accumulator temporary (init, update, store).
Scop flattenAffine(const Program &program);

/// Inlines an elementwise temporary `t(i, j) = expr` into a reader in a later kernel (one that
/// also reads a reduction's result, as softmax's division does) or, when it is computed from a
/// reduction's result, into a reader that broadcasts it over more dims (layer norm's mean). The
/// reader's text becomes the inlined statement (the reference runs it); temporaries left without
/// readers are removed with the statements that wrote them. Part of flatten.
void inlineProducers(Program &program);

} // namespace polyk
