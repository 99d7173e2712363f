// Map fusion's search (MapSearch.h): implementations, prediction (Eq. 3), the cover by GLPK.
#include "polyk/MapSearch.h"

#include "polyk/Diagnostics.h"
#include "polyk/Isl.h"
#include "polyk/Types.h"

#include <glpk.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

namespace polyk {

namespace {

/// Elements an instance of tensor `t` (its dims after the instance; 0 for a tensor without the
/// instance dim, read by every instance: cached, not counted).
long long rowElements(const TensorDecl &t, const std::string &instances) {
  if (t.shape.empty() || t.shape[0].str() != instances) return 0;
  long long e = 1;
  for (size_t d = 1; d < t.shape.size(); ++d) e *= t.shape[d].value;
  return e;
}

/// Piecewise-linear in r through the measured points (extrapolated with the last slope).
double interpolate(const std::map<long long, double> &at, long long r) {
  if (at.empty()) return 0;
  if (at.size() == 1) return at.begin()->second * (double)r / (double)at.begin()->first;
  auto hi = at.lower_bound(r);
  if (hi == at.end()) --hi;
  if (hi == at.begin()) ++hi;
  auto lo = std::prev(hi);
  double slope = (hi->second - lo->second) / (double)(hi->first - lo->first);
  return std::max(0.0, lo->second + slope * (double)(r - lo->first));
}

} // namespace

MapPsi readPsi(const std::string &path) {
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(path);
  } catch (const YAML::Exception &e) {
    throw UsageError("--psi " + path + ": " + e.what());
  }
  if (!doc["polyk"] || doc["polyk"].as<std::string>() != "psi/1") throw UsageError("--psi " + path + ": not a psi/1 file");
  MapPsi p;
  p.device = doc["device"].as<std::string>("");
  p.launchUs = doc["launch_us"].as<double>(0);
  for (const auto &s : doc["sizes"]) {
    MapPsi::AtSize a;
    a.instances = s["instances"].as<long long>();
    for (const auto &c : s["copy_us"]) a.copyUs[c.first.as<long long>()] = c.second.as<double>();
    for (const auto &f : s["function_us"]) a.functionUs[f.first.as<std::string>()] = f.second.as<double>();
    p.sizes.push_back(a);
  }
  if (p.sizes.empty()) throw UsageError("--psi " + path + ": no sizes");
  return p;
}

std::pair<std::vector<long long>, long long> allocateRows(const std::vector<long long> &bytes, const std::vector<std::pair<size_t, size_t>> &life,
                                                          const std::vector<long long> &align) {
  const size_t n = bytes.size();
  std::vector<long long> offsets(n, 0), best(n, 0);
  long long bestEnd = -1;
  std::function<void(size_t, long long)> place = [&](size_t i, long long end) {
    if (bestEnd >= 0 && end >= bestEnd) return; // bound
    if (i == n) {
      bestEnd = end, best = offsets;
      return;
    }
    std::set<long long> tries{0};
    for (size_t j = 0; j < i; ++j) tries.insert((offsets[j] + bytes[j] + align[i] - 1) / align[i] * align[i]);
    for (long long off : tries) {
      bool clash = false;
      for (size_t j = 0; j < i && !clash; ++j) {
        bool together = life[i].first <= life[j].second && life[j].first <= life[i].second;
        clash = together && off < offsets[j] + bytes[j] && offsets[j] < off + bytes[i];
      }
      if (clash) continue;
      offsets[i] = off;
      place(i + 1, std::max(end, off + bytes[i]));
    }
  };
  place(0, 0);
  return {best, std::max<long long>(0, bestEnd)};
}

namespace {

/// Each intermediate's life in `order` (positions): from its producer to its last reader there.
std::vector<std::pair<size_t, size_t>> lifetimes(const MapDag &dag, const std::vector<size_t> &order, const std::vector<std::string> &mids) {
  std::vector<std::pair<size_t, size_t>> life;
  for (const auto &t : mids) {
    size_t made = 0, last = 0;
    for (size_t j = 0; j < order.size(); ++j) {
      const MapFunction &f = dag.functions[order[j]];
      if (f.output == t) made = j;
      if (std::find(f.reads.begin(), f.reads.end(), t) != f.reads.end()) last = std::max(last, j);
    }
    life.push_back({made, std::max(made, last)});
  }
  return life;
}

} // namespace

MapSearchResult searchFusions(const Scop &s, size_t k, size_t maxCovers, const MapPsi *psi) {
  auto start = std::chrono::steady_clock::now();
  MapSearchResult r;
  r.dag = mapDag(s);
  const MapDag &dag = r.dag;
  const size_t n = dag.functions.size();
  r.candidates = fusionCandidates(dag, k);
  // Not a set where a function reads what another of it writes at another instance (the fused
  // kernel computes each instance's row in its own block): such an edge stays between kernels.
  auto ownInstance = [&](const MapEdge &e) {
    for (const auto &name : dag.functions[e.to].statements)
      for (const auto &text : s.statement(name)->reads) {
        isl::map a(islCtx(), text);
        if (a.range_tuple_id().name() != e.tensor) continue;
        a = a.intersect_domain(isl::set(islCtx(), s.statement(name)->domain));
        if (!a.is_subset(isl::manage(isl_map_equate(a.copy(), isl_dim_in, 0, isl_dim_out, 0)))) return false;
      }
    return true;
  };
  std::erase_if(r.candidates, [&](const std::vector<size_t> &set) {
    for (const auto &e : dag.edges)
      if (std::count(set.begin(), set.end(), e.from) && std::count(set.begin(), set.end(), e.to) && !ownInstance(e)) return true;
    return false;
  });
  // The instance count: the instance dim's extent at the parameters' values.
  MapBox box = mapBox(s.statements.front());
  long long N = 0;
  for (const auto &[name, value] : s.params)
    if (name == box.instances) N = value;
  if (N == 0) N = std::atoll(box.instances.c_str());
  if (N <= 0) throw UsageError("map fusion: the instance count '" + box.instances + "' has no value");
  r.instances = N;
  // The routines' timings at the measured size nearest N (in ratio).
  const MapPsi::AtSize *at = nullptr;
  if (psi)
    for (const auto &a : psi->sizes)
      if (!at || std::fabs(std::log((double)a.instances / (double)N)) < std::fabs(std::log((double)at->instances / (double)N))) at = &a;
  r.basis = at ? "psi " + psi->device + " at " + std::to_string(at->instances) + " instances" : "model";
  const double launch = at ? psi->launchUs : 3.0;
  // Per instance, us: a row of r elements loaded (half a copy) or stored; a function alone.
  auto rowUs = [&](long long elements) {
    if (elements == 0) return 0.0;
    if (at) return interpolate(at->copyUs, elements) / (double)at->instances / 2;
    return 2.0 * 4.0 * (double)elements / 3.0e6 / 2; // 3 TB/s
  };
  std::map<std::string, long long> rows; // tensor -> elements an instance
  for (const auto &t : s.tensors) rows[t.name] = rowElements(t, box.instances);
  auto computeUs = [&](size_t f, long long g, long long instances) {
    const MapFunction &fn = dag.functions[f];
    double mem = rowUs(rows[fn.output]);
    for (const auto &t : fn.reads) mem += rowUs(rows[t]);
    if (at) {
      // (psi's instances a block, `pP`, where measured at the implementation's; else the
      // function's own default.)
      std::string key = dag.program + " " + fn.name + " g" + std::to_string(g);
      auto it = at->functionUs.find(key + " p" + std::to_string(instances));
      if (it == at->functionUs.end()) it = at->functionUs.find(key);
      if (it != at->functionUs.end()) {
        double alone = std::max(0.0, it->second - launch) / (double)at->instances;
        return std::max(0.1 * alone, alone - mem);
      }
    }
    // (Not measured: its multiply-adds at 50 TFLOP/s, a thread per instance slower.)
    long long fmas = 1;
    for (const auto &name : fn.statements) {
      const ScopStatement &st = *s.statement(name);
      if (st.dims.size() > 1 + fn.row.size()) {
        MapBox b = mapBox(st);
        long long e = 1;
        for (long long x : b.extents) e *= x;
        fmas = std::max(fmas, e);
      }
    }
    return 2.0 * (double)fmas / 50.0e6 * (g == 1 ? 4.0 : 1.0);
  };
  // Implementations: per candidate, every granularity of each function; the linearization with
  // the least peak of live intermediates, and their allocation.
  for (size_t c = 0; c < r.candidates.size(); ++c) {
    const std::vector<size_t> &set = r.candidates[c];
    std::set<size_t> in(set.begin(), set.end());
    // Intermediates: tensors a function of the set produces and another reads.
    std::vector<std::string> mids;
    std::map<std::string, size_t> producer;
    for (size_t f : set) producer[dag.functions[f].output] = f;
    for (size_t f : set)
      for (const auto &t : dag.functions[f].reads)
        if (producer.count(t) && std::find(mids.begin(), mids.end(), t) == mids.end()) mids.push_back(t);
    std::sort(mids.begin(), mids.end());
    auto bytesOf = [&](const std::string &t) { return rows[t] * (long long)dtypeBytes(computeType(s.tensor(t)->type)); };
    // Linearizations: the topological orders of the set (exhaustive; sets are small).
    std::vector<size_t> best;
    long long bestPeak = -1;
    std::vector<size_t> order;
    std::vector<bool> used(n, false);
    std::function<void()> enumerate = [&] {
      if (order.size() == set.size()) {
        // The peak of live intermediates' bytes over the order's steps.
        auto life = lifetimes(dag, order, mids);
        long long peak = 0;
        for (size_t i = 0; i < order.size(); ++i) {
          long long live = 0;
          for (size_t m = 0; m < mids.size(); ++m)
            if (life[m].first <= i && i <= life[m].second) live += bytesOf(mids[m]);
          peak = std::max(peak, live);
        }
        if (bestPeak < 0 || peak < bestPeak) bestPeak = peak, best = order;
        return;
      }
      for (size_t f : set) {
        if (used[f]) continue;
        bool ready = true;
        for (const auto &e : dag.edges)
          if (e.to == f && in.count(e.from) && !used[e.from]) ready = false;
        if (!ready) continue;
        used[f] = true, order.push_back(f);
        enumerate();
        used[f] = false, order.pop_back();
      }
    };
    enumerate();
    // The allocation by branch and bound over the chosen order's lifetimes.
    std::vector<std::pair<size_t, size_t>> life = lifetimes(dag, best, mids);
    std::vector<long long> sizes, aligns;
    for (const auto &t : mids) sizes.push_back(bytesOf(t)), aligns.push_back(dtypeBytes(computeType(s.tensor(t)->type)));
    auto [bestOffsets, bestEnd] = allocateRows(sizes, life, aligns);
    // Granularities: every combination (the first 64 a candidate, in enumeration order).
    std::vector<std::vector<long long>> choices{{}};
    for (size_t f : best) {
      std::vector<std::vector<long long>> next;
      for (const auto &ch : choices)
        for (long long g : dag.functions[f].granularities) {
          auto x = ch;
          x.push_back(g);
          next.push_back(x);
        }
      choices = next;
    }
    if (choices.size() > 64) choices.resize(64);
    // Memory routines at the set's boundary: inputs it reads, outputs others read or the program's.
    double mem = 0;
    std::set<std::string> loads, stores;
    for (size_t f : set) {
      for (const auto &t : dag.functions[f].reads)
        if (!producer.count(t)) loads.insert(t);
      const std::string &o = dag.functions[f].output;
      bool outside = s.tensor(o)->role == Role::Output;
      for (size_t g = 0; g < n; ++g) {
        const auto &rd = dag.functions[g].reads;
        outside |= !in.count(g) && std::find(rd.begin(), rd.end(), o) != rd.end();
      }
      if (outside) stores.insert(o);
    }
    for (const auto &t : loads) mem += rowUs(rows[t]);
    for (const auto &t : stores) mem += rowUs(rows[t]);
    for (const auto &threads : choices) {
      MapImplementation im;
      im.candidate = c;
      im.order = best;
      im.threads = threads;
      im.boundBytes = bestPeak;
      im.allocatedBytes = bestEnd;
      im.offsets = bestOffsets;
      long long widest = *std::max_element(threads.begin(), threads.end()), declared = 0;
      for (const auto &t : mids) declared += bytesOf(t);
      while (im.instances * widest < 256) im.instances *= 2;
      while (im.instances > 1 && im.instances * declared > 48 * 1024) im.instances /= 2;
      // The extra shared memory of the fusion (psi's Delta M): where the block's rows leave room
      // for fewer blocks an SM than the 8 of 256 threads each a function alone runs at, its
      // computation is that much less parallel.
      long long perBlock = im.instances * declared, blocksPerSm = 8;
      if (perBlock > 0) blocksPerSm = std::max<long long>(1, std::min<long long>(8, 227 * 1024 / perBlock));
      double comp = 0;
      for (size_t i = 0; i < best.size(); ++i) comp += computeUs(best[i], threads[i], im.instances) * 8.0 / (double)blocksPerSm;
      im.memUs = mem * (double)N;
      im.computeUs = comp * (double)N;
      // Eq. 3 (t_md: our kernels recompute thread coordinates in every function, so it is inside
      // the functions' measured times), plus the kernel's launch.
      im.us = std::max(im.memUs + im.computeUs, im.computeUs) + launch;
      r.implementations.push_back(im);
    }
  }
  auto mid = std::chrono::steady_clock::now();
  r.searchSeconds = std::chrono::duration<double>(mid - start).count();

  // The covers: an ILP over the implementations (GLPK), each function covered once, the predicted
  // time least; the next best by Lawler's partition of the solutions (Murty's k-best): after a
  // cover of free members c1..cm (those not forced in), subproblem i forces c1..c(i-1) in and
  // keeps ci out. Each cover lies in exactly one subproblem, so taking the cheapest pending one
  // each time gives the covers in order: a true top K. (Restarts that only leave out members of
  // covers found missed better covers of several kernels: --fusion-max 3's 6th best.)
  auto solve = [&](const std::set<size_t> &in, const std::set<size_t> &out, MapCover &cover) {
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_rows(lp, (int)n);
    for (size_t f = 0; f < n; ++f) glp_set_row_bnds(lp, (int)f + 1, GLP_FX, 1.0, 1.0);
    std::vector<size_t> columns;
    for (size_t i = 0; i < r.implementations.size(); ++i)
      if (!out.count(i)) columns.push_back(i);
    if (columns.empty()) {
      glp_delete_prob(lp);
      return false;
    }
    glp_add_cols(lp, (int)columns.size());
    std::vector<int> ia{0}, ja{0};
    std::vector<double> ar{0};
    for (size_t j = 0; j < columns.size(); ++j) {
      const MapImplementation &im = r.implementations[columns[j]];
      glp_set_col_kind(lp, (int)j + 1, GLP_BV);
      if (in.count(columns[j])) glp_set_col_bnds(lp, (int)j + 1, GLP_FX, 1.0, 1.0);
      glp_set_obj_coef(lp, (int)j + 1, im.us);
      for (size_t f : r.candidates[im.candidate]) ia.push_back((int)f + 1), ja.push_back((int)j + 1), ar.push_back(1.0);
    }
    glp_load_matrix(lp, (int)ia.size() - 1, ia.data(), ja.data(), ar.data());
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.presolve = GLP_ON;
    parm.msg_lev = GLP_MSG_OFF;
    bool ok = glp_intopt(lp, &parm) == 0 && glp_mip_status(lp) == GLP_OPT;
    if (ok) {
      cover = MapCover();
      for (size_t j = 0; j < columns.size(); ++j)
        if (glp_mip_col_val(lp, (int)j + 1) > 0.5) cover.implementations.push_back(columns[j]), cover.us += r.implementations[columns[j]].us;
    }
    glp_delete_prob(lp);
    return ok;
  };
  struct Pending {
    MapCover cover;
    std::set<size_t> in, out;
    size_t order; // (ties: first found first)
  };
  auto later = [](const Pending &a, const Pending &b) { return a.cover.us != b.cover.us ? a.cover.us > b.cover.us : a.order > b.order; };
  std::vector<Pending> heap;
  size_t made = 0;
  auto push = [&](std::set<size_t> in, std::set<size_t> out) {
    MapCover cover;
    if (!solve(in, out, cover)) return;
    heap.push_back({cover, std::move(in), std::move(out), made++});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  push({}, {});
  while (!heap.empty() && r.covers.size() < maxCovers) {
    std::pop_heap(heap.begin(), heap.end(), later);
    Pending p = std::move(heap.back());
    heap.pop_back();
    r.covers.push_back(p.cover);
    std::set<size_t> in = p.in;
    for (size_t c : p.cover.implementations) {
      if (p.in.count(c)) continue;
      std::set<size_t> out = p.out;
      out.insert(c);
      push(in, out);
      in.insert(c);
    }
  }
  std::stable_sort(r.covers.begin(), r.covers.end(), [](const MapCover &a, const MapCover &b) { return a.us < b.us; });
  // Each cover's kernels in an order every edge follows.
  for (auto &cover : r.covers) {
    std::string text;
    for (size_t i : cover.implementations) {
      std::string set;
      for (size_t f : r.candidates[r.implementations[i].candidate]) set += (set.empty() ? "" : "+") + dag.functions[f].name;
      text += (text.empty() ? "" : ",") + set;
    }
    std::vector<std::vector<size_t>> ordered = parseCover(dag, text);
    std::vector<size_t> sorted;
    for (const auto &set : ordered)
      for (size_t i : cover.implementations)
        if (r.candidates[r.implementations[i].candidate] == set) sorted.push_back(i); // (both in the candidate's order)
    cover.implementations = sorted;
  }
  r.coverSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - mid).count();
  return r;
}

std::string coverText(const MapSearchResult &r, size_t rank) {
  std::string text;
  for (size_t i : r.covers.at(rank).implementations) {
    std::string set;
    // (In the linearization's order: the kernel runs them so, parseCover.)
    for (size_t f : r.implementations[i].order) set += (set.empty() ? "" : "+") + r.dag.functions[f].name;
    text += (text.empty() ? "" : ",") + set;
  }
  return text;
}

std::string coverSizes(const MapSearchResult &r, size_t rank) {
  std::string o = "{ ";
  size_t k = 0;
  for (size_t i : r.covers.at(rank).implementations) {
    const MapImplementation &im = r.implementations[i];
    std::string K = "kernel[" + std::to_string(k++) + "]", threads;
    // (In the linearization's order, the kernel's: coverText.)
    for (long long g : im.threads) threads += (threads.empty() ? "" : ", ") + std::to_string(g);
    o += (k > 1 ? "; " : "") + K + " -> tile[" + std::to_string(im.instances) + "]; " + K + " -> block[256]; " + K + " -> threads[" + threads + "]";
  }
  return o + " }";
}

std::string writeFusionSearch(const MapSearchResult &r, size_t k) {
  std::string base = writeFusionCandidates(r.dag, r.candidates, k);
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "search" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "instances" << YAML::Value << r.instances;
  out << YAML::Key << "basis" << YAML::Value << r.basis;
  out << YAML::Key << "seconds" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "implementations" << YAML::Value
      << r.searchSeconds << YAML::Key << "covers" << YAML::Value << r.coverSeconds << YAML::EndMap;
  out << YAML::Key << "implementations" << YAML::Value << YAML::BeginSeq;
  for (const auto &im : r.implementations) {
    out << YAML::Flow << YAML::BeginMap;
    std::vector<std::string> names;
    for (size_t f : im.order) names.push_back(r.dag.functions[f].name);
    out << YAML::Key << "order" << YAML::Value << YAML::Flow << names;
    out << YAML::Key << "threads" << YAML::Value << YAML::Flow << im.threads;
    out << YAML::Key << "instances" << YAML::Value << im.instances;
    out << YAML::Key << "bound_bytes" << YAML::Value << im.boundBytes;
    out << YAML::Key << "allocated_bytes" << YAML::Value << im.allocatedBytes;
    out << YAML::Key << "us" << YAML::Value << std::round(im.us * 100) / 100;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "covers" << YAML::Value << YAML::BeginSeq;
  for (size_t c = 0; c < r.covers.size(); ++c) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "cover" << YAML::Value << coverText(r, c);
    out << YAML::Key << "sizes" << YAML::Value << coverSizes(r, c);
    out << YAML::Key << "us" << YAML::Value << std::round(r.covers[c].us * 100) / 100 << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
  // (The search's keys after the candidates' own.)
  std::string more = out.c_str();
  return base + more + "\n";
}

std::map<std::string, std::pair<std::string, std::string>> routinePrograms(const Scop &s) {
  MapDag dag = mapDag(s);
  MapBox box = mapBox(s.statements.front());
  std::map<std::string, std::pair<std::string, std::string>> out;
  auto params = [&] {
    std::string p = "params: {";
    for (size_t i = 0; i < s.params.size(); ++i) p += (i ? ", " : "") + s.params[i].first + ": " + std::to_string(s.params[i].second);
    return p + "}\n";
  };
  auto decl = [](const TensorDecl &t, const std::string &role) {
    std::string shape;
    for (size_t d = 0; d < t.shape.size(); ++d) shape += (d ? ", " : "") + t.shape[d].str();
    return "  " + t.name + ": {type: " + dtypeName(t.type) + ", shape: [" + shape + "], role: " + role + "}\n";
  };
  for (const auto &fn : dag.functions) {
    // Its program statements (a later one inlined into it included), the tensors they name.
    std::vector<std::string> sources;
    for (const auto &name : fn.statements)
      for (const std::string &src : {s.statement(name)->source, s.statement(name)->epilogue})
        if (!src.empty() && std::find(sources.begin(), sources.end(), src) == sources.end()) sources.push_back(src);
    std::set<std::string> written, named;
    for (const auto &src : sources) {
      size_t open = src.find('(');
      written.insert(src.substr(0, open));
      for (const auto &t : s.tensors) {
        for (size_t at = src.find(t.name); at != std::string::npos; at = src.find(t.name, at + 1)) {
          bool start = at == 0 || !(std::isalnum((unsigned char)src[at - 1]) || src[at - 1] == '_');
          bool call = at + t.name.size() < src.size() && src[at + t.name.size()] == '(';
          if (start && call) named.insert(t.name);
        }
      }
    }
    std::string tensors;
    for (const auto &t : s.tensors)
      if (named.count(t.name)) tensors += decl(t, t.name == fn.output ? "output" : written.count(t.name) ? "temporary" : "input");
    for (long long g : fn.granularities) {
      std::string name = dag.program + "_" + fn.name + "_g" + std::to_string(g);
      std::string text = "polyk: program/1\nname: " + name + "\n" + params() + "tensors:\n" + tensors + "statements:\n";
      // (The function's statement with a `where` that holds everywhere, `0 <= p` of its instance: a lone
      // function of plain subscripts would take the reduction path, not the map's.)
      for (const auto &src : sources) {
        size_t open = src.find('('), end = src.find_first_of(",)", open);
        std::string instance = src.substr(open + 1, end - open - 1);
        instance.erase(std::remove(instance.begin(), instance.end(), ' '), instance.end());
        bool own = &src == &sources.front(); // (not an inlined epilogue: a `where` would keep it a function of its own)
        text += "  - \"" + src + (own && src.find(" where ") == std::string::npos ? " where 0 <= " + instance : "") + "\"\n";
      }
      out[name] = {text, "--fusion=shared --sizes {kernel[0]->threads[" + std::to_string(g) + "]}"};
      // psi's instances a block (the paper's i): the function also at the fewer instances a block
      // that a fusion with a wider function gives it (down to the widest function of the map's).
      long long own = 1, fewest = 1, widest = 1;
      for (const auto &other : dag.functions) widest = std::max(widest, other.granularities.back());
      while (own * g < 256) own *= 2;
      while (fewest * widest < 256) fewest *= 2;
      for (long long p = own / 2; p >= fewest; p /= 2)
        out[name + "_p" + std::to_string(p)] = {text, "--fusion=shared --sizes {kernel[0]->tile[" + std::to_string(p) + "];kernel[0]->block[256];kernel[0]->threads[" +
                                                          std::to_string(g) + "]}"};
    }
  }
  // Row copies of the rows the map's tensors have (the `where` keeps them on the affine path).
  std::set<long long> sizes;
  for (const auto &t : s.tensors)
    if (long long e = rowElements(t, box.instances); e > 0) sizes.insert(e);
  sizes.insert(1);
  for (long long e : sizes) {
    std::string name = "copy_" + std::to_string(e);
    std::string text = "polyk: program/1\nname: " + name + "\nparams: {n: 31744}\ntensors:\n  x: {type: f32, shape: [n, " + std::to_string(e) +
                       "], role: input}\n  y: {type: f32, shape: [n, " + std::to_string(e) + "], role: output}\nstatements:\n  - y(p, i) = x(p, i) where 0 <= i\n";
    out[name] = {text, "--fusion=shared"};
  }
  return out;
}

} // namespace polyk
