// Kernel Tuner's file formats (the auto-tuning community's T1 problem and T4 results schemas,
// version 1.0.0): polyk's space written as a T1 problem and read back from one, and a tuning log
// written as T4 results. See libcore/tune/KernelTuner.cpp.
#pragma once

#include "polyk/Tune.h"
#include "polyk/TuneRun.h"

#include <string>
#include <vector>

namespace polyk {

/// The space as a T1 problem (ConfigurationSpace: its tuned parameters, its constraints as
/// conditions in Python syntax with derived parameters spelled out; KernelSpecification: the
/// program). Names: `k0.tile.0` becomes `k0_tile_0`.
std::string writeT1(const Space &s, const std::string &programFile);

struct T1Problem {
  Space space;
  long long trials = 0;     // Budget ConfigurationCount (0: none)
  double seconds = 0;       // Budget TuningDuration
  double fraction = 0;      // Budget ConfigurationFraction
  std::string search;       // exhaustive | random | anneal; empty where the file names none
};
/// A T1 problem over the program's derived space `derived`: its TuningParameters set the values of
/// the parameters they name (the others keep the derived ones), its Conditions replace the
/// constraints. An InputError at file:line:col for another kernel's problem, a name the space
/// lacks, a non-integer type or value, a condition polyk's expressions cannot say.
T1Problem readT1(const std::string &text, const std::string &file, const Space &derived);

/// The trials of a log as T4 results (invalidity: correct, compile, runtime, correctness,
/// constraints, timeout; the time in us; polyk's own status beside them).
std::string writeT4(const Space &s, const std::vector<Trial> &trials);

} // namespace polyk
