// Fuzz target of the kernel/1 reader: the bytes as a kernel description, read and written back.
#include "FuzzTarget.h"
#include "polyk/Scop.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return polyk::fuzz::runStage(data, size, [](const std::string &text) {
    polyk::writeKernel(polyk::readKernel(text, "fuzz"));
  });
}
