// polyk-tune's measurements (issue 19): variants of a program built through the four stages,
// compiled in parallel, run one at a time and checked against the reference; the tuning log that
// lets a search stop anywhere (kill -9 included) and resume; the searches; best.yaml.
//
// The log is append-only JSON lines (docs/tune.md): a header naming the program, its sizes, the
// runner and the device, then one record per trial, keyed by the configuration's canonical string
// (name=value in the space's order). Each record is one write() ending in a newline; a last record
// without its newline was cut by a kill and is dropped.
#pragma once

#include "polyk/Tune.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace polyk {

/// The valid configurations of a space, one at a time: expressions filled in, constraints checked.
/// The parameters polyk-tune's spaces gained after their first logs, with the value a trial logged
/// before one existed ran with: emit.mma 0 (no tensor cores: session 12), k<K>.split 1 (no
/// split-K: session 11), k<K>.shared 49152 (the static limit: session 14). False for the others.
bool addedValue(const std::string &name, long long &value);

class SpaceModel {
public:
  explicit SpaceModel(const Space &s);
  const Space &space() const { return s_; }
  /// Fills `v`'s expression parameters from the others; the first constraint it violates (or a
  /// value outside its parameter's list), or "" where `v` is a configuration of the space.
  std::string complete(std::vector<long long> &v) const;
  std::vector<long long> defaults() const;
  /// name=value in the space's order: the log's key.
  std::string key(const std::vector<long long> &v) const;
  /// The inverse of key(); an InputError (at `at`) for a name the space lacks or a missing one.
  /// With `logged`, a key from a log recorded before some of the space's parameters existed: a
  /// missing one that polyk-tune added later takes the value its trials ran with (addedValue).
  std::vector<long long> parseKey(const std::string &key, const SourceLoc &at, bool logged = false) const;

private:
  Space s_;
  std::vector<TuneExpr> exprs_, cons_;
  std::vector<int> exprOf_;
};

enum class TrialStatus { Ok, CompileError, RuntimeError, Wrong, Violated, Timeout, Slow };
const char *statusName(TrialStatus s);

struct Trial {
  int index = 0;          // 0-based, over every session of the log
  std::string key;        // SpaceModel::key
  TrialStatus status = TrialStatus::Ok;
  double us = 0;          // median time, where Ok (or Slow: the first runs')
  double elapsedS = 0;    // tuning time when it finished, over every session
  std::string detail;     // the first line of an error
  /// NVRTC's report of the variant's kernels (RunnerOptions::resources): the most registers a
  /// thread of any kernel, and the most bytes any kernel spills (stores); -1 where not compiled.
  int registers = -1;
  long long spillBytes = -1;
};

struct TuneLogHeader {
  std::string program, programHash, params, runner, device, arch;
};

class TuneLog {
public:
  /// Opens `path`, creating it with `header` where absent or empty. An existing log whose header
  /// names another program, sizes, runner, device or architecture is an InputError (at its first
  /// line); a last record without its newline is dropped and cut from the file (`dropped()`).
  TuneLog(const std::string &path, const TuneLogHeader &header);
  const std::vector<Trial> &trials() const { return trials_; }
  bool has(const std::string &key) const { return keys_.count(key) != 0; }
  const std::string &path() const { return path_; }
  bool dropped() const { return dropped_; }
  void append(const Trial &t);
  /// A record of this session's start (search, seed, the space's size and generation time).
  void note(const std::map<std::string, std::string> &fields);

private:
  std::string path_;
  std::vector<Trial> trials_;
  std::set<std::string> keys_;
  bool dropped_ = false;
  void write(const std::string &line);
};

/// The header and trials of the log at `path`, read only (a cut last record is left out); an
/// InputError where it is not a tuning log.
std::vector<Trial> readTuneLog(const std::string &path, TuneLogHeader &header);

/// How variants are built and measured.
struct RunnerOptions {
  std::string kind = "cpu";                 // cpu: the mapped C on this machine (the stand-in); cuda: nvcc + the GPU
  std::string programText, programFile;
  std::vector<std::string> params;          // NAME=VALUE for the harness (symbolic sizes)
  /// NAME=VALUE: each variant checked at these sizes (the reference computed there, once), then
  /// timed unchecked at `params`' (a size whose reference the CPU would take minutes on).
  std::vector<std::string> checkParams;
  std::string workDir;                      // sources and binaries
  std::string runtimeDir;                   // libcore/runtime (polyk/harness.h)
  std::string compiler;                     // default: cc / nvcc
  std::string arch = "sm_90";
  int jobs = 2;                             // parallel compiles
  /// cuda: the GPUs that run variants at once, one each (CUDA_VISIBLE_DEVICES); empty: one at a
  /// time on the default GPU.
  std::vector<int> gpus;
  int reps = 20;                            // timed runs (cuda)
  double timeoutS = 60;                     // per compile and per run
  unsigned seed = 1;                        // the harness's data
  std::string determinism = "not_guaranteed";
  /// A map's covers (polyk-tune run --fusion-search K): the search's K covers, predicted from the
  /// psi/1 file `psi` (the model where empty), found once: {--fusion-cover text, sizes} by rank; a
  /// configuration's schedule.cover picks one.
  long long fusionCovers = 0;
  std::string psi;
  std::vector<std::pair<std::string, std::string>> covers;
  /// nvrtc: each variant's kernels compiled by NVRTC first (in process, no GPU needed), their
  /// registers and spills logged; off: not. Capacity pruning: a variant whose kernels spill more
  /// than `maxSpill` bytes (>= 0) is not built or run (status violated).
  std::string resources = "off";
  long long maxSpill = -1;
};

/// A configuration's CUDA (polyk-emit's, with `harness`) through the four stages in this
/// process, as the runner builds it; an InputError or a UsageError where a stage refuses it.
std::string variantSource(const Scop &flat, const SpaceModel &model, const std::vector<long long> &full,
                          const RunnerOptions &o, bool cuda, bool harness);

/// The variant's kernels compiled by NVRTC (Nvrtc.h) for `o.arch`: fills `t`'s registers and
/// spillBytes; false (with `t`'s status and detail set) where NVRTC fails or where the kernels
/// spill more than `o.maxSpill`.
bool checkResources(const std::string &cuda, const RunnerOptions &o, Trial &t);

/// The device and architecture the runner measures on (cpu: /proc/cpuinfo and uname; cuda:
/// nvidia-smi); a UsageError where there is none.
std::pair<std::string, std::string> runnerDevice(const RunnerOptions &o);

/// Builds, compiles (`jobs` at a time) and runs (one at a time, or one per GPU of `gpus`) the configurations `keys` of
/// `model`, each checked against the reference. A run whose first timings are >= 5x `bestUs`
/// (where > 0) is abandoned (Slow). `done` is called as each trial ends, in order; once `expired`
/// says so, the configurations not yet run (all but the first) are left, unreported (a later
/// search tries them).
void measure(const SpaceModel &model, const std::vector<std::vector<long long>> &configs, const RunnerOptions &o,
             double bestUs, const std::function<void(size_t, Trial)> &done, const std::function<bool()> &expired = {});

struct SearchOptions {
  std::string strategy = "random"; // exhaustive | random | anneal | model
  std::string model;               // model: the cost model (TuneModel.h) that ranks the space
  long long candidates = 20000;    // model: configurations ranked (all where the space has fewer; else drawn)
  long long trials = 0;            // stop after this many trials in the log, built and run (0: no limit)
  double seconds = 0;              // stop after this long in this session (0: no limit)
  double target = 0;               // stop at this speedup over the defaults (0: none)
  unsigned seed = 1;
};

struct TuneResult {
  Trial best, defaults;
  long long trials = 0, trialsToBest = 0;
  double secondsToBest = 0;
  long long spaceCount = 0;
  double generationS = 0;
  std::string stopped; // why the search stopped
};

/// The search: the defaults first, then the strategy's configurations not yet in the log, in
/// batches of `runner.jobs`, until a stop condition holds or the space is exhausted. `progress`
/// gets a line per trial.
TuneResult tune(const Space &space, TuneLog &log, const RunnerOptions &runner, const SearchOptions &search,
                const std::function<void(const std::string &)> &progress);

/// tuning/1 (best.yaml): polyk-schedule --tuning takes its sizes, polyk-bind --tuning its
/// points, polyk-emit --tuning its prefetch and mma (StageOptions; "auto" and "off" where the file
/// has none).
struct Tuning {
  std::string program, params, runner, device, arch, config, sizes;
  std::string points = "auto", prefetch = "auto", mma = "off";
  std::string shared = "auto", combine = "auto"; // polyk-bind --shared, polyk-emit --combine
  std::string unroll = "1";                       // polyk-emit --unroll
  std::string blocks = "0";                       // polyk-emit --blocks-per-sm
  std::string cover; // a map's fused kernels (polyk-schedule --fusion-cover), where tuned
  double us = 0, defaultUs = 0, secondsToBest = 0, generationS = 0;
  long long trials = 0, trialsToBest = 0, spaceCount = 0;
  SourceLoc programAt;
};
std::string writeTuning(const Tuning &t);
Tuning readTuning(const std::string &text, const std::string &file);
/// The tuning in file `path` for program `program` (an InputError where it is of another).
Tuning readTuningFor(const std::string &path, const std::string &program);

} // namespace polyk
