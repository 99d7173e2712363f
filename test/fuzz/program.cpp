// Fuzz target of the program/1 reader: the bytes as a program file, through what polyk-flatten
// runs (read, flatten, write the scop).
#include "FuzzTarget.h"
#include "polyk/Flatten.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return polyk::fuzz::runStage(data, size, [](const std::string &text) {
    polyk::writeScop(polyk::flatten(polyk::readProgram(text, "fuzz")));
  });
}
