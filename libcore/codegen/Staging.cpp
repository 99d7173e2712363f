// Shared-memory staging in the generated code (Staging.h).
#include "Staging.h"

#include <isl/aff.h>

namespace polyk::codegen {

std::string sharedName(const std::string &t) { return "polyk_sh_" + t; }
std::string offsetName(const std::string &t, size_t d) { return "polyk_o_" + t + "_" + std::to_string(d); }
std::string nextOffsetName(const std::string &t, size_t d) { return "polyk_n_" + t + "_" + std::to_string(d); }
std::string buffersName(const std::string &t) { return "polyk_shb_" + t; }

namespace {

std::string threadId(Dialect d) {
  return d == Dialect::Cuda ? "(polyk_idx)((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x)" : "0";
}

long long blockThreads(const KernelConfig &kc) { return (long long)kc.block[0] * kc.block[1] * kc.block[2]; }

/// How one tile is copied: its element groups of `lanes` consecutive elements of the innermost
/// dim (4: one float4), and, for the prefetch, each thread's share of them (`perThread`).
struct CopyShape {
  long long groups = 0;
  long long perThread = 0;
};

CopyShape copyShape(const SharedTile &t, int lanes, long long threads) {
  CopyShape c;
  c.groups = 1;
  for (size_t i = 0; i < t.size.size(); ++i) c.groups *= i + 1 == t.size.size() ? t.size[i] / lanes : t.size[i];
  c.perThread = (c.groups + threads - 1) / threads;
  return c;
}

/// Vectors of 4 f32 where isl shows the tile's first element along the innermost dim is a
/// multiple of 4 at every point (the whole box then takes whole aligned vectors, each wholly
/// inside or outside the tensor, given its innermost extent is a multiple of 4 and its base
/// 16-byte aligned; both checked at run time where they are not known: `runtime`).
bool vectorCopy(const SharedTile &t, const TensorDecl &tensor, Dialect d, std::string *runtime) {
  size_t n = t.size.size();
  bool ok = d == Dialect::Cuda && tensor.type == DType::F32 && t.size[n - 1] % 4 == 0 &&
            (!tensor.shape[n - 1].param.empty() || tensor.shape[n - 1].value % 4 == 0);
  if (ok) {
    isl::aff first = t.offset.get_at((int)n - 1);
    isl::val c = first.get_constant_val();
    ok = quadAligned(first) && c.is_int() && c.get_num_si() % 4 == 0;
  }
  if (ok && runtime) {
    *runtime = "((uintptr_t)" + t.tensor + " & 15) == 0";
    if (!tensor.shape[n - 1].param.empty()) *runtime += " && " + tensor.shape[n - 1].param + " % 4 == 0";
  }
  return ok;
}

/// The element group `rest` of tile t's copy: lines setting its place in the copy (x0, x1, ...)
/// and, with `offset`, in the tensor (g0, g1, ...); `cond` (inside the tensor), `global` and
/// `local` (the indices in the tensor and in the copy). The place in the copy is unsigned 32-bit
/// (a tile's elements fit): nvcc divides it by the constant extents in a few instructions, where
/// 64-bit polyk_idx took tens an element (a conv's copies ran about as many instructions as its
/// FMAs).
struct GroupParts {
  std::string coords, cond, global, local;
  std::string outer; // cond without the innermost dim (a run's elements are checked one by one)
};

GroupParts groupParts(const SharedTile &t, const TensorDecl &tensor, int lanes, const std::function<std::string(size_t)> &offset,
                      const std::string &in) {
  size_t n = t.size.size();
  GroupParts p;
  std::vector<size_t> order = t.copyOrder();
  for (size_t i : order) {
    std::string x = "x" + std::to_string(i), g = "g" + std::to_string(i);
    long long extent = i + 1 == n ? t.size[i] / lanes : t.size[i];
    std::string scaled = i + 1 == n && lanes > 1 ? " * " + std::to_string(lanes) : "";
    if (i != order.back()) p.coords += in + "const unsigned " + x + " = (rest % " + std::to_string(extent) + "u)" + scaled + ";\n" + in + "rest /= " + std::to_string(extent) + "u;\n";
    else p.coords += in + "const unsigned " + x + " = rest" + scaled + ";\n";
    if (offset) p.coords += in + "const polyk_idx " + g + " = " + offset(i) + " + (polyk_idx)" + x + ";\n";
  }
  for (size_t i = 0; i < n; ++i) {
    std::string x = "x" + std::to_string(i), g = "g" + std::to_string(i);
    p.cond += std::string(i ? " && " : "") + "0 <= " + g + " && " + g + " < " + tensor.shape[i].str();
    if (i + 1 < n) p.outer = p.cond;
    p.global = i == 0 ? g : "(" + p.global + ") * " + tensor.shape[i].str() + " + " + g;
    p.local += std::string(i ? " + " : "") + x + (t.stride[i] == 1 ? "" : " * " + std::to_string(t.stride[i]));
  }
  return p;
}

/// The copy keeps the tensor's rows, and they start 16-byte aligned (no row padded to an odd
/// stride): a group of 4 elements is stored as one float4.
bool alignedRows(const SharedTile &t) {
  bool aligned = t.stride.back() == 1;
  for (size_t i = 0; i + 1 < t.size.size(); ++i) aligned = aligned && t.stride[i] % 4 == 0;
  return aligned;
}

/// Element k of a group of 4 at `local` in the copy (rows padded, or the copy in another order).
std::string laneIndex(const SharedTile &t, const std::string &local, int k) {
  long long step = t.stride.back();
  return local + " + " + std::to_string(k * step);
}

std::string paddingValue(const TensorDecl &tensor, Dialect d) {
  return tensor.padding ? storeValue(d, tensor.type, "(" + std::string(computeCType(tensor.type)) + ")(" + *tensor.padding + ")") : "";
}

std::string prefetchReg(const SharedTile &t) { return "polyk_pf_" + t.tensor; }

/// The prefetch's register of element group u (lanes 1 or 4) of a tile whose registers are
/// float4s (`vectors`) or elements; u < 0: the mapped C's loop variable `u` (elements).
std::string regOf(const SharedTile &t, bool vectors, int lanes, long long u) {
  if (u < 0) return prefetchReg(t) + "[u]";
  if (!vectors || lanes == 4) return prefetchReg(t) + "[" + std::to_string(u) + "]";
  return prefetchReg(t) + "[" + std::to_string(u / 4) + "]." + "xyzw"[u % 4];
}

/// Each thread's groups of the copy, unrolled here in CUDA (their registers are named by
/// constants); in the mapped C, where one thread copies the whole tile, a loop (u = -1 for the
/// body). `body(u, in)` prints group u's code given `rest`.
std::string eachGroup(const SharedTile &t, int lanes, long long threads, const std::string &in, Dialect d,
                      const std::function<std::string(long long, const std::string &)> &body) {
  CopyShape c = copyShape(t, lanes, threads);
  if (d == Dialect::C)
    return in + "for (polyk_idx u = 0; u < " + std::to_string(c.groups) + "; ++u) {\n" + in + "  unsigned rest = (unsigned)u;\n" + body(-1, in + "  ") +
           in + "}\n";
  std::string o;
  for (long long u = 0; u < c.perThread; ++u) {
    o += in + "{\n" + in + "  unsigned rest = (unsigned)polyk_tid + " + std::to_string(u * threads) + "u;\n";
    bool guard = (u + 1) * threads > c.groups;
    if (guard) o += in + "  if (rest < " + std::to_string(c.groups) + ") {\n";
    o += body(u, in + (guard ? "    " : "  "));
    if (guard) o += in + "  }\n";
    o += in + "}\n";
  }
  return o;
}

/// The loads of a tile's copy into the prefetch registers, its first element in `offset`.
std::string loadGroups(const SharedTile &t, const TensorDecl &tensor, bool vectors, int lanes, long long threads,
                       const std::function<std::string(size_t)> &offset, const std::string &in, Dialect d) {
  std::string padding = paddingValue(tensor, d);
  return eachGroup(t, lanes, threads, in, d, [&](long long u, const std::string &at) {
    GroupParts p = groupParts(t, tensor, lanes, offset, at);
    std::string reg = regOf(t, vectors, lanes, u), source = t.tensor + "[" + p.global + "]";
    if (lanes == 4) {
      std::string load = "*(const float4 *)&" + source;
      if (tensor.padding)
        return p.coords + at + reg + " = " + p.cond + " ? " + load + " : make_float4(" + padding + ", " + padding + ", " + padding + ", " +
               padding + ");\n";
      return p.coords + at + "if (" + p.cond + ") " + reg + " = " + load + ";\n";
    }
    if (tensor.padding) return p.coords + at + reg + " = " + p.cond + " ? " + source + " : " + padding + ";\n";
    return p.coords + at + "if (" + p.cond + ") " + reg + " = " + source + ";\n";
  });
}

/// The prefetch registers stored into the tile's copy (elements outside the tensor, which no
/// read takes, hold whatever the registers held).
std::string storeGroups(const SharedTile &t, const TensorDecl &tensor, bool vectors, int lanes, long long threads, const std::string &in,
                        Dialect d) {
  return eachGroup(t, lanes, threads, in, d, [&](long long u, const std::string &at) {
    GroupParts p = groupParts(t, tensor, lanes, nullptr, at);
    std::string reg = regOf(t, vectors, lanes, u);
    if (lanes == 1) return p.coords + at + sharedName(t.tensor) + "[" + p.local + "] = " + reg + ";\n";
    if (alignedRows(t)) return p.coords + at + "*(float4 *)&" + sharedName(t.tensor) + "[" + p.local + "] = " + reg + ";\n";
    std::string o = p.coords;
    for (int k = 0; k < 4; ++k) o += at + sharedName(t.tensor) + "[" + laneIndex(t, p.local, k) + "] = " + reg + "." + "xyzw"[k] + ";\n";
    return o;
  });
}

/// The registers tile t's prefetch takes: float4s where its copy can be vectorised (the scalar
/// copy then uses their components), else elements.
struct PrefetchRegs {
  bool vectors = false;
  long long count = 0; // registers (float4s or elements)
  long long words = 0; // 32-bit words
};

PrefetchRegs prefetchRegs(const Scop &s, const SharedTile &t, long long threads) {
  const TensorDecl &tensor = *s.tensor(t.tensor);
  PrefetchRegs r;
  r.vectors = vectorCopy(t, tensor, Dialect::Cuda, nullptr);
  r.count = copyShape(t, r.vectors ? 4 : 1, threads).perThread;
  r.words = r.vectors ? 4 * r.count : r.count * ((dtypeBytes(tensor.type) + 3) / 4);
  return r;
}

} // namespace

void planPrefetch(const Scop &s, Staging &st, const KernelConfig &kc, const std::string &mode) {
  st.prefetch = st.async = false;
  st.nextOffset.clear();
  if (st.tiles.empty() || mode == "off") return;
  long long words = 0, bytes = 0;
  bool asyncSizes = true;
  for (const auto &t : st.tiles) {
    words += prefetchRegs(s, t, blockThreads(kc)).words;
    int b = dtypeBytes(s.tensor(t.tensor)->type);
    bytes += 2 * ((t.elements() + 3) / 4 * 4) * b;
    asyncSizes = asyncSizes && (b == 4 || b == 8);
  }
  bool async = mode == "async" || words > kPrefetchWords;
  if (async && (bytes > st.budget || !asyncSizes)) return;
  // The prefix with its innermost reduced tile member that has a next value one further (those
  // inside it have one value: the filter's whole window): a next tile of the same block must exist
  // for some instance (a window reduction's one tile has none).
  isl::space space = st.tiles.front().offset.space().domain();
  isl::union_set points = st.prefix.range();
  int dims = (int)isl_space_dim(space.get(), isl_dim_set);
  for (int m = dims - 1; m >= dims - (int)st.reducedMembers && m >= 0; --m) {
    isl_multi_aff *step = isl_multi_aff_identity(isl_space_map_from_set(space.copy()));
    step = isl_multi_aff_set_at(step, m, isl_aff_add_constant_si(isl_multi_aff_get_at(step, m), 1));
    isl::multi_aff shift = isl::manage(step);
    if (isl::union_map(isl::manage(isl_map_from_multi_aff(shift.copy()))).intersect_domain(points).intersect_range(points).is_empty())
      continue;
    for (const auto &t : st.tiles) st.nextOffset.push_back(t.offset.pullback(shift));
    (async ? st.async : st.prefetch) = true;
    return;
  }
}

namespace {

/// The elements of one copy of tile t as declared: with two copies (async), each a whole number of
/// 16-byte vectors, so the second is aligned too.
long long declaredElements(const Staging &st, const SharedTile &t) { return st.async ? (t.elements() + 3) / 4 * 4 : t.elements(); }

} // namespace

long long stagedBytes(const Scop &s, const Staging &st) {
  long long bytes = 0;
  for (const auto &t : st.tiles) {
    long long b = (st.async ? 2 : 1) * declaredElements(st, t) * dtypeBytes(s.tensor(t.tensor)->type);
    bytes += (b + 15) / 16 * 16; // (each array 16-byte aligned)
  }
  return bytes;
}

long long dynamicShared(const Scop &s, const Staging &st) {
  long long bytes = stagedBytes(s, st);
  return bytes > kStaticShared ? bytes : 0;
}

std::string stagingDecls(const Scop &s, const Staging &st, Dialect d, const KernelConfig &kc) {
  std::string o;
  bool cuda = d == Dialect::Cuda;
  // Over the static limit, the copies are carved out of the kernel's dynamic shared memory, which
  // its launcher sizes (dynamicShared).
  const bool dynamic = cuda && dynamicShared(s, st) > 0;
  if (dynamic) o += "  extern __shared__ __align__(16) unsigned char polyk_dynamic_shared[];\n";
  long long offset = 0;
  for (const auto &t : st.tiles) {
    const TensorDecl &tensor = *s.tensor(t.tensor);
    long long elements = declaredElements(st, t);
    std::string type = cuda ? cudaStorageType(tensor.type) : cStorageType(tensor.type), n = std::to_string(elements);
    std::string shared = cuda ? "__shared__ __align__(16) " : "";
    std::string at = "(polyk_dynamic_shared + " + std::to_string(offset) + ")";
    offset += ((st.async ? 2 : 1) * elements * dtypeBytes(tensor.type) + 15) / 16 * 16;
    if (st.async)
      o += "  " + (dynamic ? type + " (*" + buffersName(t.tensor) + ")[" + n + "] = (" + type + " (*)[" + n + "])" + at
                           : shared + type + " " + buffersName(t.tensor) + "[2][" + n + "]") +
           ";\n  " + type + " *" + sharedName(t.tensor) + " = " + buffersName(t.tensor) + "[0];\n  polyk_idx ";
    else
      o += "  " + (dynamic ? type + " *const " + sharedName(t.tensor) + " = (" + type + " *)" + at : shared + type + " " + sharedName(t.tensor) + "[" + n + "]") +
           ";\n  polyk_idx ";
    for (size_t i = 0; i < t.size.size(); ++i) o += (i ? ", " : "") + offsetName(t.tensor, i);
    o += ";\n";
  }
  if (st.async) {
    o += "  polyk_idx ";
    for (const auto &t : st.tiles)
      for (size_t i = 0; i < t.size.size(); ++i) o += (&t == &st.tiles.front() && i == 0 ? "" : ", ") + nextOffsetName(t.tensor, i) + " = 0";
    return o + ";\n  bool polyk_pf = false;\n  unsigned polyk_buf = 0;\n";
  }
  if (!st.prefetch) return o;
  o += "  const polyk_idx polyk_tid = " + threadId(d) + ";\n  bool polyk_pf = false;\n";
  for (const auto &t : st.tiles) {
    // (The mapped C's one thread holds the whole tile.)
    PrefetchRegs r = cuda ? prefetchRegs(s, t, blockThreads(kc)) : PrefetchRegs{false, copyShape(t, 1, 1).groups, 0};
    DType type = s.tensor(t.tensor)->type;
    o += "  polyk_idx ";
    for (size_t i = 0; i < t.size.size(); ++i) o += (i ? ", " : "") + nextOffsetName(t.tensor, i) + " = 0";
    o += ";\n  " + std::string(r.vectors ? "float4" : cuda ? cudaStorageType(type) : cStorageType(type)) + " " + prefetchReg(t) + "[" +
         std::to_string(r.count) + "]" + (cuda ? " = {}" : " = {0}") + ";\n";
  }
  return o;
}

namespace {

/// `const bool polyk_have = ...;`: whether the tiles the previous mark prefetched (polyk_n_*) are
/// this mark's (polyk_o_*).
std::string haveCheck(const Staging &st, const std::string &pad) {
  std::string o = pad + "  const bool polyk_have = polyk_pf";
  for (const auto &t : st.tiles)
    for (size_t i = 0; i < t.size.size(); ++i) o += " && " + nextOffsetName(t.tensor, i) + " == " + offsetName(t.tensor, i);
  return o + ";\n";
}

/// The copy with prefetch (Staging::prefetch): where the registers hold this mark's tiles (the
/// previous mark loaded the tile that follows it, and it is this one), store them; else load,
/// then store. After the barrier, load the next tiles.
std::string prefetchingCopy(const Scop &s, const Staging &st, const KernelConfig &kc, Dialect d, const std::string &offsets,
                            const std::string &nextOffsets, const std::string &pad) {
  bool cuda = d == Dialect::Cuda;
  long long threads = cuda ? blockThreads(kc) : 1;
  std::string o = pad + "{ /* staged in shared memory: ";
  for (const auto &t : st.tiles) o += t.tensor + (&t == &st.tiles.back() ? "" : ", ");
  o += " (prefetched during the previous tile's compute) */\n" + offsets;
  o += haveCheck(st, pad);
  std::string loads, next;
  for (const auto &t : st.tiles) {
    const TensorDecl &tensor = *s.tensor(t.tensor);
    std::string runtime;
    bool vectors = vectorCopy(t, tensor, d, &runtime);
    auto current = [&](size_t i) { return offsetName(t.tensor, i); };
    auto following = [&](size_t i) { return nextOffsetName(t.tensor, i); };
    auto copyIn = [&](int lanes, const std::string &in) {
      return in + "if (!polyk_have) {\n" + loadGroups(t, tensor, vectors, lanes, threads, current, in + "  ", d) + in + "}\n" +
             storeGroups(t, tensor, vectors, lanes, threads, in, d);
    };
    if (vectors) {
      o += pad + "  if (" + runtime + ") {\n" + copyIn(4, pad + "    ") + pad + "  } else {\n" + copyIn(1, pad + "    ") + pad + "  }\n";
      next += pad + "  if (" + runtime + ") {\n" + loadGroups(t, tensor, vectors, 4, threads, following, pad + "    ", d) + pad +
              "  } else {\n" + loadGroups(t, tensor, vectors, 1, threads, following, pad + "    ", d) + pad + "  }\n";
    } else {
      o += copyIn(1, pad + "  ");
      next += loadGroups(t, tensor, vectors, 1, threads, following, pad + "  ", d);
    }
  }
  o += pad + "}\n" + (cuda ? pad + "__syncthreads();\n" : "");
  o += pad + "{ /* the next tile's copy, in flight during the compute */\n" + nextOffsets + next + pad + "  polyk_pf = true;\n" + pad + "}\n";
  return o;
}

/// Tile t copied into `target` (an array of its elements), the copy starting at `offset`: the
/// block's threads take its element groups in turn, those inside the tensor by cp.async (4 or 8
/// bytes, or 16 for a group of 4 f32 where the copy's rows are aligned), the others hold the
/// padding or are skipped. The mapped C copies them plainly.
std::string asyncTile(const SharedTile &t, const TensorDecl &tensor, int lanes, const std::function<std::string(size_t)> &offset,
                      const std::string &target, const std::string &in, Dialect d, long long threads, bool run = false) {
  bool cuda = d == Dialect::Cuda;
  std::string o = in + "for (unsigned e = " + threadId(d) + "; e < " + std::to_string(copyShape(t, lanes, 1).groups) + "; e += " +
                  std::to_string(cuda ? threads : 1) + ") {\n" + in + "  unsigned rest = e;\n";
  GroupParts p = groupParts(t, tensor, lanes, offset, in + "  ");
  o += p.coords;
  std::string padding = paddingValue(tensor, d), type = cuda ? cudaStorageType(tensor.type) : cStorageType(tensor.type);
  std::string bytes = std::to_string(dtypeBytes(tensor.type));
  std::vector<std::string> lhs, rhs; // the elements copied
  for (int k = 0; k < lanes; ++k) {
    lhs.push_back(target + "[" + (lanes == 1 ? p.local : laneIndex(t, p.local, k)) + "]");
    rhs.push_back(t.tensor + "[" + p.global + (k ? " + " + std::to_string(k) : "") + "]");
  }
  std::string copy;
  auto one = [&](int k) { return cuda ? "polyk::cp_async<" + bytes + ">(&" + lhs[k] + ", &" + rhs[k] + "); " : lhs[k] + " = " + rhs[k] + "; "; };
  if (run) {
    // A run of `lanes` elements along the innermost dim, each checked against the tensor's row
    // (rows of any length; the run's place and outer bounds computed once).
    std::string last = "g" + std::to_string(t.size.size() - 1), extent = tensor.shape.back().str();
    o += in + "  if (" + (p.outer.empty() ? "true" : p.outer) + ") {\n";
    for (int k = 0; k < lanes; ++k) {
      std::string at = k ? "(" + last + " + " + std::to_string(k) + ")" : last;
      o += in + "    if (0 <= " + at + " && " + at + " < " + extent + ") { " + one(k) + "}";
      o += tensor.padding ? " else { " + lhs[k] + " = " + padding + "; }\n" : "\n";
    }
    o += in + "  }";
    if (tensor.padding) {
      o += " else { ";
      for (int k = 0; k < lanes; ++k) o += lhs[k] + " = " + padding + "; ";
      o += "}";
    }
    return o + "\n" + in + "}\n";
  }
  if (!cuda)
    for (int k = 0; k < lanes; ++k) copy += one(k);
  else if (lanes == 4 && alignedRows(t)) copy = "polyk::cp_async<16>(&" + lhs[0] + ", &" + rhs[0] + "); ";
  else
    for (int k = 0; k < lanes; ++k) copy += one(k);
  o += in + "  if (" + p.cond + ") { " + copy + "}";
  if (tensor.padding) {
    o += " else { ";
    for (int k = 0; k < lanes; ++k) o += lhs[k] + " = " + padding + "; ";
    o += "}";
  }
  return o + "\n" + in + "}\n";
}

/// The copy of Staging::async at a mark: switch to the copy the previous mark prefetched into;
/// where that is not this mark's tile, wait for it and copy this one; start the next tile's copy
/// into the other buffer; wait for this one's (the group before it).
std::string asyncCopy(const Scop &s, const Staging &st, const KernelConfig &kc, Dialect d, const std::string &offsets,
                      const std::string &nextOffsets, const std::string &pad) {
  bool cuda = d == Dialect::Cuda;
  std::string o = pad + "{ /* staged in shared memory: ";
  for (const auto &t : st.tiles) o += t.tensor + (&t == &st.tiles.back() ? "" : ", ");
  o += " (two copies: the next tile's copied asynchronously during the compute) */\n" + offsets;
  o += haveCheck(st, pad) + pad + "  if (polyk_pf) {\n" + pad + "    polyk_buf ^= 1u;\n";
  for (const auto &t : st.tiles) o += pad + "    " + sharedName(t.tensor) + " = " + buffersName(t.tensor) + "[polyk_buf];\n";
  o += pad + "  }\n";
  auto copies = [&](const std::function<std::string(const SharedTile &, size_t)> &offset, const std::function<std::string(const SharedTile &)> &target,
                    const std::string &in) {
    std::string c;
    for (const auto &t : st.tiles) {
      const TensorDecl &tensor = *s.tensor(t.tensor);
      auto at = [&](size_t i) { return offset(t, i); };
      std::string runtime;
      // Element by element: runs of 4 (or 2) along the innermost dim where the tile's extent there
      // allows, each element checked.
      int run = t.size.back() % 4 == 0 ? 4 : t.size.back() % 2 == 0 ? 2 : 1;
      auto scalar = [&](const std::string &indent) { return asyncTile(t, tensor, run, at, target(t), indent, d, blockThreads(kc), run > 1); };
      if (!vectorCopy(t, tensor, d, &runtime)) {
        c += scalar(in);
        continue;
      }
      c += in + "if (" + runtime + ") {\n" + asyncTile(t, tensor, 4, at, target(t), in + "  ", d, blockThreads(kc)) + in + "} else {\n" +
           scalar(in + "  ") + in + "}\n";
    }
    return c;
  };
  o += pad + "  if (!polyk_have) {\n" + (cuda ? pad + "    polyk::cp_async_wait<0>();\n" : "");
  o += copies([](const SharedTile &t, size_t i) { return offsetName(t.tensor, i); }, [](const SharedTile &t) { return sharedName(t.tensor); },
              pad + "    ");
  o += pad + "  }\n" + (cuda ? pad + "  polyk::cp_async_commit();\n" : "");
  o += nextOffsets;
  o += copies([](const SharedTile &t, size_t i) { return nextOffsetName(t.tensor, i); },
              [](const SharedTile &t) { return buffersName(t.tensor) + "[polyk_buf ^ 1u]"; }, pad + "  ");
  if (cuda) o += pad + "  polyk::cp_async_commit();\n" + pad + "  polyk::cp_async_wait<1>();\n";
  o += pad + "  polyk_pf = true;\n" + pad + "}\n" + (cuda ? pad + "__syncthreads();\n" : "");
  return o;
}

} // namespace

/// Each staged tile copied into shared memory: the block's threads take its elements in turn
/// (consecutive threads, consecutive elements of the innermost dim), those outside the tensor
/// hold its padding or are skipped; in the mapped C, each thread copies the whole tile.
std::string stagingCopy(const Scop &s, const Staging &st, const KernelConfig &kc, Dialect d, const std::string &offsets,
                        const std::string &nextOffsets, int indent) {
  std::string pad(2 * indent, ' ');
  bool cuda = d == Dialect::Cuda;
  if (st.prefetch) return prefetchingCopy(s, st, kc, d, offsets, nextOffsets, pad);
  if (st.async) return asyncCopy(s, st, kc, d, offsets, nextOffsets, pad);
  std::string o = pad + "{ /* staged in shared memory: ";
  for (const auto &t : st.tiles) o += t.tensor + (&t == &st.tiles.back() ? "" : ", ");
  o += " */\n" + offsets;
  std::string tid = threadId(d);
  std::string threads = cuda ? std::to_string(blockThreads(kc)) : "1";
  for (const auto &t : st.tiles) {
    const TensorDecl &tensor = *s.tensor(t.tensor);
    std::string padding = paddingValue(tensor, d);
    // The copy loop, `lanes` consecutive elements of the innermost dim at a time (1, or 4 as one
    // float4 where vectorCopy holds).
    auto loop = [&](int lanes, const std::string &in) {
      std::string l = in + "for (unsigned e = " + tid + "; e < " + std::to_string(copyShape(t, lanes, 1).groups) + "; e += " + threads + ") {\n";
      l += in + "  unsigned rest = e;\n";
      GroupParts p = groupParts(t, tensor, lanes, [&](size_t i) { return offsetName(t.tensor, i); }, in + "  ");
      l += p.coords;
      std::string target = sharedName(t.tensor) + "[" + p.local + "]", source = t.tensor + "[" + p.global + "]";
      if (lanes == 1) {
        if (tensor.padding) l += in + "  " + target + " = " + p.cond + " ? " + source + " : " + padding + ";\n";
        else l += in + "  if (" + p.cond + ") " + target + " = " + source + ";\n";
      } else {
        std::string load = "*(const float4 *)&" + source;
        if (tensor.padding) l += in + "  const float4 v = " + p.cond + " ? " + load + " : make_float4(" + padding + ", " + padding + ", " + padding + ", " + padding + ");\n";
        else l += in + "  if (!(" + p.cond + ")) continue;\n" + in + "  const float4 v = " + load + ";\n";
        // (Rows padded against bank conflicts leave the copy's rows unaligned: four stores.)
        if (alignedRows(t)) l += in + "  *(float4 *)&" + target + " = v;\n";
        else
          for (int k = 0; k < 4; ++k)
            l += in + "  " + sharedName(t.tensor) + "[" + laneIndex(t, p.local, k) + "] = v." + "xyzw"[k] + ";\n";
      }
      return l + in + "}\n";
    };
    std::string runtime;
    if (!vectorCopy(t, tensor, d, &runtime)) {
      o += loop(1, pad + "  ");
      continue;
    }
    o += pad + "  if (" + runtime + ") {\n" + loop(4, pad + "    ") + pad + "  } else {\n" + loop(1, pad + "    ") + pad + "  }\n";
  }
  o += pad + "}\n";
  if (cuda) o += pad + "__syncthreads();\n";
  return o;
}

ReadOverride stagedReads(const Staging &st, bool assumeAligned) {
  return [&st, assumeAligned](const ScopStatement &stmt, size_t k, const std::string &lvalue) -> std::string {
    if (!st.reads(stmt.name)) return lvalue;
    const SharedTile *t = st.tile(isl::map(islCtx(), stmt.reads[k]).range_tuple_id().name());
    if (!t) return lvalue;
    std::string index;
    for (size_t d = 0; d < t->size.size(); ++d)
      index += std::string(d ? " + " : "") + "(" + subscriptC(stmt.reads[k], d) + " - " + offsetName(t->tensor, d) + ")" +
               (t->stride[d] == 1 ? "" : " * " + std::to_string(t->stride[d]));
    std::string copy = sharedName(t->tensor);
    if (assumeAligned) copy = "((decltype(" + copy + "))__builtin_assume_aligned(" + copy + ", 16))";
    return copy + "[" + index + "]";
  };
}

} // namespace polyk::codegen
