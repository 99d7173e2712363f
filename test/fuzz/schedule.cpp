// Fuzz target of the schedule/1 reader: the bytes as a schedule file, through what polyk-bind runs
// with its default options (read, bind, write the bound program).
#include "FuzzTarget.h"
#include "polyk/Bind.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return polyk::fuzz::runStage(data, size, [](const std::string &text) {
    polyk::writeBound(polyk::bind(polyk::readSchedule(text, "fuzz"), {}));
  });
}
