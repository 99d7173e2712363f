// Fused map kernels (polyk-schedule --fusion=shared; Fousek et al.). A block takes P instances
// (the tile); each function of the map (MapDag: a statement's init, update and store) runs on its
// own g threads per instance (`kernel[k] -> threads[..]`): its points, an instance's row of g
// threaded points, P g in all, are dealt to the block's B threads in turn (point e to thread
// e mod B), so consecutive threads take consecutive elements of a row and of the next instance's
// (coalesced). A thread walks the dims of the row that are not threaded, and for each point runs
// the init, the reduced loops of the update and the store, its accumulator a register. The
// intermediates that only the kernel touches (polyk-bind's `shared`) are the block's rows in
// shared memory, and a barrier separates two functions.
#include "MapKernels.h"

#include "EmitParts.h"

#include "polyk/Diagnostics.h"
#include "polyk/Isl.h"
#include "polyk/MapFusion.h"
#include "polyk/MapSearch.h"
#include "polyk/Sizes.h"
#include "polyk/Types.h"

#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/set.h>
#include <isl/union_set.h>

#include <algorithm>
#include <map>
#include <set>

namespace polyk::codegen {

bool mapBlockKernel(const Scop &s, int k) {
  auto sizes = parseSizes(s.sizes, &s.at.sizes);
  auto it = sizes.find(k);
  return it != sizes.end() && !it->second.threads.empty();
}

namespace {

std::string list(const std::vector<long long> &v) {
  std::string o;
  for (size_t i = 0; i < v.size(); ++i) o += (i ? " x " : "") + std::to_string(v[i]);
  return o;
}

} // namespace

std::string offsetMapBlocks(const std::string &code) {
  size_t at = code.find(kMapBlockId);
  if (at == std::string::npos || code.find(kMapBlockId, at + 1) != std::string::npos)
    throw std::logic_error("a map kernel's code reads its block other than once");
  return code.substr(0, at) + "(" + kMapBlockId + " + polyk_boff)" + code.substr(at + std::string(kMapBlockId).size());
}

std::string mapBlockCode(const Scop &s, int k, Dialect d) {
  const KernelConfig &kc = s.kernels.at(k);
  const KernelSizes sz = parseSizes(s.sizes, &s.at.sizes).at(k);
  const long long P = sz.tile.at(0), B = kc.block[0];
  MapDag dag = mapDag(s);
  // The kernel's functions, in the order its schedule runs them (a searched cover's linearization,
  // parseCover): the order of the filters that hold one statement each.
  std::map<std::string, size_t> position;
  isl::schedule bound = readIslSchedule(s.schedule);
  auto visit = [](isl_schedule_node *node, void *user) -> isl_bool {
    if (isl_schedule_node_get_type(node) != isl_schedule_node_filter) return isl_bool_true;
    isl_union_set *filter = isl_schedule_node_filter_get_filter(node);
    if (isl_union_set_n_set(filter) == 1) {
      isl_set *one = isl_set_from_union_set(filter);
      auto &pos = *static_cast<std::map<std::string, size_t> *>(user);
      pos.emplace(isl_set_get_tuple_name(one), pos.size());
      isl_set_free(one);
    } else {
      isl_union_set_free(filter);
    }
    return isl_bool_true;
  };
  isl_schedule_foreach_schedule_node_top_down(bound.get(), visit, &position);
  std::vector<MapFunction> mine;
  for (const auto &fn : dag.functions)
    if (std::find(kc.statements.begin(), kc.statements.end(), fn.statements.front()) != kc.statements.end()) mine.push_back(fn);
  auto at = [&](const MapFunction &fn) {
    auto it = position.find(fn.statements.front());
    return it == position.end() ? position.size() : it->second;
  };
  std::stable_sort(mine.begin(), mine.end(), [&](const MapFunction &a, const MapFunction &b) { return at(a) < at(b); });
  dag.functions = mine;
  if (dag.functions.size() != sz.threads.size())
    throw UsageError("kernel[" + std::to_string(k) + "] -> threads[..]: " + std::to_string(sz.threads.size()) + " counts for " +
                     std::to_string(dag.functions.size()) + " functions");
  const bool cuda = d == Dialect::Cuda;
  std::string o;
  // The block's rows of the intermediates, the thread's accumulators, and the inputs that every
  // instance reads, copied once (in their storage type; the last dim padded by one, so threads
  // reading down a column hit distinct banks).
  std::set<std::string> inputs;
  std::vector<std::string> rowNames;
  std::string copies;
  for (const auto &t : kc.shared) {
    const TensorDecl &td = *s.tensor(t);
    std::string dims;
    if (td.role == Role::Input) {
      inputs.insert(t);
      long long elements = 1;
      for (size_t i = 0; i < td.shape.size(); ++i) {
        long long e = td.shape[i].value + (i + 1 == td.shape.size() && td.shape.size() > 1 ? 1 : 0);
        dims += "[" + std::to_string(e) + "]";
        elements *= td.shape[i].value;
      }
      o += std::string("  ") + (cuda ? "__shared__ " : "") + (cuda ? cudaStorageType(td.type) : cStorageType(td.type)) + " " + t + "_sh" + dims + ";\n";
      std::string at, rest = "polyk_c";
      for (size_t i = td.shape.size(); i-- > 0;) {
        at = "[" + rest + (i ? " % " + std::to_string(td.shape[i].value) : "") + "]" + at;
        rest = "(" + rest + " / " + std::to_string(td.shape[i].value) + ")";
      }
      std::string loop = cuda ? "  for (polyk_idx polyk_c = threadIdx.x; polyk_c < " + std::to_string(elements) + "; polyk_c += " + std::to_string(B) + ")"
                              : "  for (polyk_idx polyk_c = 0; polyk_c < " + std::to_string(elements) + "; ++polyk_c)";
      copies += loop + " " + t + "_sh" + at + " = " + t + "[polyk_c];\n";
      continue;
    }
    rowNames.push_back(t);
  }
  // The rows, in one buffer as the search's allocation places them (allocateRows): each row live
  // from the function that writes it to the last that reads it, in the kernel's order (a barrier
  // separates two functions, so a row may take the bytes of one no longer read).
  if (!rowNames.empty()) {
    std::vector<long long> bytes, align;
    std::vector<std::pair<size_t, size_t>> life;
    for (const auto &t : rowNames) {
      const TensorDecl &td = *s.tensor(t);
      long long elements = 1;
      for (size_t i = 1; i < td.shape.size(); ++i) elements *= td.shape[i].value;
      long long width = dtypeBytes(computeType(td.type));
      bytes.push_back(elements * width), align.push_back(width);
      size_t first = dag.functions.size(), last = 0;
      for (size_t f = 0; f < dag.functions.size(); ++f)
        for (const auto &name : dag.functions[f].statements) {
          const ScopStatement &st = *s.statement(name);
          bool touches = writtenTensor(st) == t;
          for (const auto &r : st.reads) touches |= isl::map(islCtx(), r).range_tuple_id().name() == t;
          if (touches) first = std::min(first, f), last = std::max(last, f);
        }
      life.push_back({first, last});
    }
    auto [offsets, end] = allocateRows(bytes, life, align);
    o += std::string("  ") + (cuda ? "__shared__ __align__(16) unsigned char polyk_rows[" : "unsigned char polyk_rows[") + std::to_string(P * end) + "]" +
         (cuda ? "" : " __attribute__((aligned(16)))") + "; /* the rows, " + std::to_string(end) + " bytes an instance (allocateRows) */\n";
    for (size_t i = 0; i < rowNames.size(); ++i) {
      const TensorDecl &td = *s.tensor(rowNames[i]);
      std::string dims, T = computeCType(td.type);
      for (size_t j = 1; j < td.shape.size(); ++j) dims += "[" + std::to_string(td.shape[j].value) + "]";
      std::string type = dims.empty() ? T + " *" : T + " (*)" + dims;
      std::string decl = dims.empty() ? T + " *" + rowNames[i] + "_sh" : T + " (*" + rowNames[i] + "_sh)" + dims;
      o += "  " + decl + " = (" + type + ")(polyk_rows + " + std::to_string(P * offsets[i]) + ");\n";
    }
  }
  if (!copies.empty()) o += copies + (cuda ? "  __syncthreads();\n" : "");
  const std::set<std::string> rows(rowNames.begin(), rowNames.end());
  std::set<std::string> kept(kc.promoted.begin(), kc.promoted.end());
  kept.insert(rows.begin(), rows.end());
  for (const auto &t : kc.promoted) o += std::string("  ") + computeCType(s.tensor(t)->type) + " " + t + "_r;\n";
  o += "  const polyk_idx polyk_p0 = " + std::string(cuda ? kMapBlockId : "bx") + " * " + std::to_string(P) + ";\n";
  for (size_t f = 0; f < dag.functions.size(); ++f) {
    const MapFunction &fn = dag.functions[f];
    const long long g = sz.threads[f];
    // The function's points: its first statement's parallel dims after the instance.
    const ScopStatement &first = *s.statement(fn.statements.front());
    size_t par = 0;
    while (par < first.dims.size() && first.dims[par] == "parallel") ++par;
    std::map<std::string, MapBox> boxes; // (each statement's, once)
    for (const auto &name : fn.statements) boxes[name] = mapBox(*s.statement(name));
    const MapBox &box = boxes.at(first.name);
    std::vector<long long> row(box.extents.begin(), box.extents.begin() + (long)(par - 1));
    // Threaded: all of the row's dims, else its trailing dims (consecutive threads, consecutive
    // elements), else its leading ones, whose product is g.
    auto threaded = threadedDims(row, g); // dims [lo, hi) of the row are threaded
    if (!threaded)
      throw UsageError("kernel[" + std::to_string(k) + "] -> threads[..]: " + fn.name + "'s row is " + list(row) + "; " +
                       std::to_string(g) + " threads an instance take neither its leading nor its trailing dims");
    auto [lo, hi] = *threaded;
    std::string pad = "  ";
    o += pad + "/* " + fn.name + " (" + fn.output + ", row " + (row.empty() ? std::string("1") : list(row)) + "): " + std::to_string(g) +
         " thread" + (g == 1 ? "" : "s") + " an instance */\n";
    // Its statements' macros, the rows read from the block's copy.
    for (const auto &name : fn.statements) {
      std::string m = statementMacros(
          s, d, kept, [](const ScopStatement &st, const std::string &) -> std::string {
            throw std::logic_error("affine statement " + st.name + " of kind reduce");
          },
          [&](const ScopStatement &st) {
            const TensorDecl &acc = *s.tensor(writtenTensor(st));
            std::string id = reduceIdentity(*st.op, acc.type);
            if (kept.count(acc.name)) return acc.name + "_r" + (rows.count(acc.name) ? rowIndex(st.write, acc.shape.size()) : "") + " = " + id + ";";
            return acc.name + "[" + linearIndex(st.write, acc) + "] = " + storeValue(d, acc.type, id) + ";";
          },
          [&](const ScopStatement &st, size_t r, const std::string &lv) {
            // A read of a copied input: its element of the block's copy.
            isl::map a(islCtx(), st.reads[r]);
            std::string t = a.range_tuple_id().name();
            if (!inputs.count(t)) return lv;
            std::string at;
            for (size_t i = 0; i < s.tensor(t)->shape.size(); ++i) at += "[" + subscriptC(st.reads[r], i) + "]";
            return t + "_sh" + at;
          },
          name, {}, rows);
      for (const auto &t : rows) m = replaceWord(m, t + "_r", t + "_sh[(" + boxes.at(name).names[0] + ") - polyk_p0]");
      o += m;
    }
    std::string loop = cuda ? pad + "for (polyk_idx polyk_e = threadIdx.x; polyk_e < " + std::to_string(P * g) + "; polyk_e += " + std::to_string(B) + ") {\n"
                            : pad + "for (polyk_idx polyk_t = 0; polyk_t < " + std::to_string(B) + "; ++polyk_t)\n" + pad +
                                  "for (polyk_idx polyk_e = polyk_t; polyk_e < " + std::to_string(P * g) + "; polyk_e += " + std::to_string(B) + ") {\n";
    o += loop;
    std::string in = pad + "  ";
    o += in + "const polyk_idx polyk_p = polyk_p0 + polyk_e / " + std::to_string(g) + ";\n";
    o += in + "if (polyk_p < " + box.instances + ") {\n";
    std::string body = in + "  ";
    o += body + "polyk_idx polyk_q = polyk_e % " + std::to_string(g) + ";\n";
    std::vector<std::string> dim(row.size());
    for (size_t i = hi; i-- > lo;) {
      dim[i] = "polyk_d" + std::to_string(i);
      o += body + "const polyk_idx " + dim[i] + " = polyk_q % " + std::to_string(row[i]) + ";\n";
      o += body + "polyk_q /= " + std::to_string(row[i]) + ";\n";
    }
    o += body + "(void)polyk_q;\n";
    std::string at = body;
    for (size_t i = 0; i < row.size(); ++i) {
      if (i >= lo && i < hi) continue;
      dim[i] = "polyk_d" + std::to_string(i);
      o += (cuda ? at + "#pragma unroll\n" : "") + at + "for (polyk_idx " + dim[i] + " = 0; " + dim[i] + " < " + std::to_string(row[i]) + "; ++" + dim[i] + ") {\n";
      at += "  ";
    }
    for (const auto &name : fn.statements) {
      const MapBox &b = boxes.at(name);
      if (b.extents.size() < row.size())
        throw UsageError("--fusion=shared: statement " + name + " has fewer dims than its function's row");
      std::string args = "polyk_p";
      for (size_t i = 0; i < row.size(); ++i) args += ", " + dim[i];
      std::string inner = at;
      for (size_t r = row.size(); r < b.extents.size(); ++r) {
        std::string v = "polyk_r" + std::to_string(r);
        o += (cuda ? inner + "#pragma unroll\n" : "") + inner + "for (polyk_idx " + v + " = 0; " + v + " < " + std::to_string(b.extents[r]) + "; ++" + v + ")\n";
        inner += "  ";
        args += ", " + v;
      }
      o += inner + name + "(" + args + ");\n";
    }
    for (size_t i = 0; i < row.size(); ++i)
      if (i < lo || i >= hi) at.resize(at.size() - 2), o += at + "}\n";
    o += in + "}\n" + pad + "}\n";
    if (f + 1 < dag.functions.size() && cuda) o += pad + "__syncthreads();\n";
    for (const auto &name : fn.statements) o += "#undef " + name + "\n";
  }
  return o;
}

} // namespace polyk::codegen
