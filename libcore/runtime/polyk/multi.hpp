// polyk/multi.hpp -- the host runtime of polyk's multi-GPU partitioning, after Matz et al.'s
// segment tracker: every tensor is one virtual buffer with a full-size allocation per device, and
// a tracker per buffer records, for each segment of element offsets, which devices (and whether
// the host) hold its latest value. Generated code calls acquire with the runs a kernel partition
// reads before launching it on a device and wrote with the runs it writes afterwards; the tracker
// then copies exactly the segments the device lacks, from a device that has them (peer copies are
// cheaper than the host's), and nothing else. The gamma / beta switches of Matz §9.2 (`track`,
// `transfer`) turn the bookkeeping or the copies off to time them. Header-only C++17: generated
// host code is compiled by g++ and by nvcc; the CUDA backend is in polyk/multi_cuda.cuh.
#ifndef POLYK_MULTI_HPP
#define POLYK_MULTI_HPP

#include <boost/icl/interval_map.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace polyk::multi {

using idx = long long;

// Inclusive linear element offsets, as the generated enumerators list them.
struct Run {
  idx first, last;
};

struct Runs {
  std::vector<Run> runs;

  // The enumerators' C callback. Rows of a tile are often contiguous in memory: merging them
  // here keeps the tracker's work and the number of copies per launch small.
  static void add(idx first, idx last, void *self) {
    auto &runs = static_cast<Runs *>(self)->runs;
    if (!runs.empty() && first >= runs.back().first && first <= runs.back().last + 1) {
      if (last > runs.back().last)
        runs.back().last = last;
      return;
    }
    runs.push_back({first, last});
  }
  void clear() { runs.clear(); }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual int devices() const = 0;
  virtual const char *name() const = 0;
  virtual void *alloc(int dev, size_t bytes) = 0;
  virtual void release(int dev, void *p) = 0;
  // Ordered after both devices' earlier work; later work on src must not overwrite `from` before
  // it is read.
  virtual void copy(int dst, void *to, int src, const void *from, size_t bytes) = 0;
  virtual void upload(int dst, void *to, const void *host, size_t bytes) = 0;
  // Complete when it returns.
  virtual void download(void *host, int src, const void *from, size_t bytes) = 0;
  virtual void fill(int dev, void *p, unsigned char byte, size_t bytes) = 0;
  // Before launching on dev (cudaSetDevice for real GPUs).
  virtual void activate(int /*dev*/) {}
  // dev's cudaStream_t for CUDA backends, for the launches: queue the launch on it before the
  // next backend call (CudaBackend orders later copies after the stream's end at their call).
  virtual void *stream(int /*dev*/) { return nullptr; }
  virtual void synchronize() = 0;
  // Whether this process drives dev (MpiBackend: one process per GPU, every process running the
  // same launcher and tracker; a device of another process gets no allocation and no launch here).
  virtual bool local(int /*dev*/) const { return true; }
  // The alignment of alloc's pointers that windows keep (1: windows start where they must).
  virtual size_t alignment() const { return 1; }
};

// Devices that are plain host memory: the unit tests' backend, where every copy is visible and
// checkable, and a reference for the CUDA ones.
class CpuBackend : public Backend {
 public:
  explicit CpuBackend(int devices) : count(devices) {
    if (devices < 1)
      throw std::invalid_argument("polyk::multi::CpuBackend: needs at least one device");
  }
  int devices() const override { return count; }
  const char *name() const override { return "cpu"; }
  void *alloc(int, size_t bytes) override {
    void *p = std::malloc(bytes ? bytes : 1);
    if (!p)
      throw std::bad_alloc();
    return p;
  }
  void release(int, void *p) override { std::free(p); }
  void copy(int, void *to, int, const void *from, size_t bytes) override { std::memcpy(to, from, bytes); }
  void upload(int, void *to, const void *host, size_t bytes) override { std::memcpy(to, host, bytes); }
  void download(void *host, int, const void *from, size_t bytes) override { std::memcpy(host, from, bytes); }
  void fill(int, void *p, unsigned char byte, size_t bytes) override { std::memset(p, byte, bytes); }
  void synchronize() override {}

 private:
  int count;
};

// A bit per device that holds a segment's latest value; the host is bit 63.
using Owners = std::uint64_t;
constexpr Owners HOST = Owners(1) << 63;
constexpr int maxDevices = 63;

// Adding owners ORs them in (two devices that both hold a segment both own it); a segment nobody
// owns is absent (partial_absorber drops the 0 mask).
using Tracker = boost::icl::interval_map<idx, Owners, boost::icl::partial_absorber,
    ICL_COMPARE_INSTANCE(ICL_COMPARE_DEFAULT, idx), ICL_COMBINE_INSTANCE(boost::icl::inplace_bit_add, Owners),
    ICL_SECTION_INSTANCE(boost::icl::inplace_bit_and, Owners)>;
using Interval = Tracker::interval_type;

class Runtime;
class Buffer;

// What one split kernel's launches touch on each device, listed by its enumerators once
// (Runtime::runsFor keeps it per parameter values: steps and repeated calls reuse it) and
// prepared for the tracker, so that a step costs a few tracker operations per device rather
// than one per row:
//  - read runs a few elements apart are bridged: reading more than a kernel needs is always
//    safe, and one copy of a row with some unread elements beats several;
//  - a write whose devices' hulls are pairwise disjoint (rows in the order of the split blocks,
//    as a row-major array split along its outer dimension has them) is handled as its hull:
//    acquired before the launch, so that the elements between the rows that the device does not
//    write hold their latest value there too, and recorded as one segment after it. Other writes
//    keep their exact runs (reserved before, recorded after).
class LaunchRuns {
 public:
  LaunchRuns(int devices, int reads, int writes)
      : reads_(size_t(devices) * size_t(reads)), writes_(size_t(devices) * size_t(writes)),
        hulls(size_t(writes), false), nDevices(devices), nReads(reads), nWrites(writes) {}
  bool listed() const { return done; }
  Runs &read(int dev, int k) { return reads_.at(size_t(dev) * size_t(nReads) + size_t(k)); }
  Runs &write(int dev, int k) { return writes_.at(size_t(dev) * size_t(nWrites) + size_t(k)); }
  bool hullWrite(int k) const { return hulls.at(size_t(k)); }
  // After listing every device's runs.
  void finish(idx gap = 64) {
    for (Runs &r : reads_)
      bridge(r, gap);
    for (int k = 0; k < nWrites; ++k) {
      std::vector<Run> spans;
      for (int d = 0; d < nDevices; ++d)
        if (const Runs &r = write(d, k); !r.runs.empty())
          spans.push_back(span(r));
      std::sort(spans.begin(), spans.end(), [](const Run &a, const Run &b) { return a.first < b.first; });
      bool disjoint = true;
      for (size_t i = 1; i < spans.size(); ++i)
        disjoint = disjoint && spans[i].first > spans[i - 1].last;
      hulls[size_t(k)] = disjoint;
      if (disjoint)
        for (int d = 0; d < nDevices; ++d)
          if (Runs &r = write(d, k); !r.runs.empty())
            r.runs = {span(r)};
    }
    done = true;
  }
  // Before dev's launch, for its k-th written buffer (the read ones: Runtime::acquire).
  inline void prepareWrite(Runtime &rt, int dev, Buffer &b, int k);

 private:
  static Run span(const Runs &r) {
    Run s = r.runs.front();
    for (const Run &run : r.runs) {
      s.first = std::min(s.first, run.first);
      s.last = std::max(s.last, run.last);
    }
    return s;
  }
  static void bridge(Runs &r, idx gap) {
    std::vector<Run> merged;
    for (const Run &run : r.runs)
      if (!merged.empty() && run.first >= merged.back().first && run.first <= merged.back().last + 1 + gap)
        merged.back().last = std::max(merged.back().last, run.last);
      else
        merged.push_back(run);
    r.runs = std::move(merged);
  }
  std::vector<Runs> reads_, writes_;
  std::vector<bool> hulls;
  int nDevices, nReads, nWrites;
  bool done = false;
};

class Buffer {
 public:
  Buffer(Runtime &rt, std::string name, size_t elemSize, idx elements);
  ~Buffer();
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;

  const std::string &name() const { return label; }
  size_t elemSize() const { return size; }
  idx elements() const { return count; }
  size_t bytes() const { return size * size_t(count); }

  // The buffer as dev's kernels index it: element e of the tensor at on<T>(dev)[e]. Each device
  // allocates only its window, the range of elements it has acquired, written or reserved (so
  // memory scales with the number of devices); the pointer is the window's allocation shifted
  // back by its first element. A device with no window gets the whole buffer on first use. With
  // rt.poison a window starts as 0xFF bytes, so a kernel that reads what no acquire brought gets
  // garbage, not a plausible zero.
  template <class T> T *on(int dev) { return reinterpret_cast<T *>(storage(dev)); }
  bool allocated(int dev) const;
  size_t bytesAllocated() const;
  // dev's window (first > last: none).
  std::pair<idx, idx> window(int dev) const;

 private:
  friend class Runtime;
  struct Window {
    unsigned char *base = nullptr;  // the allocation, holding elements first..last
    idx first = 0, last = -1;
  };
  unsigned char *storage(int dev);
  // Grows dev's window to hold first..last (its contents kept).
  void reserve(int dev, idx first, idx last);
  unsigned char *at(int dev, idx element);

  Runtime &rt;
  std::string label;
  size_t size;
  idx count;
  std::vector<Window> device;
  const unsigned char *host = nullptr;  // the uploaded copy, read while the host owns a segment
  Tracker tracker;
};

class Runtime {
 public:
  explicit Runtime(Backend &b) : layer(b) {
    if (b.devices() < 1 || b.devices() > maxDevices)
      throw std::invalid_argument("polyk::multi::Runtime: " + std::to_string(b.devices()) +
          " devices, the tracker's masks hold 1 to 63");
  }
  // Buffers keep a reference to their runtime, which checks they are its own.
  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;
  Backend &backend() { return layer; }
  int devices() const { return layer.devices(); }

  // false ("gamma"): upload / acquire / wrote / copyBuffer do nothing (arguments are still
  // checked), download only synchronizes.
  bool track = true;
  // false ("beta"): the tracker is updated as usual, but no copies and no poison fills of stale
  // copies are issued (results are then wrong; for timing); windows are still allocated (and,
  // with poison, filled). download still gathers, so the host sees something.
  bool transfer = true;
  // Stale device copies and fresh allocations are filled with 0xFF bytes, so that a missed
  // transfer shows up as a wrong result (NaN in floats) rather than as plausible old data.
  bool poison = true;

  // The host's copy at `host` becomes the latest of every element; acquire scatters it lazily.
  // `host` must stay valid while the host owns any segment of b (it is read by later acquires).
  void upload(Buffer &b, const void *host);
  // Gathers every owned element into `host`, then synchronizes all devices. The tracker is left
  // as it is. With track == false it only synchronizes.
  void download(Buffer &b, void *host);
  void acquire(int dev, Buffer &b, const Runs &r);
  void acquireAll(int dev, Buffer &b);
  void wrote(int dev, Buffer &b, const Runs &r);
  void wroteAll(int dev, Buffer &b);
  void copyBuffer(Buffer &dst, Buffer &src);
  void synchronize() { layer.synchronize(); }

  // What was actually issued: bytes by kind (peerBytes: device to device, copyBuffer's copies
  // within a device included), copies: the number of backend calls that moved data,
  // poisonedBytes: every fill (stale copies and fresh allocations).
  struct Stats {
    idx peerBytes = 0, h2dBytes = 0, d2hBytes = 0, copies = 0, poisonedBytes = 0;
    idx regrownBytes = 0;  // moved within a device when its window of a buffer grew
  } stats;
  void resetStats() { stats = Stats(); }

  // Makes dev's window of b hold the runs (before a launch that writes them).
  void reserve(int dev, Buffer &b, const Runs &r);
  // Bytes of buffers allocated on dev now, and the most at any time since the runtime began.
  size_t allocatedBytes(int dev) const { return dev >= 0 && dev < devices() ? now[size_t(dev)] : 0; }
  size_t peakBytes(int dev) const { return dev >= 0 && dev < devices() ? peak[size_t(dev)] : 0; }

  // The tracker's segments, e.g. "[0,99]:{0} [100,199]:{1,host}".
  std::string describe(const Buffer &b) const;

  // The runs of launch site `site` (a kernel) for these parameter values, listed by the
  // generated code on first use and kept for the runtime's life: enumerating is a pure function
  // of the parameters and the device count, and a launcher called again (a time step of the
  // caller's, a benchmark's repetitions) then pays a few tracker operations per device only.
  // A buffer the runtime keeps across calls (a launcher's partial outputs), made on first use of
  // `key` and made again where its element size or count changed; it lives as long as the
  // runtime. (Made and freed on every call, a 0.3 ms batch split over 4 GPUs took 1.5 ms: each
  // free waits for every device.)
  inline Buffer &kept(const std::string &key, size_t elemSize, idx elements);

  LaunchRuns &runsFor(const std::string &site, std::vector<idx> params, int reads, int writes) {
    auto &slot = sites[{site, std::move(params)}];
    if (!slot)
      slot = std::make_unique<LaunchRuns>(devices(), reads, writes);
    return *slot;
  }

 private:
  friend class Buffer;
  // One backend call for adjacent segments that come from the same source.
  static constexpr int fromHost = -1, alreadyThere = -2;
  struct Transfer {
    int source;
    idx first, last;
  };
  static void plan(std::vector<Transfer> &transfers, int source, idx first, idx last) {
    if (!transfers.empty() && transfers.back().source == source && transfers.back().last + 1 == first)
      transfers.back().last = last;
    else
      transfers.push_back({source, first, last});
  }
  // The tracker's segments inside iv, clipped to it. (icl's operator& would do, but GCC 12 warns
  // falsely about the std::map swap inside it: -Wdangling-pointer.)
  static Tracker within(const Tracker &tracker, const Interval &iv) {
    Tracker section;
    boost::icl::add_intersection(section, tracker, iv);
    return section;
  }
  static int lowestDevice(Owners owners) {
    for (int d = 0; d < maxDevices; ++d)
      if (owners >> d & 1)
        return d;
    return fromHost;
  }

  void checkDevice(int dev, const char *what) const {
    if (dev < 0 || dev >= devices())
      throw std::out_of_range(std::string("polyk::multi::Runtime::") + what + ": device " + std::to_string(dev) +
          " of " + std::to_string(devices()));
  }
  void checkBuffer(const Buffer &b, const char *what) const {
    if (&b.rt != this)
      throw std::invalid_argument(std::string("polyk::multi::Runtime::") + what + ": buffer " + b.name() +
          " belongs to another runtime");
  }
  Interval checkedRun(const Buffer &b, const Run &run, const char *what) const {
    if (run.first > run.last || run.first < 0 || run.last >= b.elements())
      throw std::out_of_range(std::string("polyk::multi::Runtime::") + what + ": run [" + std::to_string(run.first) +
          "," + std::to_string(run.last) + "] outside " + b.name() + "[0," + std::to_string(b.elements() - 1) + "]");
    return Interval::closed(run.first, run.last);
  }
  Interval whole(const Buffer &b) const { return Interval::closed(0, b.elements() - 1); }
  // The runs as intervals, after checking the device, the buffer and every run (a failed call
  // changes nothing).
  std::vector<Interval> checkedRuns(int dev, const Buffer &b, const Runs &r, const char *what) const {
    checkDevice(dev, what);
    checkBuffer(b, what);
    std::vector<Interval> intervals;
    for (const Run &run : r.runs)
      intervals.push_back(checkedRun(b, run, what));
    return intervals;
  }
  static Runs allOf(const Buffer &b) {
    Runs all;
    if (b.elements() > 0)
      all.runs.push_back({0, b.elements() - 1});
    return all;
  }

  void fill(Buffer &b, int dev, idx first, idx last) {
    size_t bytes = b.size * size_t(last - first + 1);
    layer.fill(dev, b.at(dev, first), 0xFF, bytes);
    stats.poisonedBytes += idx(bytes);
  }
  // iv's latest value is now with `owners` only (0: nobody). The devices that held it before
  // hold a stale copy: poison it, so a read that skipped acquire shows.
  void overwrite(Buffer &b, const Interval &iv, Owners owners) {
    if (poison && transfer) {
      const Tracker old = within(b.tracker, iv);
      Owners stale = 0;
      for (const auto &segment : old)
        stale |= segment.second;
      stale &= ~owners & ~HOST;
      // Device by device, so that one device's adjacent stale segments take one fill.
      std::vector<Transfer> fills;
      for (int d = 0; d < maxDevices; ++d)
        if (stale >> d & 1)
          for (const auto &segment : old)
            if (segment.second >> d & 1)
              plan(fills, d, boost::icl::first(segment.first), boost::icl::last(segment.first));
      for (const Transfer &f : fills)
        fill(b, f.source, f.first, f.last);
    }
    if (owners)
      b.tracker.set(std::make_pair(iv, owners));
    else
      b.tracker.erase(iv);
  }

  void account(int dev, long long bytes) {
    size_t &n = now[size_t(dev)];
    n = size_t((long long)n + bytes);
    if (n > peak[size_t(dev)])
      peak[size_t(dev)] = n;
  }
  // The hull of some intervals, for a window.
  static std::pair<idx, idx> hull(const std::vector<Interval> &ivs) {
    idx first = std::numeric_limits<idx>::max(), last = -1;
    for (const Interval &iv : ivs) {
      first = std::min(first, boost::icl::first(iv));
      last = std::max(last, boost::icl::last(iv));
    }
    return {first, last};
  }

  Backend &layer;
  std::map<std::pair<std::string, std::vector<idx>>, std::unique_ptr<LaunchRuns>> sites;
  std::vector<size_t> now = std::vector<size_t>(size_t(layer.devices()), 0), peak = now;
  // (Last: destroyed first, while the accounts above still exist.)
  std::map<std::string, std::unique_ptr<Buffer>> keptBuffers;
};

inline Buffer::Buffer(Runtime &runtime, std::string name, size_t elemSize, idx elements)
    : rt(runtime), label(std::move(name)), size(elemSize), count(elements), device(size_t(runtime.devices())) {
  if (elemSize == 0 || elements < 0 ||
      (elements > 0 && size_t(elements) > std::numeric_limits<size_t>::max() / elemSize))
    throw std::invalid_argument("polyk::multi::Buffer " + label + ": " + std::to_string(elements) +
        " elements of " + std::to_string(elemSize) + " bytes");
}

inline Buffer::~Buffer() {
  for (int d = 0; d < int(device.size()); ++d)
    if (Window &w = device[size_t(d)]; w.base) {
      // A destructor must not throw; an asynchronous error of the backend surfaces at its next
      // synchronize or call anyway.
      try {
        rt.backend().release(d, w.base);
      } catch (...) {
      }
      rt.account(d, -(long long)(size * size_t(w.last - w.first + 1)));
    }
}

inline unsigned char *Buffer::storage(int dev) {
  rt.checkDevice(dev, "Buffer::on");
  if (!rt.backend().local(dev))
    return nullptr;  // another process's device
  Window &w = device[size_t(dev)];
  if (!w.base && count > 0)
    reserve(dev, 0, count - 1);
  // (Shifted back by the window's first element: kernels index with the tensor's own offsets.)
  return w.base ? w.base - size * size_t(w.first) : nullptr;
}

inline unsigned char *Buffer::at(int dev, idx element) {
  if (!rt.backend().local(dev))
    return nullptr;
  const Window &w = device[size_t(dev)];
  if (!w.base || element < w.first || element > w.last)
    throw std::logic_error("polyk::multi::Buffer " + label + ": element " + std::to_string(element) + " is outside device " +
        std::to_string(dev) + "'s window [" + std::to_string(w.first) + "," + std::to_string(w.last) + "]");
  return w.base + size * size_t(element - w.first);
}

inline void Buffer::reserve(int dev, idx first, idx last) {
  if (first > last || !rt.backend().local(dev))
    return;
  Window &w = device[size_t(dev)];
  if (w.base && w.first <= first && last <= w.last)
    return;
  // A window starts on a boundary of the tensor that the backend's allocations are aligned to
  // (cudaMalloc: 256 bytes), so that a kernel sees the alignment it would in one allocation: a
  // stencil whose window began at its first interior element ran 17% slower (Jacobi3D 512^3,
  // H100), every row misaligned.
  if (size_t align = rt.backend().alignment(); align > size && align % size == 0)
    first -= first % idx(align / size);
  Window grown;
  grown.first = w.base ? std::min(w.first, first) : first;
  grown.last = w.base ? std::max(w.last, last) : last;
  size_t bytes = size * size_t(grown.last - grown.first + 1);
  grown.base = static_cast<unsigned char *>(rt.backend().alloc(dev, bytes));
  rt.account(dev, (long long)bytes);
  if (rt.poison) {
    rt.backend().fill(dev, grown.base, 0xFF, bytes);
    rt.stats.poisonedBytes += idx(bytes);
  }
  if (w.base) {
    size_t kept = size * size_t(w.last - w.first + 1);
    rt.backend().copy(dev, grown.base + size * size_t(w.first - grown.first), dev, w.base, kept);
    rt.stats.regrownBytes += idx(kept);
    rt.backend().release(dev, w.base);
    rt.account(dev, -(long long)kept);
  }
  w = grown;
}

inline std::pair<idx, idx> Buffer::window(int dev) const {
  rt.checkDevice(dev, "Buffer::window");
  return {device[size_t(dev)].first, device[size_t(dev)].last};
}

inline bool Buffer::allocated(int dev) const {
  rt.checkDevice(dev, "Buffer::allocated");
  return device[size_t(dev)].base != nullptr;
}

inline size_t Buffer::bytesAllocated() const {
  size_t total = 0;
  for (const Window &w : device)
    if (w.base)
      total += size * size_t(w.last - w.first + 1);
  return total;
}

inline void Runtime::upload(Buffer &b, const void *host) {
  checkBuffer(b, "upload");
  if (!host)
    throw std::invalid_argument("polyk::multi::Runtime::upload: null host pointer for " + b.name());
  if (!track)
    return;
  b.host = static_cast<const unsigned char *>(host);
  if (b.elements() > 0)
    overwrite(b, whole(b), HOST);
}

inline void Runtime::download(Buffer &b, void *host) {
  checkBuffer(b, "download");
  if (!host)
    throw std::invalid_argument("polyk::multi::Runtime::download: null host pointer for " + b.name());
  if (track) {
    auto *to = static_cast<unsigned char *>(host);
    std::vector<Transfer> transfers;
    for (const auto &segment : b.tracker) {
      // Downloading into the uploaded array: what the host still owns is there already.
      bool present = (segment.second & HOST) && b.host == to;
      int source = present ? alreadyThere : lowestDevice(segment.second);
      plan(transfers, source, boost::icl::first(segment.first), boost::icl::last(segment.first));
    }
    for (const Transfer &t : transfers) {
      size_t offset = b.size * size_t(t.first), bytes = b.size * size_t(t.last - t.first + 1);
      if (t.source == alreadyThere)
        continue;
      if (t.source != fromHost) {
        layer.download(to + offset, t.source, b.at(t.source, t.first), bytes);
        stats.d2hBytes += idx(bytes);
        ++stats.copies;
      } else {
        std::memcpy(to + offset, b.host + offset, bytes);
      }
    }
  }
  layer.synchronize();
}

inline void Runtime::acquire(int dev, Buffer &b, const Runs &r) {
  std::vector<Interval> intervals = checkedRuns(dev, b, r, "acquire");
  if (!track)
    return;
  auto [first, last] = hull(intervals);
  b.reserve(dev, first, last);
  const Owners self = Owners(1) << dev;
  std::vector<Transfer> transfers;
  for (const Interval &iv : intervals)
    for (const auto &segment : within(b.tracker, iv)) {
      if (segment.second & self)
        continue;
      // Any device owner beats the host: a peer copy is faster than H2D. The lowest-numbered
      // keeps the choice deterministic.
      plan(transfers, lowestDevice(segment.second), boost::icl::first(segment.first), boost::icl::last(segment.first));
      b.tracker.add(std::make_pair(segment.first, self));
    }
  if (!transfer)
    return;
  for (const Transfer &t : transfers) {
    size_t bytes = b.size * size_t(t.last - t.first + 1);
    if (t.source != fromHost) {
      layer.copy(dev, b.at(dev, t.first), t.source, b.at(t.source, t.first), bytes);
      stats.peerBytes += idx(bytes);
    } else {
      layer.upload(dev, b.at(dev, t.first), b.host + b.size * size_t(t.first), bytes);
      stats.h2dBytes += idx(bytes);
    }
    ++stats.copies;
  }
}

inline Buffer &Runtime::kept(const std::string &key, size_t elemSize, idx elements) {
  std::unique_ptr<Buffer> &slot = keptBuffers[key];
  if (!slot || slot->elemSize() != elemSize || slot->elements() != elements)
    slot = std::make_unique<Buffer>(*this, key, elemSize, elements);
  return *slot;
}

inline void Runtime::reserve(int dev, Buffer &b, const Runs &r) {
  std::vector<Interval> intervals = checkedRuns(dev, b, r, "reserve");
  auto [first, last] = hull(intervals);
  b.reserve(dev, first, last);
}

inline void Runtime::acquireAll(int dev, Buffer &b) { acquire(dev, b, allOf(b)); }

inline void Runtime::wrote(int dev, Buffer &b, const Runs &r) {
  std::vector<Interval> intervals = checkedRuns(dev, b, r, "wrote");
  if (!track)
    return;
  auto [first, last] = hull(intervals);
  b.reserve(dev, first, last);
  for (const Interval &iv : intervals)
    overwrite(b, iv, Owners(1) << dev);
}

inline void Runtime::wroteAll(int dev, Buffer &b) { wrote(dev, b, allOf(b)); }

inline void Runtime::copyBuffer(Buffer &dst, Buffer &src) {
  checkBuffer(dst, "copyBuffer");
  checkBuffer(src, "copyBuffer");
  if (dst.elemSize() != src.elemSize() || dst.elements() != src.elements())
    throw std::invalid_argument("polyk::multi::Runtime::copyBuffer: " + src.name() + " and " + dst.name() +
        " differ in size");
  if (!track || &dst == &src)
    return;
  // A source the host holds whole (an iterated program's input, before its first step): dst
  // takes the same host copy, and devices fetch from it what they read, as they would from src.
  if (src.elements() > 0 && src.tracker.iterative_size() == 1 && (src.tracker.begin()->second & HOST) &&
      boost::icl::first(src.tracker.begin()->first) == 0 && boost::icl::last(src.tracker.begin()->first) == src.elements() - 1) {
    dst.host = src.host;
    overwrite(dst, whole(dst), HOST);
    return;
  }
  // What src owns nobody: dst's value there is no one's either.
  Tracker unowned = dst.tracker;
  for (const auto &segment : src.tracker)
    unowned.erase(segment.first);
  for (const auto &segment : unowned)
    overwrite(dst, segment.first, 0);

  std::vector<Transfer> transfers;
  for (const auto &segment : src.tracker) {
    int source = lowestDevice(segment.second);
    plan(transfers, source, boost::icl::first(segment.first), boost::icl::last(segment.first));
    overwrite(dst, segment.first, Owners(1) << (source != fromHost ? source : 0));
  }
  // (The windows before the transfer switch: without transfers the tracker still says these
  // devices own the ranges, and a later download reads them there.)
  // One window per device, the hull of its transfers (no regrowth between them).
  std::vector<std::pair<idx, idx>> span(size_t(devices()), {std::numeric_limits<idx>::max(), -1});
  for (const Transfer &t : transfers) {
    auto &[first, last] = span[size_t(t.source != fromHost ? t.source : 0)];
    first = std::min(first, t.first);
    last = std::max(last, t.last);
  }
  for (int d = 0; d < devices(); ++d)
    dst.reserve(d, span[size_t(d)].first, span[size_t(d)].second);
  if (!transfer)
    return;
  for (const Transfer &t : transfers) {
    size_t bytes = dst.size * size_t(t.last - t.first + 1);
    if (t.source != fromHost) {
      layer.copy(t.source, dst.at(t.source, t.first), t.source, src.at(t.source, t.first), bytes);
      stats.peerBytes += idx(bytes);
    } else {
      layer.upload(0, dst.at(0, t.first), src.host + src.size * size_t(t.first), bytes);
      stats.h2dBytes += idx(bytes);
    }
    ++stats.copies;
  }
}

inline void LaunchRuns::prepareWrite(Runtime &rt, int dev, Buffer &b, int k) {
  if (hullWrite(k))
    rt.acquire(dev, b, write(dev, k));
  else
    rt.reserve(dev, b, write(dev, k));
}

inline std::string Runtime::describe(const Buffer &b) const {
  std::ostringstream text;
  for (const auto &segment : b.tracker) {
    if (text.tellp() > 0)
      text << ' ';
    text << '[' << boost::icl::first(segment.first) << ',' << boost::icl::last(segment.first) << "]:{";
    const char *separator = "";
    for (int d = 0; d < maxDevices; ++d)
      if (segment.second >> d & 1) {
        text << separator << d;
        separator = ",";
      }
    if (segment.second & HOST)
      text << separator << "host";
    text << '}';
  }
  return text.str();
}

}  // namespace polyk::multi

#endif
