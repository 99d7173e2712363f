// polyk-tune's cost model (CNNOpt §4, issue 19): analytical features of a configuration, computed
// from the sizes alone (no compile), and a gradient-boosted regressor (XGBoost) trained per
// device on logged trials, which ranks a space so that only its predicted best few are measured.
//
// The features follow CNNOpt's: the bytes a block moves from global memory per reduced tile and
// in all, the loads a thread issues per multiply-add (its register tile's reuse), the arithmetic
// intensity of a block's tile, threads, registers and occupancy, waves and the last wave's fill,
// and the stage options. Footprints are those of each read over a block's tile: the product, over
// the band members and reduced dims the read's subscripts involve, of the tile's extent there
// (halos ignored).
#pragma once

#include "polyk/Isl.h"
#include "polyk/Scop.h"
#include "polyk/Tune.h"

#include <memory>
#include <string>
#include <vector>

namespace polyk {

/// What the features need of one kernel of a program's default schedule.
struct KernelShape {
  int kernel = 0;
  std::vector<long long> extent;     // per band member, at the parameters' values
  double reducedIterations = 1;      // per point of the band: the reduced loops' trip count
  std::vector<long long> reducedExtent; // per reduced dim (where reduce sizes tile them)
  struct Read {
    std::vector<bool> members; // the band members its subscripts involve
    std::vector<bool> reduced; // the reduced dims they involve
    int bytes = 4;
  };
  std::vector<Read> reads;
  /// Per tensor the innermost statements read, the box around its reads over a block's tile and
  /// a reduced tile: per tensor dim, the spread of the reads' constant offsets plus, per band
  /// member and reduced dim (numbered members first), the largest |coefficient| of its index.
  struct Box {
    std::string tensor;
    int bytes = 4;
    struct Dim {
      long long spread = 0, lo = 0; // the constant offsets span [lo, lo + spread]
      std::vector<long long> coef; // n members, then the reduced dims
    };
    std::vector<Dim> dims;
    /// Elements, given each member's tile and each reduced dim's tile (`sizes`, same numbering):
    /// the product over dims of spread + 1 + sum coef * (size - 1).
    double elements(const std::vector<double> &sizes) const;
    /// The same as an expression of polyk-tune space's names (`names`, same numbering).
    std::string expression(const std::vector<std::string> &names) const;
  };
  std::vector<Box> boxes;
  double work() const;         // points of the band times reduced iterations
};

/// The kernels of a flattened program (scop/1) under its default schedule.
std::vector<KernelShape> kernelShapes(const Scop &flat);

/// The tiled band of kernel `k` of a scheduled tree (below its mark and any others), or null
/// where the kernel has none (one thread) or `members` is 0.
isl::schedule_node kernelBand(const isl::schedule &tree, int k, size_t members);
/// Per member of a tiled band: the values its tiles take at `params`, times the tile size.
std::vector<long long> bandExtents(const isl::schedule_node &band, const std::vector<long long> &tile, const isl::set &params);

struct FeatureOptions {
  int sms = 132;            // the device's multiprocessors (H100 SXM: 132)
  int threadsPerSm = 2048;  // resident threads an SM
  int registersPerSm = 65536;
  int sharedPerSm = 228 * 1024;
};

const std::vector<std::string> &featureNames();
/// False for the stage options (a space's `bind.*` / `emit.*` parameters) that no feature
/// depends on and that --search=model keeps at their defaults, since configurations differing
/// only there rank as ties: emit.unroll, emit.blocks, bind.shared, emit.combine. (No feature
/// depends on emit.mma either, but its constraint ties it to the sizes, so it stays free.)
bool featuresDescribe(const std::string &param);
/// The features of configuration `config` of `space` (the kernel with the most work, and the
/// number of kernels).
std::vector<double> features(const std::vector<KernelShape> &shapes, const Space &space, const std::vector<long long> &config,
                             const FeatureOptions &o = {});

/// A trained model: log(time in us) from the features.
class CostModel {
public:
  CostModel();
  ~CostModel();
  CostModel(const CostModel &) = delete;
  CostModel &operator=(const CostModel &) = delete;
  /// Trains on rows of features and measured times (us); `rounds` boosting rounds.
  void train(const std::vector<std::vector<double>> &x, const std::vector<double> &us, int rounds = 300, unsigned seed = 1);
  /// Predicted times (us).
  std::vector<double> predict(const std::vector<std::vector<double>> &x) const;
  /// The model file's text: a JSON line naming the format, `device` and the features, then
  /// XGBoost's JSON model.
  std::string text(const std::string &device) const;
  /// Reads a model file (text()); an InputError (at the file) where it is not one, or where its
  /// features are not this version's.
  static std::unique_ptr<CostModel> load(const std::string &path, std::string *device = nullptr);

private:
  void *booster_ = nullptr;
};

/// A log's correct trials as the model's rows; its other trials (wrong, failed, abandoned as slow)
/// apart, which a search ranked by the model would also have spent a trial on.
struct ModelData {
  std::string program, device;
  Space space;
  std::vector<KernelShape> shapes;
  std::vector<std::vector<double>> x; // features
  std::vector<double> us;             // measured
  std::vector<std::string> keys;
  std::vector<int> index;             // the trials' numbers in the log
  std::vector<std::vector<double>> failedX;
  std::vector<int> failedIndex;
};
/// The correct trials of the log `logPath`, recorded by polyk-tune run for the program in
/// `programText` (at the log's sizes, over its derived space); an InputError where the log is of
/// another program or names parameters the space lacks.
ModelData modelData(const std::string &programText, const std::string &programFile, const std::string &logPath);

/// How well a ranking finds the best of the logged trials (CNNOpt's Table 8): trials in the
/// model's order until 95% and 100% of the best time, the loss of performance of its top-10 and
/// top-30 (1 - best / best of the top-n; 0 is no loss), Spearman's rank correlation (correct
/// trials). `predictedFailed` ranks d.failedX: those take their place in the order, a trial each,
/// and never reach the best. `searchTo95`: as `polyk-tune run --search=model` takes them, the
/// defaults (trial 0, correct or not) first, then the model's order (0 where the log lacks trial 0
/// or no trial is correct).
struct ModelReport {
  long long trials = 0, failed = 0, to95 = 0, to100 = 0, searchTo95 = 0;
  double best = 0, lop10 = 0, lop30 = 0, spearman = 0;
};
ModelReport judge(const ModelData &d, const std::vector<double> &predicted, const std::vector<double> &predictedFailed = {});
/// Writes `dir`/predicted.csv, best-so-far.csv and plots.gp (gnuplot: predicted vs measured, best
/// so far by trial); returns the report's line.
std::string writeReport(const ModelData &d, const std::vector<double> &predicted, const ModelReport &r, const std::string &dir);

} // namespace polyk
