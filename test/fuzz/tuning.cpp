// Fuzz target of the tuning/1 reader (polyk-tune run's best.yaml, which polyk-schedule --tuning
// reads): the bytes as a tuning file, its sizes map parsed as polyk-schedule parses it.
#include "FuzzTarget.h"
#include "polyk/Sizes.h"
#include "polyk/TuneRun.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return polyk::fuzz::runStage(data, size, [](const std::string &text) {
    polyk::Tuning t = polyk::readTuning(text, "fuzz");
    polyk::SourceLoc at{"fuzz", 1, 1};
    (void)polyk::parseSizes(t.sizes, &at);
  });
}
