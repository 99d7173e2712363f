// The DAG of a map's functions and its fusion candidates (MapFusion.h).
#include "polyk/MapFusion.h"

#include "polyk/Diagnostics.h"
#include "polyk/Isl.h"
#include "polyk/Types.h"

#include <spdlog/spdlog.h>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace polyk {

namespace {

std::string writtenTensor(const ScopStatement &st) { return isl::map(islCtx(), st.write).range_tuple_id().name(); }

std::vector<long long> granularitiesOf(const std::vector<long long> &row) {
  std::set<long long> g{1};
  long long prefix = 1, suffix = 1;
  for (size_t i = 0; i < row.size(); ++i) {
    prefix *= row[i];
    suffix *= row[row.size() - 1 - i];
    g.insert(prefix);
    g.insert(suffix);
  }
  return {g.begin(), g.end()};
}

} // namespace

MapDag mapDag(const Scop &s) {
  if (s.statements.empty() || s.statements.front().form != Form::Affine)
    throw UsageError("map fusion: '" + s.name + "' takes the reduction path; the DAG of a map is built for affine programs");
  MapDag dag;
  dag.program = s.name;
  std::map<std::string, size_t> producer; // tensor -> function
  std::string source;
  for (const auto &st : s.statements) {
    if (st.dims.empty() || st.dims[0] != "parallel")
      throw UsageError("map fusion: statement " + st.name + " has no parallel first dim (the instance)");
    if (dag.functions.empty() || st.source != source) {
      MapFunction f;
      f.name = "f" + std::to_string(dag.functions.size());
      f.source = st.source;
      dag.functions.push_back(f);
      source = st.source;
    }
    dag.functions.back().statements.push_back(st.name);
  }
  for (size_t i = 0; i < dag.functions.size(); ++i) {
    MapFunction &f = dag.functions[i];
    std::set<std::string> own;
    for (const auto &name : f.statements) own.insert(writtenTensor(*s.statement(name)));
    f.output = writtenTensor(*s.statement(f.statements.back()));
    own.erase(f.output);
    const TensorDecl &out = *s.tensor(f.output);
    for (size_t d = 1; d < out.shape.size(); ++d) {
      if (!out.shape[d].param.empty())
        throw UsageError("map fusion: " + f.output + "'s dim " + std::to_string(d) + " is symbolic (" + out.shape[d].param +
                         "); an instance's row must have constant dims");
      f.row.push_back(out.shape[d].value);
    }
    // Threads per instance: products of the leading or trailing dims of the row as its first
    // statement runs it (its parallel dims after the instance; a write may permute the output's).
    {
      const ScopStatement &first = *s.statement(f.statements.front());
      isl::set dom(islCtx(), first.domain);
      for (size_t d = 1; d < first.dims.size() && first.dims[d] == "parallel"; ++d) {
        isl::val hi = dom.dim_max_val((int)d);
        f.statementRow.push_back(hi.is_int() ? hi.get_num_si() + 1 : 1);
      }
    }
    f.granularities = granularitiesOf(f.statementRow);
    std::set<std::string> reads;
    for (const auto &name : f.statements)
      for (const auto &r : s.statement(name)->reads) {
        std::string t = isl::map(islCtx(), r).range_tuple_id().name();
        if (!own.count(t) && t != f.output) reads.insert(t);
      }
    f.reads.assign(reads.begin(), reads.end());
    for (const auto &t : f.reads)
      if (auto it = producer.find(t); it != producer.end()) dag.edges.push_back({it->second, i, t});
    producer[f.output] = i;
  }
  return dag;
}

MapBox mapBox(const ScopStatement &st) {
  isl::ctx ctx = islCtx();
  isl::set dom(ctx, st.domain);
  MapBox b;
  unsigned n = dom.tuple_dim();
  for (unsigned i = 0; i < n; ++i) {
    isl_id *id = isl_set_get_dim_id(dom.get(), isl_dim_set, i);
    b.names.push_back(isl_id_get_name(id));
    isl_id_free(id);
  }
  auto refuse = [&](const std::string &why) -> MapBox {
    throw UsageError("--fusion=shared: statement " + st.name + " (" + st.source + "): " + why);
  };
  if (n == 0) return refuse("no instance dim");
  // The instances: 0 to some extent, every one (a `where` on the instance, or a stride, would leave
  // instances the kernel computes anyway).
  {
    isl::set inst = isl::manage(isl_set_project_out(dom.copy(), isl_dim_set, 1, n - 1));
    isl::pw_aff lo = isl::manage(isl_set_dim_min(inst.copy(), 0));
    bool zero = isl_pw_aff_is_cst(lo.get()) == isl_bool_true && inst.dim_min_val(0).is_zero();
    isl::set hull = isl::manage(isl_set_from_basic_set(isl_set_simple_hull(inst.copy())));
    if (!zero || !hull.is_subset(inst))
      return refuse("its instances do not run from 0 to an extent, every one (a `where` on " + b.names[0] + "?); a fused map kernel runs every instance");
  }
  isl::pw_aff last = isl::manage(isl_set_dim_max(dom.copy(), 0));
  isl::pw_aff one = isl::manage(isl_pw_aff_val_on_domain(isl_pw_aff_domain(last.copy()), isl_val_one(ctx.get())));
  b.instances = cExpression(last.add(one));
  std::string lift = "{ " + st.name + "[d0] -> " + st.name + "[";
  for (unsigned i = 0; i < n; ++i) lift += (i ? ", " : "") + std::string("d") + std::to_string(i);
  lift += "] : 0 = 0";
  for (unsigned i = 1; i < n; ++i) {
    isl::pw_aff hi = isl::manage(isl_set_dim_max(dom.copy(), (int)i)), lo = isl::manage(isl_set_dim_min(dom.copy(), (int)i));
    if (isl_pw_aff_is_cst(hi.get()) != isl_bool_true || isl_pw_aff_is_cst(lo.get()) != isl_bool_true)
      return refuse("dim " + b.names[i] + " has no constant extent (a fused map's rows are constant)");
    long long h = dom.dim_max_val((int)i).get_num_si(), l = dom.dim_min_val((int)i).get_num_si();
    if (l != 0) return refuse("dim " + b.names[i] + " starts at " + std::to_string(l) + ", not 0 (a `where`?); a fused map kernel runs over whole rows");
    b.extents.push_back(h + 1);
    lift += " and 0 <= d" + std::to_string(i) + " <= " + std::to_string(h);
  }
  // Every point of the box at an instance of the domain is in the domain.
  isl::set instances = isl::manage(isl_set_set_tuple_name(isl_set_project_out(dom.copy(), isl_dim_set, 1, n - 1), st.name.c_str()));
  if (!instances.apply(isl::map(ctx, lift + " }")).is_subset(dom)) return refuse("its domain is not a box over the instances (a `where`?)");
  return b;
}

KernelSizes mapBlockSizes(const Scop &s, const KernelSizes &requested, const std::vector<size_t> &functions) {
  MapDag all = mapDag(s);
  MapDag dag;
  for (size_t f : functions) dag.functions.push_back(all.functions.at(f));
  const size_t n = dag.functions.size();
  auto list = [](const std::vector<long long> &v) {
    std::string o;
    for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + std::to_string(v[i]);
    return o;
  };
  if (n > 8) throw UsageError("--fusion=shared: " + std::to_string(n) + " functions; a fused kernel takes at most 8 (kernel[0] -> threads[..])");
  for (const auto &st : s.statements) mapBox(st); // (throws where a domain is no box)
  for (const auto &f : dag.functions) {
    long long rowElements = 1, runElements = 1;
    for (long long e : f.row) rowElements *= e;
    for (long long e : f.statementRow) runElements *= e;
    if (rowElements != runElements)
      throw UsageError("--fusion=shared: " + f.name + " (" + f.source + ") runs over " + std::to_string(runElements) + " of the " +
                       std::to_string(rowElements) + " elements of " + f.output + "'s row (a `where`?); a fused map kernel writes whole rows");
  }
  KernelSizes sz;
  if (!requested.threads.empty()) {
    if (requested.threads.size() != n)
      throw UsageError("kernel[0] -> threads[" + list(requested.threads) + "]: give the threads per instance of each of the " +
                       std::to_string(n) + " functions");
    for (size_t i = 0; i < n; ++i) {
      const MapFunction &f = dag.functions[i];
      if (std::find(f.granularities.begin(), f.granularities.end(), requested.threads[i]) == f.granularities.end())
        throw UsageError("kernel[0] -> threads[" + list(requested.threads) + "]: " + f.name + " (" + f.output + ") runs on " +
                         list(f.granularities) + " threads per instance, not " + std::to_string(requested.threads[i]));
    }
    sz.threads = requested.threads;
  } else {
    // One thread per element of the row's last dim (a thread walks the others): F's 3 x 3 and
    // 5 x 5 products on 3 and 5 threads an instance. H100 (bench/results/2026-11-27-h100-map.csv),
    // F at 31744 / 2^20 instances: a thread per element [9, 3, 1, 25], 10 instances a block 13.1 /
    // 252.7 us; [3, 3, 1, 5], 64 instances 10.7 / 145.5; skinning [16, 16, 4] 8.7 / 122.6, [4, 4,
    // 4] 8.3 / 92.1.
    for (const auto &f : dag.functions) sz.threads.push_back(f.statementRow.empty() ? 1 : f.statementRow.back());
  }
  if (requested.block.size() > 1 || requested.tile.size() > 1)
    throw UsageError("--fusion=shared: the kernel's band is the instance: give one tile size (instances a block) and one block size (threads)");
  long long block = requested.block.empty() ? 256 : requested.block[0];
  long long widest = *std::max_element(sz.threads.begin(), sz.threads.end());
  sz.block = {block};
  long long instances = 1;
  while (instances * widest < block) instances *= 2;
  // (Fewer where the intermediates' rows would pass the 48 KB a block declares: the functions'
  // temporary outputs, in their compute type.)
  long long rowBytes = 0;
  for (const auto &f : dag.functions)
    if (const TensorDecl *t = s.tensor(f.output); t && t->role == Role::Temporary) {
      long long e = 1;
      for (long long x : f.row) e *= x;
      rowBytes += e * dtypeBytes(computeType(t->type));
    }
  while (instances > 1 && instances * rowBytes > kStaticShared) instances /= 2;
  sz.tile = {requested.tile.empty() ? instances : requested.tile[0]};
  return sz;
}

std::optional<std::pair<size_t, size_t>> threadedDims(const std::vector<long long> &row, long long g) {
  long long all = 1;
  for (long long e : row) all *= e;
  if (g == all) return std::make_pair(size_t(0), row.size());
  long long p = 1;
  size_t i = row.size();
  while (i > 0 && p < g) p *= row[--i];
  if (p == g) return std::make_pair(i, row.size());
  p = 1, i = 0;
  while (i < row.size() && p < g) p *= row[i++];
  if (p == g) return std::make_pair(size_t(0), i);
  return std::nullopt;
}

std::vector<std::vector<size_t>> parseCover(const MapDag &dag, const std::string &text) {
  std::vector<std::vector<size_t>> sets;
  std::vector<int> owner(dag.functions.size(), -1);
  auto bad = [&](const std::string &why) -> std::vector<std::vector<size_t>> { throw UsageError("--fusion-cover " + text + ": " + why); };
  std::string item;
  std::vector<size_t> set;
  auto endName = [&] {
    if (item.empty()) return;
    size_t f = dag.functions.size();
    for (size_t i = 0; i < dag.functions.size(); ++i)
      if (dag.functions[i].name == item) f = i;
    if (f == dag.functions.size()) bad("no function " + item + " (the map has f0 to f" + std::to_string(dag.functions.size() - 1) + ")");
    if (owner[f] >= 0) bad(item + " is in two sets");
    owner[f] = (int)sets.size();
    set.push_back(f);
    item.clear();
  };
  for (char c : text + ",") {
    if (c == ' ') continue;
    if (c == '+' || c == ',') endName();
    else item += c;
    if (c == ',' && !set.empty()) {
      // A set's functions run in the order given where every edge inside the set goes forward
      // in it (a linearization: the search's, with the least live intermediates), else in
      // program order.
      std::map<size_t, size_t> at;
      for (size_t i = 0; i < set.size(); ++i) at[set[i]] = i;
      bool forward = true;
      for (const auto &e : dag.edges)
        if (at.count(e.from) && at.count(e.to) && at[e.from] > at[e.to]) forward = false;
      if (!forward) {
        std::string names;
        for (size_t f : set) names += (names.empty() ? "" : "+") + dag.functions[f].name;
        spdlog::warn("--fusion-cover {}: {} is not an order that every edge inside it follows; it runs in program order "
                     "(and threads[..] is read in that order)", text, names);
        std::sort(set.begin(), set.end());
      }
      sets.push_back(set);
      set.clear();
    }
  }
  for (size_t f = 0; f < owner.size(); ++f)
    if (owner[f] < 0) bad(dag.functions[f].name + " is in no set");
  // Convex: no path leaves a set and re-enters it (the candidates' test).
  for (const auto &given : sets) {
    std::vector<size_t> s = given;
    std::sort(s.begin(), s.end()); // (the candidates' own order)
    auto candidates = fusionCandidates(dag, s.size());
    if (s.size() > 1 && std::find(candidates.begin(), candidates.end(), s) == candidates.end()) {
      std::string names;
      for (size_t f : s) names += (names.empty() ? "" : "+") + dag.functions[f].name;
      bad(names + " is not a fusible set (connected, and no path leaving it re-enters it)");
    }
  }
  // The sets in an order every edge follows (Kahn's), else a cycle.
  std::vector<std::set<size_t>> after(sets.size());
  std::vector<int> before(sets.size(), 0);
  for (const auto &e : dag.edges) {
    size_t a = (size_t)owner[e.from], b = (size_t)owner[e.to];
    if (a != b && after[a].insert(b).second) ++before[b];
  }
  std::vector<std::vector<size_t>> ordered;
  std::vector<bool> done(sets.size(), false);
  while (ordered.size() < sets.size()) {
    size_t next = sets.size();
    for (size_t i = 0; i < sets.size() && next == sets.size(); ++i)
      if (!done[i] && before[i] == 0) next = i;
    if (next == sets.size()) bad("the sets depend on each other both ways (no order runs them)");
    done[next] = true;
    ordered.push_back(sets[next]);
    for (size_t b : after[next]) --before[b];
  }
  return ordered;
}

std::vector<std::vector<size_t>> fusionCandidates(const MapDag &dag, size_t k) {
  size_t n = dag.functions.size();
  // reach[a][b]: a path from a to b (one edge or more).
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  std::vector<std::set<size_t>> adjacent(n);
  for (const auto &e : dag.edges) {
    reach[e.from][e.to] = true;
    adjacent[e.from].insert(e.to);
    adjacent[e.to].insert(e.from);
  }
  for (size_t m = 0; m < n; ++m)
    for (size_t a = 0; a < n; ++a)
      for (size_t b = 0; b < n; ++b)
        if (reach[a][m] && reach[m][b]) reach[a][b] = true;
  auto convex = [&](const std::vector<size_t> &set) {
    std::set<size_t> in(set.begin(), set.end());
    for (size_t x = 0; x < n; ++x) {
      if (in.count(x)) continue;
      bool from = false, to = false;
      for (size_t m : set) from = from || reach[m][x], to = to || reach[x][m];
      if (from && to) return false;
    }
    return true;
  };
  // Connected sets grown one neighbour at a time from each function.
  std::set<std::vector<size_t>> seen, frontier;
  for (size_t f = 0; f < n; ++f) frontier.insert({f});
  while (!frontier.empty()) {
    std::set<std::vector<size_t>> next;
    for (const auto &set : frontier) {
      if (!seen.insert(set).second || set.size() >= k) continue;
      for (size_t m : set)
        for (size_t x : adjacent[m]) {
          if (std::find(set.begin(), set.end(), x) != set.end()) continue;
          std::vector<size_t> grown = set;
          grown.insert(std::upper_bound(grown.begin(), grown.end(), x), x);
          if (!seen.count(grown)) next.insert(grown);
        }
    }
    frontier = std::move(next);
  }
  std::vector<std::vector<size_t>> out;
  for (const auto &set : seen)
    if (convex(set)) out.push_back(set);
  std::stable_sort(out.begin(), out.end(), [](const auto &a, const auto &b) { return a.size() < b.size(); });
  return out;
}

std::string writeFusionCandidates(const MapDag &dag, const std::vector<std::vector<size_t>> &candidates, size_t k) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "polyk" << YAML::Value << "fusion/1";
  out << YAML::Key << "name" << YAML::Value << dag.program;
  out << YAML::Key << "functions" << YAML::Value << YAML::BeginSeq;
  for (const auto &f : dag.functions) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << f.name;
    out << YAML::Key << "source" << YAML::Value << YAML::DoubleQuoted << f.source;
    out << YAML::Key << "statements" << YAML::Value << YAML::Flow << f.statements;
    out << YAML::Key << "output" << YAML::Value << f.output;
    out << YAML::Key << "row" << YAML::Value << YAML::Flow << f.row;
    out << YAML::Key << "threads_per_instance" << YAML::Value << YAML::Flow << f.granularities;
    out << YAML::Key << "reads" << YAML::Value << YAML::Flow << f.reads << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::Key << "edges" << YAML::Value << YAML::BeginSeq;
  for (const auto &e : dag.edges)
    out << YAML::Flow << YAML::BeginSeq << dag.functions[e.from].name << dag.functions[e.to].name << e.tensor << YAML::EndSeq;
  out << YAML::EndSeq;
  out << YAML::Key << "max_size" << YAML::Value << k;
  out << YAML::Key << "candidates" << YAML::Value << YAML::BeginSeq;
  for (const auto &c : candidates) {
    out << YAML::Flow << YAML::BeginSeq;
    for (size_t m : c) out << dag.functions[m].name;
    out << YAML::EndSeq;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

} // namespace polyk
