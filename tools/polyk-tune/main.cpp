// polyk-tune: the fifth stage (MDH + ATF, CNNOpt §3-4). See libcore/include/polyk/Tune.h.
//   polyk-tune space PROGRAM.yaml [-o space.yaml]   the space of a program (space/1)
//   polyk-tune generate space.yaml [--list N]       ATF's generation: its size, time, and the first
//                                                   N configurations as sizes maps
#include "polyk/MapSearch.h"
#include "polyk/Flatten.h"
#include "polyk/Isl.h"
#include "polyk/KernelTuner.h"
#include "polyk/Nvrtc.h"
#include "polyk/Program.h"
#include "polyk/Tool.h"
#include "polyk/Tune.h"
#include "polyk/TuneModel.h"
#include "polyk/TuneRun.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <tuple>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <atomic>
#include <thread>

namespace {

int usage() {
  std::fprintf(stderr, "usage: polyk-tune space PROGRAM.yaml [-o space.yaml]\n"
                       "       polyk-tune generate SPACE.yaml [--list N] [-o OUT]\n"
                       "       polyk-tune run PROGRAM.yaml --log LOG.jsonl [--runner cpu|cuda] [-o best.yaml]\n"
                       "       polyk-tune train PROGRAM.yaml --log LOG.jsonl [--also PROGRAM=LOG] -o MODEL\n"
                       "       polyk-tune export PROGRAM.yaml --log LOG.jsonl [-o results.json]\n"
                       "       polyk-tune report PROGRAM.yaml --log LOG.jsonl --model MODEL [--dir DIR]\n"
                       "       polyk-tune resources PROGRAM.yaml --log LOG.jsonl [-j N]\n"
                       "run 'polyk-tune COMMAND --help' for the options\n");
  return 2;
}

/// FNV-1a of the program's text: the log belongs to one program.
std::string hashOf(const std::string &text) {
  unsigned long long h = 1469598103934665603ULL;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  char b[24];
  std::snprintf(b, sizeof b, "%016llx", h);
  return b;
}

/// Binds the program's symbolic sizes to --param's NAME=VALUE items (positive integers).
void bindParams(polyk::Program &program, const std::vector<std::string> &params) {
  for (const auto &p : params) {
    size_t eq = p.find('=');
    if (eq == std::string::npos || eq == 0) throw polyk::UsageError("--param " + p + ": NAME=VALUE expected");
    std::string name = p.substr(0, eq);
    auto it = std::find_if(program.params.begin(), program.params.end(), [&](const auto &q) { return q.first == name; });
    if (it == program.params.end()) throw polyk::UsageError("--param " + p + ": the program has no parameter " + name);
    try {
      size_t used = 0;
      it->second = std::stoll(p.substr(eq + 1), &used);
      if (used != p.size() - eq - 1 || it->second < 1) throw std::invalid_argument("");
    } catch (const std::exception &) {
      throw polyk::UsageError("--param " + p + ": a positive integer expected");
    }
  }
}

int runCommand(int argc, char **argv) {
  polyk::RunnerOptions runner;
  polyk::SearchOptions search;
  std::string logPath, spacePath, t1Path, work;
  CLI::Option *searchOption = nullptr, *resourcesOption = nullptr;
  bool keep = false;
  runner.runtimeDir = POLYK_RUNTIME_DIR;
  polyk::ToolSpec spec{
      "polyk-tune run",
      "Search a program's space (derived, or --space): each configuration goes through the four stages, is compiled "
      "(--jobs at a time), run and checked against the sequential reference, and logged (--log, JSON lines) as it "
      "ends. Rerun with the same --log to resume after any stop, kill -9 included. Writes best.yaml (tuning/1), "
      "which polyk-schedule --tuning takes.",
      [&](CLI::App &app) {
        app.add_option("--log", logPath, "the tuning log (JSON lines); an existing one is resumed")->required();
        app.add_option("--space", spacePath, "the space (space/1) to search; default: polyk-tune space's")
            ->check(CLI::ExistingFile);
        app.add_option("--t1", t1Path, "a T1 tuning problem (Kernel Tuner's JSON): its parameters' values and conditions "
                                       "over the program's space, its Budget and Search where no option gives them")
            ->check(CLI::ExistingFile)
            ->excludes("--space");
        app.add_option("--runner", runner.kind, "cuda: nvcc and the GPU; cpu: the kernels' code on this machine "
                                                "(--target=c-mapped, a stand-in)")
            ->check(CLI::IsMember({"cpu", "cuda"}))
            ->capture_default_str();
        searchOption = app.add_option("--search", search.strategy,
                       "exhaustive, random, anneal (simulated annealing) or model (the --model's best predicted first)")
            ->check(CLI::IsMember({"exhaustive", "random", "anneal", "model"}))
            ->capture_default_str();
        app.add_option("--model", search.model, "the cost model (polyk-tune train) that ranks the space for --search=model")
            ->check(CLI::ExistingFile);
        app.add_option("--candidates", search.candidates,
                       "--search=model: configurations ranked (the whole space where it has fewer, else drawn at random)")
            ->check(CLI::Range(1LL, 10000000LL))
            ->capture_default_str();
        app.add_option("--trials", search.trials, "stop when the log holds this many trials (0: no limit)")
            ->check(CLI::NonNegativeNumber);
        app.add_option("--time", search.seconds, "stop after this many seconds (0: no limit)")->check(CLI::NonNegativeNumber);
        app.add_option("--target", search.target, "stop at this speedup over the defaults (0: none)")->check(CLI::NonNegativeNumber);
        app.add_option("--seed", search.seed, "the search's seed")->capture_default_str();
        app.add_option("--data-seed", runner.seed, "the seed of the harness's random data")->capture_default_str();
        app.add_option("--param", runner.params, "NAME=VALUE: a symbolic size's value (repeatable)");
        app.add_option("--check-param", runner.checkParams,
                       "NAME=VALUE: check each variant at this size instead (repeatable), then time it unchecked "
                       "(for sizes whose CPU reference would take minutes)");
        app.add_option("-j,--jobs", runner.jobs, "compiles at a time")->check(CLI::Range(1, 256))->capture_default_str();
        app.add_option("--gpus", runner.gpus,
                       "GPUs that run variants at once, one each, e.g. 0,1 (CUDA_VISIBLE_DEVICES; with --runner cpu: "
                       "that many at once on this machine, which then share its cores)")
            ->delimiter(',')
            ->check(CLI::NonNegativeNumber);
        app.add_option("--reps", runner.reps, "timed runs per variant (cuda)")->check(CLI::Range(1, 100000))->capture_default_str();
        app.add_option("--timeout", runner.timeoutS, "seconds a run may take (a compile: 4x)")
            ->check(CLI::PositiveNumber)
            ->capture_default_str();
        app.add_option("--arch", runner.arch, "nvcc's -arch (cuda)")->capture_default_str();
        app.add_option("--compiler", runner.compiler, "the compiler (default: cc, or nvcc)");
        resourcesOption = app.add_option("--resources", runner.resources,
                       "nvrtc: compile each variant's kernels with NVRTC first (in process, no GPU needed) and log their "
                       "registers and spills (a compile error there skips nvcc); off: not")
            ->check(CLI::IsMember({"nvrtc", "off"}))
            ->capture_default_str();
        app.add_option("--max-spill", runner.maxSpill,
                       "capacity pruning: a variant whose kernels spill more than this many bytes (NVRTC's ptxas report) "
                       "is logged as violated and neither built nor run, nor counted as a trial (-1: no limit; a limit implies "
                       "--resources=nvrtc)")
            ->check(CLI::Range(-1LL, 1LL << 40))
            ->capture_default_str();
        app.add_option("--determinism", runner.determinism, "polyk-emit's --determinism")
            ->check(CLI::IsMember({"not_guaranteed", "run_to_run"}))
            ->capture_default_str();
        app.add_option("--runtime", runner.runtimeDir, "the directory holding polyk/harness.h")->capture_default_str();
        app.add_option("--work", work, "where variants are built (default: a temporary directory, removed)");
        app.add_flag("--keep", keep, "keep the --work directory");
        app.add_option("--fusion-search", runner.fusionCovers,
                       "a map (Fousek et al.): instead of sizes, measure the best K covers of polyk-schedule --fusion=search "
                       "(the space: schedule.cover, 0 to K - 1) and keep the fastest (best.yaml's cover)")
            ->check(CLI::Range(1, 1000))
            ->excludes("--space")
            ->excludes("--t1");
        app.add_option("--psi", runner.psi, "with --fusion-search: the routines' timings the search predicts from (psi/1)")
            ->check(CLI::ExistingFile);
      },
      [&](const polyk::ToolInput &in, polyk::ExtraOutputs &) {
        for (const auto &p : runner.params)
          if (p.find('=') == std::string::npos || p.front() == '=')
            throw polyk::UsageError("--param " + p + ": NAME=VALUE expected");
        // The program at the --param sizes: the space and every variant are derived there.
        polyk::Program program = polyk::readProgram(in.text, in.displayName);
        for (const auto &p : runner.checkParams) {
          size_t eq = p.find('=');
          std::string name = eq == std::string::npos ? "" : p.substr(0, eq);
          bool known = std::any_of(program.params.begin(), program.params.end(), [&](const auto &q) { return q.first == name; });
          if (name.empty()) throw polyk::UsageError("--check-param " + p + ": NAME=VALUE expected");
          if (!known) throw polyk::UsageError("--check-param " + p + ": the program has no parameter " + name);
          try {
            size_t used = 0;
            long long v = std::stoll(p.substr(eq + 1), &used);
            if (used != p.size() - eq - 1 || v < 1) throw std::invalid_argument("");
          } catch (const std::exception &) {
            throw polyk::UsageError("--check-param " + p + ": a positive integer expected");
          }
        }
        bindParams(program, runner.params);
        runner.programText = runner.params.empty() ? in.text : polyk::writeProgram(program);
        runner.programFile = in.displayName;
        polyk::Scop flat = polyk::flatten(polyk::readProgram(runner.programText, in.displayName));
        polyk::Space space;
        if (!t1Path.empty()) {
          std::ifstream f(t1Path, std::ios::binary);
          polyk::T1Problem t1 = polyk::readT1(std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()), t1Path,
                                              polyk::deriveSpace(flat));
          space = t1.space;
          if (search.trials == 0 && t1.trials > 0) search.trials = t1.trials;
          if (search.trials == 0 && t1.fraction > 0)
            search.trials = std::max(1LL, (long long)std::ceil(t1.fraction * (double)polyk::generateSpace(space).count));
          if (search.seconds == 0 && t1.seconds > 0) search.seconds = t1.seconds;
          if (searchOption->count() == 0 && !t1.search.empty()) search.strategy = t1.search;
        } else if (runner.fusionCovers > 0) {
          // A map's covers: the search's first K (fewer where it finds fewer), the best predicted the default.
          std::optional<polyk::MapPsi> psi;
          if (!runner.psi.empty()) psi = polyk::readPsi(runner.psi);
          polyk::MapSearchResult found = polyk::searchFusions(flat, 4, (size_t)runner.fusionCovers, psi ? &*psi : nullptr);
          space.name = flat.name;
          polyk::SpaceParam cover;
          cover.name = "schedule.cover";
          for (size_t i = 0; i < found.covers.size(); ++i) {
            cover.values.push_back((long long)i);
            runner.covers.push_back({polyk::coverText(found, i), polyk::coverSizes(found, i)});
          }
          cover.fallback = 0;
          space.params.push_back(cover);
        } else if (spacePath.empty()) {
          space = polyk::deriveSpace(flat);
        } else {
          std::ifstream f(spacePath, std::ios::binary);
          space = polyk::readSpace(std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()), spacePath);
        }
        if (runner.maxSpill >= 0 && runner.resources == "off") {
          if (resourcesOption->count()) throw polyk::UsageError("--max-spill needs NVRTC's report, and --resources is off");
          runner.resources = "nvrtc";
        }
        // (NVRTC is opened only where asked for.)
        if (std::string noNvrtc; runner.resources == "nvrtc" && !polyk::nvrtcAvailable(&noNvrtc))
          throw polyk::UsageError("--resources=nvrtc: " + noNvrtc);
        auto [device, arch] = polyk::runnerDevice(runner);
        std::string params;
        for (const auto &p : runner.params) params += (params.empty() ? "" : " ") + p;
        // (A cover's rank means another cover under another K or psi: they key the log too.)
        std::string logParams = params;
        if (runner.fusionCovers > 0)
          logParams += (logParams.empty() ? "" : " ") + std::string("fusion-search=") + std::to_string(runner.fusionCovers) + " psi=" + runner.psi;
        polyk::TuneLog log(logPath, {flat.name, hashOf(in.text), logParams, runner.kind, device, arch});
        if (log.dropped()) std::cerr << "polyk-tune: " << logPath << ": dropped a truncated last record (a run was stopped while writing it)\n";
        bool temporary = work.empty();
        if (temporary) {
          char tmpl[] = "/tmp/polyk-tune.XXXXXX";
          if (!::mkdtemp(tmpl)) throw polyk::UsageError("cannot create a work directory in /tmp");
          work = tmpl;
        }
        std::filesystem::create_directories(work);
        runner.workDir = work;
        polyk::TuneResult r;
        try {
          r = polyk::tune(space, log, runner, search, [](const std::string &line) { std::cerr << line << std::endl; });
        } catch (...) {
          if (temporary && !keep) std::filesystem::remove_all(work);
          throw;
        }
        if (temporary && !keep) std::filesystem::remove_all(work);
        if (r.best.index < 0) throw polyk::InputError({logPath}, "no configuration ran correctly (see the log's details)");
        polyk::SpaceModel model(space);
        polyk::Tuning t;
        t.program = flat.name;
        t.params = params;
        t.runner = runner.kind;
        t.device = device;
        t.arch = arch;
        t.config = r.best.key;
        std::vector<long long> best = model.parseKey(r.best.key, {logPath});
        t.sizes = polyk::sizesOf(space, best);
        polyk::StageOptions stage = polyk::stageOptionsOf(space, best);
        t.points = stage.points;
        t.prefetch = stage.prefetch;
        t.mma = stage.mma;
        t.shared = stage.shared;
        t.combine = stage.combine;
        t.unroll = stage.unroll;
        t.blocks = stage.blocks;
        if (stage.cover >= 0) std::tie(t.cover, t.sizes) = runner.covers.at((size_t)stage.cover);
        t.us = r.best.us;
        t.defaultUs = r.defaults.status == polyk::TrialStatus::Ok ? r.defaults.us : 0;
        t.trials = r.trials;
        t.trialsToBest = r.trialsToBest;
        t.secondsToBest = r.secondsToBest;
        t.spaceCount = r.spaceCount;
        t.generationS = r.generationS;
        char line[256];
        std::snprintf(line, sizeof line, "%s: best %.2f us (defaults %.2f us, %.3fx) at trial %lld of %lld; %s\n",
                      flat.name.c_str(), t.us, t.defaultUs, t.us > 0 && t.defaultUs > 0 ? t.defaultUs / t.us : 0.0,
                      t.trialsToBest, t.trials, r.stopped.c_str());
        std::cerr << line;
        return polyk::writeTuning(t);
      },
      {"--log", "--space", "--work", "--runtime", "--model", "--t1"}};
  spec.defaultTimeLimit = 0;
  return polyk::runTool(argc, argv, spec);
}

/// The logs of `train` / `report`: --log for the input program's, --also PROGRAM=LOG for others'.
std::vector<polyk::ModelData> readData(const polyk::ToolInput &in, const std::vector<std::string> &logs,
                                       const std::vector<std::string> &also) {
  std::vector<polyk::ModelData> out;
  for (const auto &l : logs) out.push_back(polyk::modelData(in.text, in.displayName, l));
  for (const auto &pl : also) {
    size_t eq = pl.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == pl.size()) throw polyk::UsageError("--also " + pl + ": PROGRAM.yaml=LOG.jsonl expected");
    std::string program = pl.substr(0, eq);
    std::ifstream f(program, std::ios::binary);
    if (!f) throw polyk::UsageError("--also: cannot read " + program);
    out.push_back(polyk::modelData(std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()), program,
                                   pl.substr(eq + 1)));
  }
  return out;
}

int trainCommand(int argc, char **argv) {
  std::vector<std::string> logs, also;
  int rounds = 300;
  return polyk::runTool(
      argc, argv,
      {"polyk-tune train",
       "Train the cost model (XGBoost's gradient-boosted trees on log time, from each configuration's analytical "
       "features) on the correct trials of tuning logs, all of one device; writes the model (-o), which "
       "polyk-tune run --search=model --model takes.",
       [&](CLI::App &app) {
         app.add_option("--log", logs, "a tuning log of the input program (repeatable)")->required();
         app.add_option("--also", also, "PROGRAM.yaml=LOG.jsonl: a log of another program (repeatable)");
         app.add_option("--rounds", rounds, "boosting rounds")->check(CLI::Range(1, 100000))->capture_default_str();
       },
       [&](const polyk::ToolInput &in, polyk::ExtraOutputs &) {
         std::vector<polyk::ModelData> data = readData(in, logs, also);
         std::vector<std::vector<double>> x;
         std::vector<double> us;
         for (const auto &d : data) {
           if (d.device != data.front().device)
             throw polyk::UsageError("the logs are of two devices ('" + data.front().device + "', '" + d.device +
                                     "'): a model is trained per device");
           x.insert(x.end(), d.x.begin(), d.x.end());
           us.insert(us.end(), d.us.begin(), d.us.end());
         }
         if (x.size() < 2) throw polyk::InputError({logs.front(), 1, 1}, "fewer than 2 correct trials to train on");
         polyk::CostModel m;
         m.train(x, us, rounds);
         std::vector<double> fit = m.predict(x);
         double se = 0;
         for (size_t i = 0; i < us.size(); ++i) se += std::pow(std::log(fit[i]) - std::log(us[i]), 2);
         std::fprintf(stderr, "polyk-tune train: %zu trials of %zu logs (%s); training error %.3f (rms of log time)\n", us.size(),
                      data.size(), data.front().device.c_str(), std::sqrt(se / (double)us.size()));
         return m.text(data.front().device);
       },
       {"--log", "--also"}});
}

int reportCommand(int argc, char **argv) {
  std::vector<std::string> logs, also;
  std::string modelPath, dir;
  return polyk::runTool(
      argc, argv,
      {"polyk-tune report",
       "Judge a cost model on tuning logs (CNNOpt's Table 8): per log, the trials in the model's order until 95% and "
       "100% of the best logged time, the loss of performance of its top-10 and top-30, and Spearman's rank "
       "correlation; --dir writes predicted.csv, best-so-far.csv and a gnuplot script of both (plots.gp).",
       [&](CLI::App &app) {
         app.add_option("--log", logs, "a tuning log of the input program (repeatable)")->required();
         app.add_option("--also", also, "PROGRAM.yaml=LOG.jsonl: a log of another program (repeatable)");
         app.add_option("--model", modelPath, "the cost model")->required()->check(CLI::ExistingFile);
         app.add_option("--dir", dir, "the report's directory (one subdirectory a log, by program)");
       },
       [&](const polyk::ToolInput &in, polyk::ExtraOutputs &) {
         std::string device;
         std::unique_ptr<polyk::CostModel> m = polyk::CostModel::load(modelPath, &device);
         std::string out;
         for (const auto &d : readData(in, logs, also)) {
           if (d.device != device) std::fprintf(stderr, "polyk-tune report: note: the model is of '%s', %s's log of '%s'\n",
                                                device.c_str(), d.program.c_str(), d.device.c_str());
           std::vector<double> predicted = m->predict(d.x);
           polyk::ModelReport r = polyk::judge(d, predicted, d.failedX.empty() ? std::vector<double>{} : m->predict(d.failedX));
           out += dir.empty() ? polyk::writeReport(d, predicted, r, "") : polyk::writeReport(d, predicted, r, dir + "/" + d.program);
         }
         return out;
       },
       {"--log", "--also", "--model", "--dir"}});
}

/// The program of the tuning log at `logPath` (the input, at the sizes the log was recorded with)
/// and its trials; an InputError where the log is of another program.
polyk::Program programOfLog(const polyk::ToolInput &in, const std::string &logPath, std::vector<polyk::Trial> &trials) {
  polyk::TuneLogHeader h;
  trials = polyk::readTuneLog(logPath, h);
  polyk::Program p = polyk::readProgram(in.text, in.displayName);
  if (p.name != h.program) throw polyk::InputError({logPath, 1, 1}, "this log is of program '" + h.program + "', not '" + p.name + "'");
  std::istringstream params(h.params);
  for (std::string nv; params >> nv;)
    for (auto &q : p.params)
      if (nv.rfind(q.first + "=", 0) == 0) q.second = std::stoll(nv.substr(q.first.size() + 1));
  return p;
}

int resourcesCommand(int argc, char **argv) {
  std::string logPath, spacePath, arch = "sm_90", runtime = POLYK_RUNTIME_DIR, determinism = "not_guaranteed";
  int jobs = 2;
  polyk::ToolSpec spec{"polyk-tune resources",
       "Each configuration of a tuning log compiled by NVRTC (the kernels only, no GPU needed), as polyk-tune run "
       "--resources=nvrtc checks them: CSV of the trial, its logged status and time, and its kernels' most registers "
       "and spilled bytes (NVRTC's ptxas report), to see which variants spill and what that cost.",
       [&](CLI::App &app) {
         app.add_option("--log", logPath, "the tuning log")->required()->check(CLI::ExistingFile);
         app.add_option("--space", spacePath, "the space the log searched (polyk-tune run --space); default: the derived one")
             ->check(CLI::ExistingFile);
         app.add_option("--arch", arch, "the GPU architecture NVRTC compiles for")->capture_default_str();
         app.add_option("-j,--jobs", jobs, "compiles at a time")->check(CLI::Range(1, 256))->capture_default_str();
         app.add_option("--determinism", determinism, "polyk-emit's --determinism")
             ->check(CLI::IsMember({"not_guaranteed", "run_to_run"}))
             ->capture_default_str();
         app.add_option("--runtime", runtime, "the directory holding polyk/runtime.cuh")->capture_default_str();
       },
       [&](const polyk::ToolInput &in, polyk::ExtraOutputs &) {
         std::string why;
         if (!polyk::nvrtcAvailable(&why)) throw polyk::UsageError(why);
         std::vector<polyk::Trial> trials;
         std::string programText = polyk::writeProgram(programOfLog(in, logPath, trials));
         polyk::Scop flat = polyk::flatten(polyk::readProgram(programText, in.displayName));
         std::string flatText = polyk::writeScop(flat);
         polyk::Space space;
         if (spacePath.empty()) {
           space = polyk::deriveSpace(flat);
         } else {
           std::ifstream f(spacePath, std::ios::binary);
           space = polyk::readSpace(std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()), spacePath);
         }
         polyk::SpaceModel model(space);
         polyk::RunnerOptions o;
         o.arch = arch;
         o.runtimeDir = runtime;
         o.determinism = determinism;
         std::vector<polyk::Trial> got(trials.size());
         std::atomic<size_t> next{0};
         auto worker = [&] {
           polyk::IslThreadContext isl;
           polyk::Scop mine = polyk::readScop(flatText, "scop");
           for (size_t i; (i = next++) < trials.size();) {
             polyk::Trial &t = got[i];
             try {
               std::vector<long long> v = model.parseKey(trials[i].key, {logPath}, true);
               std::string broken = model.complete(v);
               if (!broken.empty()) {
                 t.detail = "violates " + broken;
                 continue;
               }
               polyk::checkResources(polyk::variantSource(mine, model, v, o, true, false), o, t);
             } catch (const std::exception &e) {
               t.detail = e.what();
             }
           }
         };
         std::vector<std::thread> pool;
         for (int j = 0; j < jobs; ++j) pool.emplace_back(worker);
         for (auto &t : pool) t.join();
         std::string out = "trial,status,us,registers,spill_bytes,config,detail\n";
         auto csv = [](std::string s) {
           for (char &c : s)
             if (c == '"' || c == '\n') c = '\'';
           return "\"" + s + "\"";
         };
         for (size_t i = 0; i < trials.size(); ++i) {
           char us[32];
           std::snprintf(us, sizeof us, "%.2f", trials[i].us);
           out += std::to_string(trials[i].index) + "," + polyk::statusName(trials[i].status) + "," + us + "," +
                  (got[i].registers >= 0 ? std::to_string(got[i].registers) : "") + "," +
                  (got[i].spillBytes >= 0 ? std::to_string(got[i].spillBytes) : "") + "," + csv(trials[i].key) + "," +
                  csv(got[i].detail) + "\n";
         }
         return out;
       },
       {"--log", "--space", "--runtime"}};
  spec.defaultTimeLimit = 0;
  return polyk::runTool(argc, argv, spec);
}

} // namespace

int main(int argc, char **argv) {
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::printf("polyk-tune: the search space of a program's sizes (MDH + ATF).\n"
                "  polyk-tune space PROGRAM.yaml [-o space.yaml]   derive the space (space/1), which a user may edit\n"
                "  polyk-tune generate SPACE.yaml [--list N]       count its valid configurations (ATF's chain of\n"
                "                                                  trees), report the generation time, list the first N\n"
                "  polyk-tune run PROGRAM.yaml --log LOG.jsonl     search the space: each configuration built, compiled,\n"
                "                                                  run and checked; the log resumes after any stop;\n"
                "                                                  -o best.yaml (tuning/1) for polyk-schedule --tuning\n"
                "  polyk-tune train PROGRAM.yaml --log LOG.jsonl   train the cost model on logged trials (one device)\n"
                "  polyk-tune export PROGRAM.yaml --log LOG.jsonl  the log as T4 results (Kernel Tuner's JSON)\n"
                "  polyk-tune space PROGRAM.yaml --format t1       the space as a T1 problem; run --t1 reads one\n"
                "  polyk-tune report PROGRAM.yaml --log LOG.jsonl --model MODEL\n"
                "                                                  how well the model ranks the logged trials\n"
                "  polyk-tune resources PROGRAM.yaml --log LOG.jsonl\n"
                "                                                  each logged variant's registers and spills (NVRTC)\n");
    return 0;
  }
  if (argc >= 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("polyk-tune %s\n", POLYK_VERSION);
    return 0;
  }
  if (argc < 2) return usage();
  std::string sub = argv[1];
  if (sub == "space") {
    std::string format = "space", t1Path;
    std::vector<std::string> params;
    return polyk::runTool(argc - 1, argv + 1,
                          {"polyk-tune space",
                           "Derive the search space of a program (program/1 -> space/1): tile and block sizes per band "
                           "member, reduced tiles, vector widths, with the constraints linking them; or (--format t1) "
                           "as a T1 tuning problem (Kernel Tuner's JSON), which polyk-tune run --t1 reads back.",
                           [&](CLI::App &app) {
                             app.add_option("--format", format, "space (space/1) or t1 (T1 JSON: names with '_' for '.')")
                                 ->check(CLI::IsMember({"space", "t1"}))
                                 ->capture_default_str();
                             app.add_option("--t1", t1Path, "a T1 problem over the program's space: its values and conditions "
                                                            "replace the derived ones")
                                 ->check(CLI::ExistingFile);
                             app.add_option("--param", params, "NAME=VALUE: a symbolic size's value (repeatable), as "
                                                               "polyk-tune run --param derives its space");
                           },
                           [&](const polyk::ToolInput &in, polyk::ExtraOutputs &) {
                             polyk::Program program = polyk::readProgram(in.text, in.displayName);
                             bindParams(program, params);
                             polyk::Space s = polyk::deriveSpace(polyk::flatten(
                                 params.empty() ? program : polyk::readProgram(polyk::writeProgram(program), in.displayName)));
                             if (!t1Path.empty()) {
                               std::ifstream f(t1Path, std::ios::binary);
                               s = polyk::readT1(std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()),
                                                 t1Path, s).space;
                             }
                             return format == "t1" ? polyk::writeT1(s, in.name) : polyk::writeSpace(s);
                           },
                           {"--t1"}});
  }
  if (sub == "export") {
    std::string logPath;
    return polyk::runTool(argc - 1, argv + 1,
                          {"polyk-tune export",
                           "Write a tuning log's trials as T4 results (Kernel Tuner's JSON: each configuration's values, "
                           "time and validity).",
                           [&](CLI::App &app) { app.add_option("--log", logPath, "the tuning log")->required(); },
                           [&](const polyk::ToolInput &in, polyk::ExtraOutputs &) {
                             std::vector<polyk::Trial> trials;
                             polyk::Program p = programOfLog(in, logPath, trials);
                             polyk::Space s = polyk::deriveSpace(polyk::flatten(polyk::readProgram(polyk::writeProgram(p), in.displayName)));
                             return polyk::writeT4(s, trials);
                           },
                           {"--log"}});
  }
  if (sub == "generate") {
    long long list = 0;
    bool random = false;
    unsigned seed = 1;
    return polyk::runTool(argc - 1, argv + 1,
                          {"polyk-tune generate",
                           "Generate a space's valid configurations as ATF does (one tree per group of linked "
                           "parameters, each constraint checked as soon as its parameters are bound): prints the "
                           "space's size and generation time, and the first --list configurations as sizes maps.",
                           [&](CLI::App &app) {
                             app.add_option("--list", list, "print the first N configurations as --sizes maps (and --points / --prefetch where the space has them)")
                                 ->check(CLI::Range(0LL, 1000000LL));
                             app.add_flag("--random", random, "draw the --list configurations uniformly at random instead");
                             app.add_option("--seed", seed, "the seed of --random")->capture_default_str();
                           },
                           [&](const polyk::ToolInput &in, polyk::ExtraOutputs &) {
                             polyk::Space s = polyk::readSpace(in.text, in.displayName);
                             polyk::Generated g = polyk::generateSpace(s, list, random, seed);
                             std::ostringstream o;
                             o << "space " << s.name << ": " << g.count << " configurations, " << g.groupCounts.size()
                               << " trees (";
                             for (size_t i = 0; i < g.groupCounts.size(); ++i) o << (i ? " x " : "") << g.groupCounts[i];
                             char t[32];
                             std::snprintf(t, sizeof t, "%.3f", g.seconds);
                             o << "), generated in " << t << " s; the defaults "
                               << (g.defaultViolates.empty() ? "are one of them" : "violate " + g.defaultViolates) << "\n";
                             for (const auto &c : g.first) {
                               std::string sizes = polyk::sizesOf(s, c);
                               if (sizes == "{  }") { // no kernel's sizes among them: name=value
                                 sizes.clear();
                                 for (size_t i = 0; i < c.size(); ++i)
                                   sizes += (i ? " " : "") + s.params[i].name + "=" + std::to_string(c[i]);
                               }
                               // The stage options, where the space has them.
                               bool stage = false;
                               for (const auto &p : s.params) stage = stage || polyk::isStageOption(p.name);
                               if (stage) {
                                 polyk::StageOptions so = polyk::stageOptionsOf(s, c);
                                 sizes += " --points=" + so.points + " --prefetch=" + so.prefetch + (so.mma != "off" ? " --mma=" + so.mma : "") +
                                          (so.shared != "auto" ? " --shared=" + so.shared : "") + (so.combine != "auto" ? " --combine=" + so.combine : "") + (so.unroll != "1" ? " --unroll=" + so.unroll : "") +
                                          (so.blocks != "0" ? " --blocks-per-sm=" + so.blocks : "");
                               }
                               o << sizes << "\n";
                             }
                             return o.str();
                           }});
  }
  if (sub == "run") return runCommand(argc - 1, argv + 1);
  if (sub == "train") return trainCommand(argc - 1, argv + 1);
  if (sub == "report") return reportCommand(argc - 1, argv + 1);
  if (sub == "resources") return resourcesCommand(argc - 1, argv + 1);
  std::fprintf(stderr, "polyk-tune: error: unknown command '%s'\n", sub.c_str());
  return usage();
}
