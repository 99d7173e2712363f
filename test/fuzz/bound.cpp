// Fuzz target of the bound/1 reader: the bytes as a bound file, through the two polyk-emit runs
// the examples make, both with a harness: CUDA (Makefile.examples) and the kernels' code on the
// CPU (test/e2e/check-c.sh), each also writing its kernel/1 description as --kernel-info does.
#include "FuzzTarget.h"
#include "polyk/Emit.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return polyk::fuzz::runStage(data, size, [](const std::string &text) {
    polyk::Scop bound = polyk::readBound(text, "fuzz");
    polyk::EmitOptions cuda;
    cuda.harness = true;
    polyk::writeKernel(polyk::emit(bound, cuda).kernelInfo);
    polyk::EmitOptions mapped;
    mapped.target = polyk::EmitOptions::Target::MappedC;
    mapped.harness = true;
    polyk::writeKernel(polyk::emit(bound, mapped).kernelInfo);
  });
}
