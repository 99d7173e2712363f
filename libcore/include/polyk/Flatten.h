// polyk-flatten: dimension flattening (Panamera §3). Classifies each loop of each statement as
// parallel or reduced, interchanges interleaved dims, coalesces the contiguous groups into the
// canonical all-reduce / x-reduce / y-reduce forms (Formula 1, with the div/mod recovery of the
// original subscripts), propagates a reduction's coalescing into the elementwise statements that
// feed it (§3.2) and writes the polyhedral model.
#pragma once

#include "polyk/Program.h"
#include "polyk/Scop.h"

namespace polyk {

Scop flatten(const Program &program);

} // namespace polyk
