// Reading and printing the sizes map (see Sizes.h). Every entry is checked before isl enumerates
// its points: a map that is not a function of k, or whose k or values are out of range, would
// otherwise enumerate without end or overflow later.
#include "polyk/Sizes.h"

#include "polyk/Isl.h"

#include <isl/map.h>
#include <isl/set.h>
#include <algorithm>
#include <sstream>

namespace polyk {

std::map<int, KernelSizes> parseSizes(const std::string &text, const SourceLoc *where) {
  auto bad = [&](const std::string &message) {
    if (where) fail(*where, "sizes: " + message);
    throw UsageError("--sizes: " + message);
  };
  std::map<int, KernelSizes> out;
  if (text.empty()) return out;
  isl::union_map um;
  try {
    um = isl::union_map(islCtx(), text);
  } catch (const isl::exception &) {
  }
  if (um.is_null()) bad("isl cannot parse '" + text + "'");
  const std::string form =
      "expected entries 'kernel[k] -> tile[...]', 'kernel[k] -> block[...]', 'kernel[k] -> reduce[...]', 'kernel[k] -> vector[V]' (or vector[Vy, Vx]), 'kernel[k] -> time[T]', 'kernel[k] -> stream[C]', 'kernel[k] -> split[S]', 'kernel[k] -> mma[1]', 'kernel[k] -> shared[BYTES]' or 'kernel[k] -> threads[...]'";
  isl::map_list maps = um.get_map_list();
  for (int i = 0; i < (int)maps.size(); ++i) {
    isl::map m = maps.at(i);
    if (isl_map_dim(m.get(), isl_dim_param) != 0) bad("each entry must give fixed numbers");
    if (!isl_map_has_tuple_name(m.get(), isl_dim_in) || !isl_map_has_tuple_name(m.get(), isl_dim_out)) bad(form);
    std::string dom = m.domain_tuple_id().name(), ran = m.range_tuple_id().name();
    if (dom != "kernel" || (ran != "tile" && ran != "block" && ran != "reduce" && ran != "vector" && ran != "time" && ran != "stream" && ran != "split" && ran != "mma" && ran != "shared" && ran != "threads") || m.domain_tuple_dim() != 1 ||
        m.range_tuple_dim() < 1 || (ran == "vector" && m.range_tuple_dim() > 2) || ((ran == "time" || ran == "stream" || ran == "split" || ran == "mma" || ran == "shared") && m.range_tuple_dim() != 1))
      bad(form);
    if (m.range_tuple_dim() > 8) bad("at most 8 sizes per entry");
    isl::set w = m.wrap();
    if (isl_set_is_bounded(w.get()) != isl_bool_true || !m.is_single_valued())
      bad("each entry must give fixed numbers");
    // One map per space: several kernels' entries of one kind share it, a point each. Checked to
    // stay within range first, so enumerating the points stays small.
    const long long limit = ran == "vector" ? kMaxVector : ran == "time" ? kMaxTimeTile : ran == "stream" ? kMaxStream : ran == "split" ? kMaxSplit : ran == "mma" ? 1 : ran == "shared" ? kMaxShared : ran == "threads" ? 1024 : kMaxTile;
    std::string range = "{ kernel[k] -> " + ran + "[";
    for (unsigned d = 0; d < m.range_tuple_dim(); ++d) range += std::string(d ? ", " : "") + "v" + std::to_string(d);
    range += "] : 0 <= k < " + std::to_string(kMaxKernels);
    for (unsigned d = 0; d < m.range_tuple_dim(); ++d)
      range += " and 1 <= v" + std::to_string(d) + " <= " + std::to_string(limit);
    range += " }";
    if (!m.is_subset(isl::map(islCtx(), range)))
      bad(ran + " sizes must be between 1 and " + std::to_string(limit) +
          ", for kernels 0 to " + std::to_string(kMaxKernels - 1));
    std::string error;
    w.foreach_point([&](isl::point pt) {
      if (!error.empty()) return;
      int k = (int)pointCoordinate(pt, 0);
      std::vector<long long> v;
      for (unsigned d = 0; d < m.range_tuple_dim(); ++d) v.push_back(pointCoordinate(pt, 1 + d));
      if (!out.count(k)) out[k].vector = out[k].vectorY = 0; // not given
      if (ran == "time" || ran == "stream" || ran == "split" || ran == "mma" || ran == "shared") {
        long long &slot = ran == "time" ? out[k].time : ran == "stream" ? out[k].stream : ran == "split" ? out[k].split : ran == "mma" ? out[k].mma : out[k].shared;
        if (slot != 0) error = "kernel[" + std::to_string(k) + "] has two " + ran + " entries";
        slot = v[0];
        return;
      }
      if (ran == "vector") {
        if (out[k].vector != 0) error = "kernel[" + std::to_string(k) + "] has two vector entries";
        out[k].vector = v.back();
        out[k].vectorY = v.size() == 2 ? v[0] : 0;
        return;
      }
      auto &slot = ran == "tile" ? out[k].tile : ran == "reduce" ? out[k].reduce : ran == "threads" ? out[k].threads : out[k].block;
      if (!slot.empty()) error = "kernel[" + std::to_string(k) + "] has two " + ran + " entries";
      slot = v;
    });
    if (!error.empty()) bad(error);
  }
  return out;
}

std::string printSizes(const std::map<int, KernelSizes> &sizes) {
  std::ostringstream os;
  os << "{ ";
  bool first = true;
  auto list = [](const std::vector<long long> &v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s;
  };
  for (const auto &[k, s] : sizes) {
    if (s.tile.empty()) continue;
    os << (first ? "" : "; ") << "kernel[" << k << "] -> tile[" << list(s.tile) << "]; kernel[" << k << "] -> block["
       << list(s.block) << "]";
    if (s.vectorY > 1) os << "; kernel[" << k << "] -> vector[" << s.vectorY << ", " << std::max<long long>(1, s.vector) << "]";
    else if (s.vector > 1) os << "; kernel[" << k << "] -> vector[" << s.vector << "]";
    else if (s.mma > 0) os << "; kernel[" << k << "] -> vector[1]"; // (as given back, no runs by default)
    if (!s.reduce.empty()) os << "; kernel[" << k << "] -> reduce[" << list(s.reduce) << "]";
    if (s.time > 0) os << "; kernel[" << k << "] -> time[" << s.time << "]";
    if (s.stream > 0) os << "; kernel[" << k << "] -> stream[" << s.stream << "]";
    if (s.split > 0) os << "; kernel[" << k << "] -> split[" << s.split << "]";
    if (s.mma > 0) os << "; kernel[" << k << "] -> mma[" << s.mma << "]";
    if (s.shared > 0) os << "; kernel[" << k << "] -> shared[" << s.shared << "]";
    if (!s.threads.empty()) os << "; kernel[" << k << "] -> threads[" << list(s.threads) << "]";
    first = false;
  }
  os << " }";
  return os.str();
}

} // namespace polyk
