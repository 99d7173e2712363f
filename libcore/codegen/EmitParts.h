// The parts of a generated file, shared by emit's C, CUDA and harness printers. Private to
// libcore/codegen.
#pragma once

#include "CodegenInternal.h"

#include "polyk/Emit.h"

#include <set>

namespace polyk::codegen {

/// `fn(const float *x, float *out` (no closing parenthesis): the inputs and outputs.
std::string hostSignature(const Scop &s, const std::string &fn, bool cuda);
std::string emitReference(const Scop &s);
std::string emitScheduleC(const Scop &s);
std::string cPrologue(const Scop &s, Dialect d);
/// `#define S(i, j) do { ... } while (0)` for every statement; `reduce` and `init` print the
/// reduction update (given the value) and the initialisation.
std::string statementMacros(const Scop &s, Dialect d, const std::set<std::string> &promoted,
                            const std::function<std::string(const ScopStatement &, const std::string &value)> &reduce,
                            const std::function<std::string(const ScopStatement &)> &init);
std::string undefMacros(const Scop &s);
std::string emitCudaKernels(const Scop &s, const EmitOptions &opt);
/// Sequential C that runs the CUDA kernels' code (mapping, guards, partials) thread by thread.
std::string emitMappedC(const Scop &s, const EmitOptions &opt);
/// main() comparing polyk_NAME_<suffix> with the reference.
std::string emitCHarness(const Scop &s, const std::string &suffix, const EmitOptions &opt);
std::string emitCudaHarness(const Scop &s, const EmitOptions &opt);

/// The launched kernels (in order) grouped into the kernels that run as one: consecutive, with
/// the same grid and block, each `blockComplete` (its reductions finish inside the block), and
/// every block of a group reading and writing only what its own block of the earlier parts wrote
/// or read (KernelFusion.cpp). One group is one __global__ with a barrier between its parts.
std::vector<std::vector<size_t>> kernelGroups(const Scop &s, const isl::schedule &mapped,
                                              const std::function<bool(const KernelConfig &)> &launched,
                                              const std::function<bool(const KernelConfig &)> &blockComplete);

} // namespace polyk::codegen
