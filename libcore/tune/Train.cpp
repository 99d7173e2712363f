// Training and judging the cost model (TuneModel.h) on tuning logs: each log's correct trials as
// feature rows (the program at the log's sizes), the model trained per device, and CNNOpt's
// measures of a ranking (Table 8): the trials in the model's order until 95% and 100% of the best
// logged time, and the loss of performance of its top-n.
#include "polyk/TuneModel.h"
#include "polyk/TuneRun.h"

#include "polyk/Flatten.h"
#include "polyk/Program.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

namespace polyk {

ModelData modelData(const std::string &programText, const std::string &programFile, const std::string &logPath) {
  ModelData d;
  TuneLogHeader h;
  std::vector<Trial> trials = readTuneLog(logPath, h);
  Program p = readProgram(programText, programFile);
  if (p.name != h.program) fail({logPath, 1, 1}, "this log is of program '" + h.program + "', not '" + p.name + "' (" + programFile + ")");
  // The program at the log's sizes (its header's NAME=VALUE list), as polyk-tune run derived it.
  std::istringstream params(h.params);
  for (std::string nv; params >> nv;) {
    size_t eq = nv.find('=');
    auto it = std::find_if(p.params.begin(), p.params.end(), [&](const auto &q) { return q.first == nv.substr(0, eq); });
    if (eq == std::string::npos || it == p.params.end()) fail({logPath, 1, 1}, "the log's size " + nv + " is not a parameter of " + p.name);
    it->second = std::stoll(nv.substr(eq + 1));
  }
  Scop flat = flatten(readProgram(h.params.empty() ? programText : writeProgram(p), programFile));
  d.space = deriveSpace(flat);
  d.shapes = kernelShapes(flat);
  d.device = h.device;
  d.program = h.program;
  SpaceModel model(d.space);
  // A trial's configuration over the derived space: name=value; a parameter the log's (edited)
  // space left out keeps its default, or where polyk-tune added it after the log was written, the
  // value its trials ran with.
  auto configOf = [&](const Trial &t) {
    std::vector<long long> v = model.defaults();
    for (size_t i = 0; i < d.space.params.size(); ++i)
      if (t.key.rfind(d.space.params[i].name + "=", 0) != 0 && t.key.find(" " + d.space.params[i].name + "=") == std::string::npos)
        addedValue(d.space.params[i].name, v[i]);
    std::istringstream kv(t.key);
    for (std::string item; kv >> item;) {
      size_t eq = item.find('=');
      size_t i = 0;
      while (i < d.space.params.size() && d.space.params[i].name != item.substr(0, eq)) ++i;
      if (eq == std::string::npos || i == d.space.params.size())
        fail({logPath, 1, 1}, "trial " + std::to_string(t.index) + " sets '" + item.substr(0, eq) + "', which " + h.program +
                                  "'s space at these sizes lacks");
      v[i] = std::stoll(item.substr(eq + 1));
    }
    model.complete(v);
    return v;
  };
  for (const Trial &t : trials) {
    if (t.status != TrialStatus::Ok || t.us <= 0) {
      // The others, for the report's count; one no features describe (a violated constraint's
      // sizes, a parameter the space lacks) is left out, as before they all were.
      try {
        d.failedX.push_back(features(d.shapes, d.space, configOf(t)));
        d.failedIndex.push_back(t.index);
      } catch (const std::exception &) {
      }
      continue;
    }
    d.x.push_back(features(d.shapes, d.space, configOf(t)));
    d.us.push_back(t.us);
    d.keys.push_back(t.key);
    d.index.push_back(t.index);
  }
  return d;
}

ModelReport judge(const ModelData &d, const std::vector<double> &predicted, const std::vector<double> &predictedFailed) {
  ModelReport r;
  size_t n = d.us.size();
  r.trials = (long long)n;
  // Every trial's time and prediction: the correct ones, then the others (never the best).
  std::vector<double> us(d.us), pred(predicted);
  std::vector<int> index(d.index);
  for (size_t i = 0; i < predictedFailed.size() && i < d.failedIndex.size(); ++i) {
    us.push_back(INFINITY);
    pred.push_back(predictedFailed[i]);
    index.push_back(d.failedIndex[i]);
  }
  r.failed = (long long)(us.size() - n);
  if (n == 0) return r;
  // The model's order; configurations it predicts alike come slowest first (a tie is no credit).
  std::vector<size_t> order(us.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return pred[a] != pred[b] ? pred[a] < pred[b] : us[a] > us[b]; });
  r.best = *std::min_element(d.us.begin(), d.us.end());
  double seen = INFINITY;
  for (size_t k = 0; k < order.size(); ++k) {
    seen = std::min(seen, us[order[k]]);
    if (r.to95 == 0 && seen <= r.best / 0.95) r.to95 = (long long)k + 1;
    if (r.to100 == 0 && seen <= r.best) r.to100 = (long long)k + 1;
    if (k + 1 == 10 || (k + 1 < 10 && k + 1 == order.size())) r.lop10 = 1 - r.best / seen;
    if (k + 1 == 30 || (k + 1 < 30 && k + 1 == order.size())) r.lop30 = 1 - r.best / seen;
  }
  // The search's own order: the defaults (correct or not), then the others in the model's.
  auto defaults = std::find(index.begin(), index.end(), 0);
  if (defaults != index.end()) {
    size_t first = (size_t)(defaults - index.begin());
    seen = us[first];
    long long k = 1;
    for (size_t i = 0; seen > r.best / 0.95 && i < order.size(); ++i)
      if (order[i] != first) seen = std::min(seen, us[order[i]]), ++k;
    r.searchTo95 = k;
  }
  // Spearman's rank correlation of predicted and measured: Pearson's on the ranks, tied values
  // taking their average rank.
  auto ranks = [&](const std::vector<double> &v) {
    std::vector<size_t> o(n);
    std::iota(o.begin(), o.end(), 0);
    std::stable_sort(o.begin(), o.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
    std::vector<double> rk(n);
    for (size_t i = 0; i < n;) {
      size_t j = i;
      while (j < n && v[o[j]] == v[o[i]]) ++j;
      for (size_t k = i; k < j; ++k) rk[o[k]] = (double)(i + j - 1) / 2;
      i = j;
    }
    return rk;
  };
  std::vector<double> a = ranks(predicted), b = ranks(d.us);
  double ma = std::accumulate(a.begin(), a.end(), 0.0) / (double)n, mb = std::accumulate(b.begin(), b.end(), 0.0) / (double)n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < n; ++i) sab += (a[i] - ma) * (b[i] - mb), saa += (a[i] - ma) * (a[i] - ma), sbb += (b[i] - mb) * (b[i] - mb);
  r.spearman = saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0;
  return r;
}

namespace {

void writeFiles(const ModelData &d, const std::vector<double> &predicted, const std::string &dir) {
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir + "/predicted.csv");
    f << "trial,measured_us,predicted_us,config\n";
    for (size_t i = 0; i < d.us.size(); ++i) f << d.index[i] << "," << d.us[i] << "," << predicted[i] << ",\"" << d.keys[i] << "\"\n";
  }
  {
    // Best so far, in the order the search ran (the log's) and in the model's order.
    std::vector<size_t> order(d.us.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return predicted[a] < predicted[b]; });
    std::ofstream f(dir + "/best-so-far.csv");
    f << "n,search_best_us,model_order_best_us\n";
    double s = INFINITY, m = INFINITY;
    for (size_t k = 0; k < d.us.size(); ++k) {
      s = std::min(s, d.us[k]);
      m = std::min(m, d.us[order[k]]);
      f << k + 1 << "," << s << "," << m << "\n";
    }
  }
  {
    std::ofstream f(dir + "/plots.gp");
    f << "# gnuplot " << dir << "/plots.gp (run from its directory): predicted.png, best-so-far.png\n"
      << "set datafile separator ','\nset terminal pngcairo size 640,480\nset key top left\n"
      << "set output 'predicted.png'\nset logscale xy\nset xlabel 'measured (us)'\nset ylabel 'predicted (us)'\n"
      << "set title '" << d.program << ": predicted vs measured'\n"
      << "plot 'predicted.csv' skip 1 using 2:3 with points pt 7 ps 0.6 title 'trials', x with lines title 'y = x'\n"
      << "unset logscale\nset logscale y\nset output 'best-so-far.png'\nset xlabel 'trials'\nset ylabel 'best so far (us)'\n"
      << "set title '" << d.program << ": best so far'\n"
      << "plot 'best-so-far.csv' skip 1 using 1:2 with steps title 'the search', '' skip 1 using 1:3 with steps title 'the model order'\n";
  }
}

} // namespace

std::string writeReport(const ModelData &d, const std::vector<double> &predicted, const ModelReport &r, const std::string &dir) {
  if (!dir.empty()) writeFiles(d, predicted, dir);
  char line[512];
  std::snprintf(line, sizeof line,
                "%s: %lld trials (and %lld not correct), best %.2f us; in the model's order: 95%% of it at trial %lld, "
                "100%% at trial %lld; LoP top-10 %.1f%%, top-30 %.1f%%; Spearman %.2f; the model's search (defaults "
                "first): 95%% at trial %lld\n",
                d.program.c_str(), r.trials, r.failed, r.best, r.to95, r.to100, 100 * r.lop10, 100 * r.lop30, r.spearman,
                r.searchTo95);
  return line;
}

} // namespace polyk
