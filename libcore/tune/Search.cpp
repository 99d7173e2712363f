// polyk-tune's searches over a space's valid configurations: exhaustive (ATF's tree order),
// random (uniform, as `generate --random` draws), simulated annealing (a neighbour moves one
// parameter to an adjacent value), and the cost model's order (the space, or a sample of it, ranked
// by predicted time: CNNOpt's top-n). The defaults are always the first trial, so the best is
// never slower than them. See polyk/TuneRun.h.
#include "polyk/TuneRun.h"

#include "polyk/Flatten.h"
#include "polyk/Program.h"
#include "polyk/Sizes.h"
#include "polyk/TuneModel.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <chrono>
#include <cmath>
#include <random>

namespace polyk {

SpaceModel::SpaceModel(const Space &s) : s_(s) {
  std::vector<std::string> names;
  for (const auto &p : s.params) names.push_back(p.name);
  exprOf_.assign(s.params.size(), -1);
  for (size_t i = 0; i < s.params.size(); ++i)
    if (!s.params[i].expr.empty()) {
      exprOf_[i] = (int)exprs_.size();
      exprs_.emplace_back(s.params[i].expr, std::vector<std::string>(names.begin(), names.begin() + (long)i), s.params[i].at);
    }
  for (size_t c = 0; c < s.constraints.size(); ++c)
    cons_.emplace_back(s.constraints[c], names, c < s.constraintsAt.size() ? s.constraintsAt[c] : SourceLoc{});
}

std::string SpaceModel::complete(std::vector<long long> &v) const {
  v.resize(s_.params.size(), 0);
  for (size_t i = 0; i < v.size(); ++i) {
    if (exprOf_[i] >= 0) {
      bool ok = true;
      v[i] = exprs_[(size_t)exprOf_[i]].eval(v, ok);
      if (!ok) return s_.params[i].name + " = " + s_.params[i].expr + " (its value overflows or divides by 0)";
    } else if (std::find(s_.params[i].values.begin(), s_.params[i].values.end(), v[i]) == s_.params[i].values.end()) {
      return s_.params[i].name + " takes one of its values";
    }
  }
  for (size_t c = 0; c < cons_.size(); ++c) {
    bool ok = true;
    if (cons_[c].eval(v, ok) == 0 || !ok) return s_.constraints[c];
  }
  return "";
}

std::vector<long long> SpaceModel::defaults() const {
  std::vector<long long> v;
  for (const auto &p : s_.params) v.push_back(p.fallback);
  complete(v);
  return v;
}

std::string SpaceModel::key(const std::vector<long long> &v) const {
  std::string k;
  for (size_t i = 0; i < s_.params.size() && i < v.size(); ++i)
    k += (i ? " " : "") + s_.params[i].name + "=" + std::to_string(v[i]);
  return k;
}

bool addedValue(const std::string &name, long long &value) {
  auto kernelParam = [&](const std::string &kind) {
    size_t dot = name.find('.');
    return name.size() > 1 && name[0] == 'k' && dot != std::string::npos && name.substr(dot + 1) == kind &&
           name.find_first_not_of("0123456789", 1) == dot;
  };
  if (name == "emit.mma" || name == "emit.combine") return value = 0, true;
  if (name == "bind.shared") return value = 1, true;
  if (name == "emit.unroll") return value = 1, true; // (session 24: none before)
  if (name == "emit.blocks") return value = 0, true; // (session 26: none before)
  if (kernelParam("split")) return value = 1, true;
  if (kernelParam("vector")) return value = 1, true; // (a streamed stencil's, session 23: none before)
  if (kernelParam("shared")) return value = kStaticShared, true;
  return false;
}

std::vector<long long> SpaceModel::parseKey(const std::string &key, const SourceLoc &at, bool logged) const {
  std::vector<long long> v(s_.params.size(), 0);
  std::vector<bool> seen(v.size(), false);
  size_t pos = 0;
  while (pos < key.size()) {
    size_t end = key.find(' ', pos);
    std::string item = key.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? key.size() : end + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string name = item.substr(0, eq);
    size_t i = 0;
    while (i < s_.params.size() && s_.params[i].name != name) ++i;
    // (A logged parameter that polyk-tune added and this space no longer lists, as emit.mma where no
    // configuration can take the tensor cores: its trials built this space's kernel.)
    long long ignored = 0;
    if (logged && eq != std::string::npos && i == s_.params.size() && addedValue(name, ignored)) continue;
    if (eq == std::string::npos || i == s_.params.size()) fail(at, "'" + item + "' names no parameter of the space");
    try {
      size_t used = 0;
      v[i] = std::stoll(item.substr(eq + 1), &used);
      if (used != item.size() - eq - 1) throw std::invalid_argument("");
    } catch (const std::exception &) {
      fail(at, "'" + item + "' does not give an integer");
    }
    seen[i] = true;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    if (seen[i] || !s_.params[i].expr.empty()) continue;
    if (logged && addedValue(s_.params[i].name, v[i])) continue;
    fail(at, "the configuration gives no value of " + s_.params[i].name);
  }
  return v;
}

namespace {

/// The strategies' next configurations, skipping those `taken` (logged or already proposed).
class Proposer {
public:
  Proposer(const SpaceModel &m, const SearchOptions &o, long long count) : m_(m), o_(o), count_(count), rng_(o.seed) {}

  std::vector<std::vector<long long>> next(size_t n, const std::set<std::string> &taken, const std::vector<long long> &state) {
    std::vector<std::vector<long long>> out;
    std::set<std::string> mine;
    auto fresh = [&](const std::vector<long long> &v) {
      std::string k = m_.key(v);
      if (taken.count(k) || mine.count(k)) return false;
      mine.insert(k);
      out.push_back(v);
      return true;
    };
    if (o_.strategy == "anneal" && !state.empty()) {
      for (int tries = 0; out.size() < n && tries < 400; ++tries) {
        std::vector<long long> v = state;
        neighbour(v);
        if (m_.complete(v).empty()) fresh(v);
      }
      if (out.size() == n) return out; // else some random ones fill the batch
    }
    if (o_.strategy == "exhaustive" || o_.strategy == "model") {
      while (out.size() < n && pos_ < (long long)listed().size()) fresh(listed()[(size_t)pos_++]);
      return out;
    }
    // random (and annealing's fallback): uniform draws, a prefix of one seeded stream
    while (out.size() < n) {
      if (pos_ >= (long long)drawn_.size()) {
        if ((long long)drawn_.size() >= std::max(64 * count_, 1LL << 16) || count_ == 0) break; // all tried, surely
        drawn_ = generateSpace(m_.space(), std::max<long long>(4096, 2 * (long long)drawn_.size()), true, o_.seed).first;
      }
      if (pos_ < (long long)drawn_.size()) fresh(drawn_[(size_t)pos_++]);
    }
    return out;
  }

  /// Metropolis on log time: the temperature falls with the trials.
  bool accept(double us, double stateUs, long long k) {
    if (us <= stateUs) return true;
    double temp = 0.2 * std::pow(0.97, (double)k) + 1e-3;
    return std::uniform_real_distribution<double>(0, 1)(rng_) < std::exp(-(std::log(us) - std::log(stateUs)) / temp);
  }

private:
  const SpaceModel &m_;
  SearchOptions o_;
  long long count_;
  std::mt19937_64 rng_;
  std::vector<std::vector<long long>> drawn_, listed_;
  long long pos_ = 0;
  bool haveListed_ = false;

public:
  /// The model's order: configurations best predicted first (the model strategy's list).
  void rank(std::vector<std::vector<long long>> ranked) {
    listed_ = std::move(ranked);
    haveListed_ = true;
  }

private:
  const std::vector<std::vector<long long>> &listed() {
    if (!haveListed_) {
      long long cap = o_.trials > 0 ? std::min(count_, o_.trials + 1) : count_;
      listed_ = generateSpace(m_.space(), std::min<long long>(cap, 1LL << 22)).first;
      haveListed_ = true;
    }
    return listed_;
  }

  void neighbour(std::vector<long long> &v) {
    std::vector<size_t> free;
    for (size_t i = 0; i < m_.space().params.size(); ++i)
      if (m_.space().params[i].values.size() > 1) free.push_back(i);
    if (free.empty()) return;
    size_t moves = 1 + rng_() % 2;
    for (size_t k = 0; k < moves; ++k) {
      size_t p = free[rng_() % free.size()];
      const auto &vals = m_.space().params[p].values;
      auto it = std::find(vals.begin(), vals.end(), v[p]);
      long long at = it == vals.end() ? (long long)(rng_() % vals.size()) : it - vals.begin();
      at += (rng_() % 2) ? 1 : -1;
      v[p] = vals[(size_t)std::clamp<long long>(at, 0, (long long)vals.size() - 1)];
    }
  }
};

} // namespace

static std::vector<std::vector<long long>> rankByModel(const Space &space, const std::vector<long long> &defaults, long long count,
                                                const SearchOptions &search, const RunnerOptions &runner,
                                                const std::function<void(const std::string &)> &progress) {
  std::string device;
  std::unique_ptr<CostModel> cost = CostModel::load(search.model, &device);
  if (device != runnerDevice(runner).first)
    progress("model: note: trained on '" + device + "', ranking for '" + runnerDevice(runner).first + "'");
  std::vector<KernelShape> shapes = kernelShapes(flatten(readProgram(runner.programText, runner.programFile)));
  bool all = count <= search.candidates;
  std::vector<std::vector<long long>> configs = generateSpace(space, all ? count : search.candidates, !all, search.seed).first;
  // The stage options no feature describes (Features.cpp) rank as ties, so the model's first
  // picks took them at random: conv R1's, Y8's and R4's ranked trials ran 1.5-16x slower than the
  // defaults with bind.shared off or emit.unroll 8 (H200, bench/results/2026-11-28-h200-tune-blocks).
  // They keep their defaults here (emit.blocks is tried beside the defaults and each best: tune()).
  std::vector<size_t> unseen;
  for (size_t p = 0; p < space.params.size(); ++p)
    if (space.params[p].expr.empty() && isStageOption(space.params[p].name) && !featuresDescribe(space.params[p].name))
      unseen.push_back(p);
  std::set<std::vector<long long>> seen;
  std::vector<std::vector<long long>> kept;
  for (auto &c : configs) {
    for (size_t p : unseen) c[p] = defaults[p];
    if (seen.insert(c).second) kept.push_back(std::move(c));
  }
  if (kept.size() < configs.size())
    progress("model: " + std::to_string(configs.size()) + " configurations drawn; " + std::to_string(kept.size()) +
             " with the options no feature describes (emit.unroll, emit.blocks, bind.shared, emit.combine) at their defaults");
  configs = std::move(kept);
  std::vector<std::vector<double>> x;
  for (const auto &c : configs) x.push_back(features(shapes, space, c));
  std::vector<double> predicted = cost->predict(x);
  std::vector<size_t> order(configs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return predicted[a] < predicted[b]; });
  std::vector<std::vector<long long>> ranked;
  for (size_t i : order) ranked.push_back(configs[i]);
  return ranked;
}

TuneResult tune(const Space &space, TuneLog &log, const RunnerOptions &runner, const SearchOptions &search,
                const std::function<void(const std::string &)> &progress) {
  if (search.strategy != "exhaustive" && search.strategy != "random" && search.strategy != "anneal" && search.strategy != "model")
    throw UsageError("unknown search '" + search.strategy + "' (exhaustive, random, anneal or model)");
  if (search.strategy == "model" && search.model.empty()) throw UsageError("--search=model needs --model MODEL.json");
  SpaceModel model(space);
  TuneResult r;
  Generated g = generateSpace(space);
  r.spaceCount = g.count;
  r.generationS = g.seconds;
  if (search.strategy == "exhaustive" && search.trials == 0 && g.count > 100000)
    throw UsageError("an exhaustive search of " + std::to_string(g.count) +
                     " configurations: give --trials, or search another way");
  char gen[32];
  std::snprintf(gen, sizeof gen, "%.4f", g.seconds);
  log.note({{"search", search.strategy}, {"seed", std::to_string(search.seed)}, {"space_configurations", std::to_string(g.count)},
            {"generation_s", gen}});
  auto start = std::chrono::steady_clock::now();
  double before = log.trials().empty() ? 0 : log.trials().back().elapsedS;
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::vector<long long> defaults = model.defaults();
  std::string defaultKey = model.key(defaults);
  // The logged trials' keys in this space's form: a log from before a parameter existed has keys
  // without it (SpaceModel::parseKey), which name the same configurations.
  std::map<std::string, std::string> canonical;
  auto keyOf = [&](const std::string &logged) {
    auto it = canonical.find(logged);
    if (it != canonical.end()) return it->second;
    return canonical[logged] = model.key(model.parseKey(logged, {log.path()}, true));
  };
  r.best.index = -1;
  auto consider = [&](Trial t) {
    t.key = keyOf(t.key);
    if (t.status == TrialStatus::Ok && (r.best.index < 0 || t.us < r.best.us)) r.best = t;
    if (t.key == defaultKey) r.defaults = t;
  };
  for (const Trial &t : log.trials()) consider(t);
  if (!log.trials().empty()) progress("resuming: " + std::to_string(log.trials().size()) + " trials in the log");
  Proposer proposer(model, search, g.count);
  if (search.strategy == "model") {
    std::vector<std::vector<long long>> ranked = rankByModel(space, defaults, g.count, search, runner, progress);
    progress("model: " + std::to_string(ranked.size()) + " configurations ranked");
    proposer.rank(std::move(ranked));
  }
  std::vector<long long> state = r.best.index >= 0 ? model.parseKey(r.best.key, {}) : defaults;
  double stateUs = r.best.index >= 0 ? r.best.us : 0;
  long long session = 0;
  // Trials are the configurations built and run: those refused before any compile (a constraint,
  // or the capacity check: RunnerOptions::maxSpill) are logged, so never proposed again, but not counted.
  auto measured = [&](size_t upTo) {
    long long n = 0;
    for (size_t i = 0; i < upTo && i < log.trials().size(); ++i) n += log.trials()[i].status != TrialStatus::Violated;
    return n;
  };
  auto stop = [&]() -> std::string {
    if (search.trials > 0 && measured(log.trials().size()) >= search.trials) return "the trials asked for are done";
    if (search.seconds > 0 && seconds() >= search.seconds) return "the time asked for is up";
    if (search.target > 0 && r.best.index >= 0 && r.defaults.status == TrialStatus::Ok && r.defaults.us > 0 &&
        r.defaults.us / r.best.us >= search.target)
      return "the target speedup is reached";
    return "";
  };
  // The configurations beside `v` along emit.blocks (the blocks an SM the kernels' registers are
  // budgeted for), tried right after the defaults and after each new best: no cost model sees the
  // launch bounds, and the rule's choice loses on some programs where the sizes are already the
  // best (conv R1 1.20x with one block an SM, at the default sizes: Space.cpp).
  size_t blocksAt = space.params.size();
  for (size_t p = 0; p < space.params.size(); ++p)
    if (space.params[p].name == "emit.blocks") blocksAt = p;
  auto blocksNeighbours = [&](const std::vector<long long> &v) {
    std::vector<std::vector<long long>> out;
    if (blocksAt < v.size())
      for (long long x : space.params[blocksAt].values) {
        std::vector<long long> w = v;
        w[blocksAt] = x;
        if (x != v[blocksAt] && model.complete(w).empty()) out.push_back(w);
      }
    return out;
  };
  while ((r.stopped = stop()).empty()) {
    // (A batch: the compiles at once, and enough runs to keep every GPU of --gpus busy.)
    size_t room = std::max({(size_t)std::max(1, runner.jobs), 2 * runner.gpus.size()});
    if (search.trials > 0) room = std::min<size_t>(room, (size_t)(search.trials - measured(log.trials().size())));
    std::set<std::string> taken;
    for (const Trial &t : log.trials()) taken.insert(keyOf(t.key));
    std::vector<std::vector<long long>> batch;
    if (!taken.count(defaultKey)) batch.push_back(defaults);
    taken.insert(defaultKey);
    for (auto &w : blocksNeighbours(r.best.index >= 0 ? model.parseKey(r.best.key, {}) : defaults))
      if (batch.size() < room && taken.insert(model.key(w)).second) batch.push_back(w);
    if (batch.size() < room)
      for (auto &v : proposer.next(room - batch.size(), taken, state)) batch.push_back(v);
    if (batch.empty()) {
      r.stopped = "every configuration is tried";
      break;
    }
    measure(model, batch, runner, r.best.index >= 0 ? r.best.us : 0, [&](size_t, Trial t) {
      t.index = (int)log.trials().size();
      t.elapsedS = before + seconds();
      log.append(t);
      ++session;
      char line[64];
      std::snprintf(line, sizeof line, "%5d  %-13s %10.2f us  ", t.index, statusName(t.status), t.us);
      std::string used = t.registers < 0 || t.status == TrialStatus::Violated
                             ? ""
                             : "  [" + std::to_string(t.registers) + " registers" +
                                   (t.spillBytes > 0 ? ", " + std::to_string(t.spillBytes) + " bytes spilled" : "") + "]";
      progress(line + t.key + used + (t.detail.empty() ? "" : "  (" + t.detail + ")"));
      if (t.status == TrialStatus::Ok && search.strategy == "anneal" && (stateUs == 0 || proposer.accept(t.us, stateUs, session))) {
        state = model.parseKey(t.key, {});
        stateUs = t.us;
      }
      consider(t);
    }, [&] { return search.seconds > 0 && seconds() >= search.seconds; });
  }
  r.trials = measured(log.trials().size());
  r.trialsToBest = measured((size_t)(r.best.index + 1));
  r.secondsToBest = r.best.elapsedS;
  return r;
}

} // namespace polyk
