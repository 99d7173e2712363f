// Fuzz target of the scop/1 reader: the bytes as a scop file, through what polyk-schedule runs
// with its default options (read, schedule with the default sizes, write the schedule).
#include "FuzzTarget.h"
#include "polyk/Schedule.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return polyk::fuzz::runStage(data, size, [](const std::string &text) {
    polyk::writeSchedule(polyk::schedule(polyk::readScop(text, "fuzz"), {}, nullptr));
  });
}
