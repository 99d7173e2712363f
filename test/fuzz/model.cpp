// Fuzz target of the cost model's reader (polyk-tune run --model, report --model): the bytes as the
// model file's first line (polyk's JSON header: format, device, features), followed by a valid
// XGBoost model, read as CostModel::load reads it and used for one prediction. (XGBoost's own
// JSON reader is Debian's library, not fuzzed here.)
#include "FuzzTarget.h"
#include "polyk/TuneModel.h"

#include <fstream>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string body = [] {
    std::vector<std::vector<double>> x;
    std::vector<double> us;
    for (int i = 0; i < 8; ++i) {
      x.emplace_back(polyk::featureNames().size(), (double)i);
      us.push_back(1.0 + i);
    }
    polyk::CostModel m;
    m.train(x, us, 2);
    std::string text = m.text("fuzz");
    return text.substr(text.find('\n') + 1);
  }();
  static const std::string path = "/tmp/polyk-fuzz-model." + std::to_string(::getpid()) + ".json";
  return polyk::fuzz::runStage(data, size, [](const std::string &text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text.substr(0, text.find('\n')) << "\n" << body;
    std::unique_ptr<polyk::CostModel> m = polyk::CostModel::load(path);
    (void)m->predict({std::vector<double>(polyk::featureNames().size(), 1.0)});
  });
}
