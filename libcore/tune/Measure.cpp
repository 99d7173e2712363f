// polyk-tune's runners: a configuration through the four stages (in this process, through their
// file formats, as the command-line pipeline goes), compiled by cc or nvcc, run with the emitted
// harness, which checks the result against the sequential reference and times the kernels.
//   cpu:  --target=c-mapped, the kernels' code block by block on this machine (the stand-in that
//         lets CI test the tuning log without a GPU); processor time of the one call.
//   cuda: the CUDA harness (events, warm-up, L2 flushed, median of --reps).
#include "polyk/Bind.h"
#include "polyk/Emit.h"
#include "polyk/Flatten.h"
#include "polyk/Isl.h"
#include "polyk/Nvrtc.h"
#include "polyk/Program.h"
#include "polyk/Schedule.h"
#include "polyk/TuneRun.h"

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace polyk {

namespace {

std::string quote(const std::string &s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

struct Ran {
  int rc = 0;
  bool timedOut = false;
  std::string output;
};

/// `cmd` through sh, stdout and stderr together, killed after `seconds`.
Ran shell(const std::string &cmd, double seconds) {
  char t[32];
  std::snprintf(t, sizeof t, "%.0f", seconds < 1 ? 1.0 : seconds);
  std::string full = "timeout -s KILL " + std::string(t) + " sh -c " + quote(cmd) + " 2>&1";
  Ran r;
  FILE *p = ::popen(full.c_str(), "r");
  if (!p) {
    r.rc = -1;
    r.output = "cannot start: " + cmd;
    return r;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    if (r.output.size() < (1u << 20)) r.output.append(buf, n);
  int st = ::pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  r.timedOut = r.rc == 137 || r.rc == 124;
  return r;
}

std::string firstLine(const std::string &s) {
  size_t b = s.find_first_not_of(" \n");
  if (b == std::string::npos) return "";
  size_t e = s.find('\n', b);
  std::string l = s.substr(b, e == std::string::npos ? std::string::npos : e - b);
  return l.size() > 300 ? l.substr(0, 300) + "..." : l;
}

/// The harness's result line: PASS / FAIL / UNCHECKED name ... <field>=<us>.
bool resultLine(const std::string &out, const std::string &field, bool &pass, double &us) {
  std::istringstream in(out);
  std::string l;
  while (std::getline(in, l)) {
    bool p = l.rfind("PASS ", 0) == 0, f = l.rfind("FAIL ", 0) == 0, u = l.rfind("UNCHECKED ", 0) == 0;
    if (!p && !f && !u) continue;
    pass = p || u;
    size_t at = l.find(" " + field + "=");
    us = at == std::string::npos ? 0 : std::atof(l.c_str() + at + field.size() + 2);
    return true;
  }
  return false;
}

std::string params(const RunnerOptions &o) {
  std::string s;
  for (const auto &p : o.params) s += " " + quote(p);
  return s;
}

/// The check run's sizes: `params` then `checkParams` (the harness takes a name's last value).
std::string checkParams(const RunnerOptions &o) {
  std::string s = params(o);
  for (const auto &p : o.checkParams) s += " " + quote(p);
  return s;
}

} // namespace

std::pair<std::string, std::string> runnerDevice(const RunnerOptions &o) {
  if (o.kind == "cuda") {
    Ran r = shell("nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader -i 0", 30);
    if (r.rc != 0 || r.output.empty()) throw UsageError("the cuda runner needs a GPU: nvidia-smi says: " + firstLine(r.output));
    std::string l = firstLine(r.output);
    size_t comma = l.rfind(", ");
    std::string cap = comma == std::string::npos ? "" : l.substr(comma + 2);
    cap.erase(std::remove(cap.begin(), cap.end(), '.'), cap.end());
    return {l.substr(0, comma), "sm_" + cap};
  }
  std::string model = "unknown processor";
  std::ifstream in("/proc/cpuinfo");
  for (std::string l; std::getline(in, l);)
    if (l.rfind("model name", 0) == 0 && l.find(':') != std::string::npos) {
      model = l.substr(l.find(':') + 2);
      break;
    }
  struct utsname u {};
  ::uname(&u);
  return {"cpu: " + model, u.machine};
}

std::string variantSource(const Scop &flat, const SpaceModel &model, const std::vector<long long> &v, const RunnerOptions &o,
                          bool cuda, bool harness) {
  ScheduleOptions so;
  so.sizes = sizesOf(model.space(), v);
  StageOptions stage = stageOptionsOf(model.space(), v);
  if (stage.cover >= 0) {
    // A map's cover: the search's (found once, RunnerOptions::covers), as polyk-schedule
    // --fusion=search --fusion-rank builds it.
    so.fusion = "shared";
    so.cover = o.covers.at((size_t)stage.cover).first;
    so.sizes = o.covers.at((size_t)stage.cover).second;
  }
  Scop sched = readSchedule(writeSchedule(schedule(flat, so)), "schedule");
  BindOptions bo;
  bo.points = stage.points;
  bo.shared = stage.shared;
  Scop bound = readBound(writeBound(bind(sched, bo)), "bound");
  EmitOptions eo;
  eo.prefetch = stage.prefetch;
  eo.combine = stage.combine;
  eo.unroll = std::stoi(stage.unroll);
  eo.blocksPerSm = std::stoi(stage.blocks);
  eo.mma = stage.mma;
  eo.target = cuda ? EmitOptions::Target::Cuda : EmitOptions::Target::MappedC;
  eo.harness = harness;
  eo.determinism = o.determinism;
  return emit(bound, eo).code;
}

bool checkResources(const std::string &cuda, const RunnerOptions &o, Trial &t) {
  DeviceCompile c = nvrtcCompile(deviceSource(cuda), o.arch, {o.runtimeDir}, "variant.cu");
  if (!c.ok) {
    t.status = TrialStatus::CompileError;
    // NVRTC's first error line (its log starts with the result code).
    std::istringstream in(c.log);
    std::string l, first;
    while (std::getline(in, l))
      if (l.find("error") != std::string::npos) {
        first = l;
        break;
      }
    t.detail = "NVRTC: " + (first.empty() ? firstLine(c.log) : first);
    return false;
  }
  if (c.kernels.empty()) {
    // No ptxas report in NVRTC's log (a compute-cache hit: Nvrtc.cpp turns the cache off): the
    // resources stay unknown and nothing is pruned.
    t.registers = -1;
    t.spillBytes = -1;
    return true;
  }
  const KernelResources *worst = nullptr;
  t.registers = 0;
  t.spillBytes = 0;
  for (const auto &k : c.kernels) {
    t.registers = std::max(t.registers, k.registers);
    if (!worst || k.spillStores > worst->spillStores) worst = &k;
  }
  if (worst) t.spillBytes = worst->spillStores;
  if (o.maxSpill >= 0 && worst && worst->spillStores > o.maxSpill) {
    t.status = TrialStatus::Violated;
    t.detail = "spills: " + worst->name + " stores " + std::to_string(worst->spillStores) + " bytes to local memory (" +
               std::to_string(worst->registers) + " registers; NVRTC), more than --max-spill " + std::to_string(o.maxSpill);
    return false;
  }
  return true;
}

void measure(const SpaceModel &model, const std::vector<std::vector<long long>> &configs, const RunnerOptions &o,
             double bestUs, const std::function<void(size_t, Trial)> &done, const std::function<bool()> &expired) {
  bool cuda = o.kind == "cuda";
  size_t n = configs.size();
  std::vector<Trial> trials(n);
  std::vector<std::string> sources(n), bins(n);
  // The program flattened once (the tool has read it: no error here); its text goes to the workers.
  Scop flat = flatten(readProgram(o.programText, o.programFile));
  std::vector<bool> valid(n, false);
  std::vector<std::vector<long long>> full(n); // completed: derived parameters filled in
  for (size_t i = 0; i < n; ++i) {
    std::vector<long long> &v = full[i] = configs[i];
    trials[i].key = model.key(v);
    std::string broken = model.complete(v);
    // (polyk-emit refuses atomics under run_to_run: such a configuration never builds.)
    if (broken.empty() && o.determinism == "run_to_run" && stageOptionsOf(model.space(), v).combine == "atomic")
      broken = "emit.combine == 0 (atomics under --determinism=run_to_run)";
    if (!broken.empty()) {
      trials[i].status = TrialStatus::Violated;
      trials[i].detail = "violates " + broken;
      continue;
    }
    valid[i] = true;
    std::string base = o.workDir + "/v" + std::to_string(i);
    sources[i] = base + (cuda ? ".cu" : ".c");
    bins[i] = base;
  }
  std::string flatText = writeScop(flat);
  // Each variant through the stages and the compiler, `jobs` at a time: each worker with an isl
  // context of its own (the stages took 1.5 to 2.4 s a GEMM variant, one after another, before:
  // 32 of them outlasted their compiles). A variant's runs may start once it is compiled
  // (`compiled`), while later ones still compile.
  std::mutex compileLock;
  std::condition_variable compiledCv;
  std::vector<bool> compiled(n, false);
  auto build = [&](size_t i) {
    try {
      IslThreadContext isl;
      Scop mine = readScop(flatText, "scop");
      std::string code = variantSource(mine, model, full[i], o, cuda, true);
      // NVRTC first, where asked (the CPU stand-in's variants emitted as CUDA for it): a variant
      // that fails there or spills past the limit is not built.
      if (o.resources == "nvrtc" && !checkResources(cuda ? code : variantSource(mine, model, full[i], o, true, false), o, trials[i]))
        return false;
      std::ofstream(sources[i]) << code;
    } catch (const InputError &e) {
      trials[i].status = TrialStatus::CompileError;
      trials[i].detail = formatDiagnostic(e.loc(), e.what());
      return false;
    } catch (const std::exception &e) {
      trials[i].status = TrialStatus::CompileError;
      trials[i].detail = e.what();
      return false;
    }
    return true;
  };
  std::atomic<size_t> nextCompile{0};
  std::atomic<bool> stopCompiles{false};
  auto worker = [&] {
    for (size_t i; !stopCompiles && (i = nextCompile++) < n;) {
      bool ok = valid[i] && build(i);
      if (ok) {
        std::string cc = !o.compiler.empty() ? o.compiler : cuda ? "nvcc" : "cc";
        std::string cmd = cuda ? cc + " -std=c++17 -O3 -arch=" + o.arch + " -I" + quote(o.runtimeDir) + " " + quote(sources[i]) + " -o " + quote(bins[i])
                               : cc + " -std=c99 -O2 -I" + quote(o.runtimeDir) + " " + quote(sources[i]) + " -o " + quote(bins[i]) + " -lm";
        Ran r = shell(cmd, o.timeoutS * 4);
        if (r.rc != 0) {
          trials[i].status = r.timedOut ? TrialStatus::Timeout : TrialStatus::CompileError;
          trials[i].detail = r.timedOut ? "compiling took more than " + std::to_string((int)(o.timeoutS * 4)) + " s" : firstLine(r.output);
          ok = false;
        }
      }
      std::lock_guard<std::mutex> hold(compileLock);
      if (!ok) {
        if (valid[i]) std::remove(sources[i].c_str());
        sources[i].clear();
        bins[i].clear();
      }
      compiled[i] = true;
      compiledCv.notify_all();
    }
  };
  std::vector<std::thread> pool;
  for (int j = 0; j < std::max(1, o.jobs); ++j) pool.emplace_back(worker);
  // (The runs below wait for each variant's compile; past `expired`, no new compile starts.)
  auto awaitCompiled = [&](size_t i) {
    std::unique_lock<std::mutex> hold(compileLock);
    compiledCv.wait(hold, [&] { return (bool)compiled[i]; });
  };
  // Run one at a time, or one per GPU of o.gpus at once.
  std::string field = cuda ? "median_us" : "time_us";
  std::string seed = std::to_string(o.seed);
  auto run = [&](size_t i, const std::string &env) {
    awaitCompiled(i);
    Trial &t = trials[i];
    if (sources[i].empty() || bins[i].empty()) return;
    auto once = [&](const std::string &args, const std::string &sizes) {
      Ran r = shell(env + quote(bins[i]) + " " + args + sizes, o.timeoutS);
      bool pass = false;
      double us = 0;
      if (r.timedOut) {
        t.status = TrialStatus::Timeout;
        t.detail = "ran more than " + std::to_string((int)o.timeoutS) + " s";
      } else if (!resultLine(r.output, field, pass, us) || (r.rc != 0 && r.rc != 1)) {
        t.status = TrialStatus::RuntimeError;
        t.detail = "exit " + std::to_string(r.rc) + ": " + firstLine(r.output);
      } else if (!pass) {
        t.status = TrialStatus::Wrong;
        t.detail = firstLine(r.output);
      } else {
        t.status = TrialStatus::Ok;
        t.us = us;
      }
      return t.status == TrialStatus::Ok;
    };
    // One process: checked (the reference computed by the first variant, then read from the
    // cache), then timed; a cuda variant whose first 3 timed runs are >= 5x the best stops there.
    // With check sizes: checked there first (one run), then timed unchecked.
    std::string ref = " ref=" + quote(o.workDir + "/reference");
    bool separate = !o.checkParams.empty();
    if (separate && !once(seed + (cuda ? " 1" : "") + ref, checkParams(o))) {
      t.detail = "at " + checkParams(o).substr(1) + ": " + t.detail;
    } else if (!cuda) {
      once(seed + (separate ? " check=0" : ref), params(o));
    } else if (once(seed + " " + std::to_string(o.reps) + (separate ? " check=0" : ref) +
                        (bestUs > 0 ? " stop_us=" + std::to_string(5 * bestUs) : ""),
                    params(o)) &&
               bestUs > 0 && t.us >= 5 * bestUs) {
      t.status = TrialStatus::Slow;
      t.detail = "first runs >= 5x the best so far";
    }
  };
  auto on = [&](size_t g) { return o.gpus.empty() ? std::string() : "CUDA_VISIBLE_DEVICES=" + std::to_string(o.gpus[g]) + " "; };
  // Trials are reported in order: a trial that ends before an earlier one waits for it. Workers
  // take the next configuration until `expired` says so (a batch runs at least one), so the ones
  // taken are always a prefix.
  std::mutex lock;
  std::vector<bool> ended(n, false);
  size_t reported = 0;
  auto finish = [&](size_t i) {
    std::lock_guard<std::mutex> hold(lock);
    ended[i] = true;
    for (; reported < n && ended[reported]; ++reported) done(reported, trials[reported]);
  };
  std::atomic<size_t> next{0};
  size_t first = 0;
  // The first variant that runs writes the reference cache: alone, before any other starts.
  bool cached = false;
  std::error_code ec;
  for (const auto &e : std::filesystem::directory_iterator(o.workDir, ec))
    cached = cached || e.path().filename().string().rfind("reference.", 0) == 0;
  for (; !cached && first < n && (awaitCompiled(first), sources[first].empty() || bins[first].empty()); ++first) finish(first);
  if (!cached && first < n) {
    run(first, on(0));
    finish(first);
  }
  next = cached ? 0 : first + 1;
  auto runner = [&](size_t g) {
    for (size_t i; (i = next++) < n;) {
      if (i > 0 && expired && expired()) break;
      run(i, on(g));
      finish(i);
    }
  };
  std::vector<std::thread> gpus;
  for (size_t g = 0; g < std::max<size_t>(1, o.gpus.size()); ++g) gpus.emplace_back(runner, g);
  for (auto &t : gpus) t.join();
  stopCompiles = true;
  for (auto &t : pool) t.join();
  for (size_t i = 0; i < n; ++i) {
    if (!bins[i].empty()) std::remove(bins[i].c_str());
    if (!sources[i].empty()) std::remove(sources[i].c_str());
  }
}

} // namespace polyk
