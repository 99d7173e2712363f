// Fuzz target of the space/1 reader: the bytes as a space file, through polyk-tune generate
// (its trees counted, a few configurations listed and drawn at random, as sizes maps), with a
// small node budget so a huge space is a verdict, not a timeout.
#include "FuzzTarget.h"
#include "polyk/Tune.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return polyk::fuzz::runStage(data, size, [](const std::string &text) {
    polyk::Space s = polyk::readSpace(text, "fuzz");
    for (bool sample : {false, true}) {
      polyk::Generated g = polyk::generateSpace(s, 4, sample, 7, 1 << 20);
      for (const auto &c : g.first) (void)polyk::sizesOf(s, c);
    }
  });
}
