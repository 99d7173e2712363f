// Fuzz target of the tuning log's reader (polyk-tune run --log): the bytes as a log file, opened
// as a resumed search opens it (the header checked against the fuzz corpus's, records parsed, a
// cut last record dropped and cut from the file), then one record appended.
#include "FuzzTarget.h"
#include "polyk/TuneRun.h"

#include <fstream>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path = "/tmp/polyk-fuzz-tunelog." + std::to_string(::getpid()) + ".jsonl";
  return polyk::fuzz::runStage(data, size, [](const std::string &text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    polyk::TuneLog log(path, {"gemm", "0123456789abcdef", "M=33", "cpu", "cpu: fuzz", "x86_64"});
    polyk::Trial t;
    t.index = (int)log.trials().size();
    t.key = "k0.tile.0=" + std::to_string(log.trials().size() + 1000000);
    if (!log.has(t.key)) log.append(t);
  });
}
