// Fuzz target of the partition/1 reader (polyk-partition --check): the bytes as a partition file,
// read, checked (isl text parsed, split against the block ids and the writes' flags) and written
// back.
#include "FuzzTarget.h"
#include "polyk/Partition.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return polyk::fuzz::runStage(data, size, [](const std::string &text) {
    (void)polyk::writePartition(polyk::readPartition(text, "fuzz"));
  });
}
