// polyk/multi.hpp, the multi-GPU runtime's segment tracker, on CpuBackend: which copies it issues
// (from whom, how many bytes), that stale copies are poisoned, the gamma / beta switches, errors,
// and a 3-point stencil split over 1, 2, 3 and 8 devices against the sequential result.
#include "polyk/multi.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace polyk::multi;

namespace {

// Remembers every data movement, so a test can say which device a copy came from.
class RecordingBackend : public CpuBackend {
 public:
  struct Call {
    std::string kind;
    int dst, src;
    size_t bytes;
    bool operator==(const Call &o) const { return kind == o.kind && dst == o.dst && src == o.src && bytes == o.bytes; }
  };
  std::vector<Call> calls;

  explicit RecordingBackend(int devices) : CpuBackend(devices) {}
  void copy(int dst, void *to, int src, const void *from, size_t bytes) override {
    calls.push_back({"copy", dst, src, bytes});
    CpuBackend::copy(dst, to, src, from, bytes);
  }
  void upload(int dst, void *to, const void *host, size_t bytes) override {
    calls.push_back({"upload", dst, -1, bytes});
    CpuBackend::upload(dst, to, host, bytes);
  }
  void download(void *host, int src, const void *from, size_t bytes) override {
    calls.push_back({"download", -1, src, bytes});
    CpuBackend::download(host, src, from, bytes);
  }
};

// Non-zero and never all 0xFF bytes, so neither a missing copy nor poison can pass for data.
std::vector<std::uint32_t> randomData(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::uint32_t> value(1, 0xFFFFFFFEu);
  std::vector<std::uint32_t> data(n);
  for (auto &x : data)
    x = value(rng);
  return data;
}

Runs runs(std::initializer_list<Run> list) {
  Runs r;
  for (const Run &run : list)
    Runs::add(run.first, run.last, &r);
  return r;
}

bool allPoison(const std::uint32_t *p, idx first, idx last) {
  for (idx i = first; i <= last; ++i)
    if (p[i] != 0xFFFFFFFFu)
      return false;
  return true;
}

}  // namespace

TEST(MultiRuns, AddMergesAdjacentAndOverlappingRuns) {
  Runs r;
  Runs::add(0, 9, &r);
  Runs::add(10, 19, &r);   // adjacent
  Runs::add(15, 24, &r);   // overlapping
  Runs::add(22, 23, &r);   // inside
  Runs::add(30, 39, &r);   // a gap
  Runs::add(40, 40, &r);
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[0].first, 0);
  EXPECT_EQ(r.runs[0].last, 24);
  EXPECT_EQ(r.runs[1].first, 30);
  EXPECT_EQ(r.runs[1].last, 40);
  r.clear();
  EXPECT_TRUE(r.runs.empty());
}

TEST(MultiRuntime, AcquireUploadsOnlyTheRunsNeededAndOnlyOnce) {
  CpuBackend backend(2);
  Runtime rt(backend);
  Buffer b(rt, "b", 4, 100);
  auto host = randomData(100, 1);
  rt.upload(b, host.data());
  EXPECT_EQ(rt.describe(b), "[0,99]:{host}");
  EXPECT_FALSE(b.allocated(0));
  rt.resetStats();

  rt.acquire(0, b, runs({{10, 19}, {40, 49}}));
  EXPECT_EQ(rt.stats.h2dBytes, 80);
  EXPECT_EQ(rt.stats.copies, 2);
  EXPECT_EQ(rt.stats.peerBytes, 0);
  EXPECT_EQ(std::memcmp(b.on<std::uint32_t>(0) + 10, host.data() + 10, 40), 0);
  EXPECT_EQ(std::memcmp(b.on<std::uint32_t>(0) + 40, host.data() + 40, 40), 0);
  EXPECT_TRUE(allPoison(b.on<std::uint32_t>(0), 20, 39));
  EXPECT_EQ(rt.describe(b), "[0,9]:{host} [10,19]:{0,host} [20,39]:{host} [40,49]:{0,host} [50,99]:{host}");

  rt.resetStats();
  rt.acquire(0, b, runs({{12, 15}, {40, 49}}));
  EXPECT_EQ(rt.stats.copies, 0);
  EXPECT_EQ(rt.stats.h2dBytes + rt.stats.peerBytes, 0);
}

TEST(MultiRuntime, AcquireFromDeviceAndHostIssuesOnePeerCopyAndOneUpload) {
  RecordingBackend backend(2);
  Runtime rt(backend);
  Buffer b(rt, "b", 8, 64);
  std::vector<double> host(64, 1.5);
  rt.upload(b, host.data());
  rt.wrote(0, b, runs({{0, 31}}));
  rt.resetStats();
  backend.calls.clear();

  rt.acquire(1, b, runs({{16, 47}}));
  EXPECT_EQ(rt.stats.peerBytes, 16 * 8);
  EXPECT_EQ(rt.stats.h2dBytes, 16 * 8);
  EXPECT_EQ(rt.stats.copies, 2);
  std::vector<RecordingBackend::Call> expected = {{"copy", 1, 0, 128}, {"upload", 1, -1, 128}};
  EXPECT_EQ(backend.calls, expected);
  EXPECT_EQ(rt.describe(b), "[0,15]:{0} [16,31]:{0,1} [32,47]:{1,host} [48,63]:{host}");
}

TEST(MultiRuntime, AcquirePrefersTheLowestDeviceOwnerAndMergesAdjacentCopies) {
  RecordingBackend backend(3);
  Runtime rt(backend);
  Buffer b(rt, "b", 4, 30);
  auto host = randomData(30, 2);
  rt.upload(b, host.data());
  rt.acquire(1, b, runs({{10, 19}}));  // [10,19] is {1,host}
  rt.wrote(0, b, runs({{0, 9}}));
  rt.acquire(1, b, runs({{0, 9}}));   // [0,9] is {0,1}
  backend.calls.clear();

  rt.acquire(2, b, runs({{0, 29}}));
  // [0,9] from 0, [10,19] from 1 (a device beats the host), [20,29] from the host.
  std::vector<RecordingBackend::Call> expected = {{"copy", 2, 0, 40}, {"copy", 2, 1, 40}, {"upload", 2, -1, 40}};
  EXPECT_EQ(backend.calls, expected);

  // [10,19]:{1,2,host} and [20,29]:{1} both come from device 1: one call. (Device 1's window
  // [0,19] grows to [0,29] for the write, device 0's [0,9] to [0,29] for the acquire: each moves
  // what it held into the larger allocation.)
  backend.calls.clear();
  rt.wrote(1, b, runs({{20, 29}}));
  rt.acquire(0, b, runs({{0, 29}}));
  expected = {{"copy", 1, 1, 80}, {"copy", 0, 0, 40}, {"copy", 0, 1, 80}};
  EXPECT_EQ(backend.calls, expected);
}

TEST(MultiRuntime, WroteMakesTheDeviceTheOnlyOwnerAndPoisonsTheOldCopies) {
  CpuBackend backend(3);
  Runtime rt(backend);
  Buffer b(rt, "b", 4, 50);
  auto host = randomData(50, 3);
  rt.upload(b, host.data());
  rt.acquireAll(0, b);
  rt.acquire(1, b, runs({{0, 24}}));
  rt.resetStats();

  rt.wrote(2, b, runs({{20, 29}}));
  EXPECT_EQ(rt.describe(b), "[0,19]:{0,1,host} [20,29]:{2} [30,49]:{0,host}");
  // Device 0's and 1's copies that were current, and device 2's new window.
  EXPECT_EQ(rt.stats.poisonedBytes, 4 * (10 + 5 + 10));
  EXPECT_TRUE(allPoison(b.on<std::uint32_t>(0), 20, 29));
  EXPECT_TRUE(allPoison(b.on<std::uint32_t>(1), 20, 24));
  EXPECT_EQ(std::memcmp(b.on<std::uint32_t>(0), host.data(), 20 * 4), 0);
  EXPECT_EQ(std::memcmp(b.on<std::uint32_t>(0) + 30, host.data() + 30, 20 * 4), 0);
  EXPECT_EQ(std::memcmp(b.on<std::uint32_t>(1), host.data(), 20 * 4), 0);
  // The host's array is the user's: never poisoned.
  EXPECT_EQ(host, randomData(50, 3));

  rt.poison = false;
  rt.resetStats();
  rt.wrote(1, b, runs({{0, 4}}));
  EXPECT_EQ(rt.stats.poisonedBytes, 0);
  EXPECT_EQ(b.on<std::uint32_t>(0)[0], host[0]);
}

TEST(MultiRuntime, UploadAgainMakesTheHostTheOnlyOwner) {
  CpuBackend backend(2);
  Runtime rt(backend);
  Buffer b(rt, "b", 4, 20);
  auto first = randomData(20, 12), second = randomData(20, 13);
  rt.upload(b, first.data());
  rt.acquireAll(0, b);
  rt.acquire(1, b, runs({{5, 9}}));
  rt.resetStats();

  rt.upload(b, second.data());
  EXPECT_EQ(rt.describe(b), "[0,19]:{host}");
  EXPECT_EQ(rt.stats.poisonedBytes, 4 * (20 + 5));
  rt.acquire(1, b, runs({{0, 19}}));
  EXPECT_EQ(rt.stats.h2dBytes, 4 * 20);
  EXPECT_EQ(std::memcmp(b.on<std::uint32_t>(1), second.data(), 4 * 20), 0);
}

TEST(MultiRuntime, WithoutTransfersTheTrackerMovesOnButNoByteDoes) {
  CpuBackend backend(2);
  Runtime rt(backend);
  rt.transfer = false;
  Buffer b(rt, "b", 4, 40);
  auto host = randomData(40, 4);
  rt.upload(b, host.data());
  b.on<std::uint32_t>(0);
  b.on<std::uint32_t>(1);
  rt.resetStats();

  rt.acquireAll(0, b);
  EXPECT_EQ(rt.describe(b), "[0,39]:{0,host}");
  rt.wrote(0, b, runs({{0, 19}}));
  rt.acquire(1, b, runs({{0, 39}}));
  EXPECT_EQ(rt.describe(b), "[0,19]:{0,1} [20,39]:{0,1,host}");
  rt.wrote(1, b, runs({{10, 29}}));
  EXPECT_EQ(rt.describe(b), "[0,9]:{0,1} [10,29]:{1} [30,39]:{0,1,host}");
  EXPECT_EQ(rt.stats.peerBytes + rt.stats.h2dBytes + rt.stats.d2hBytes + rt.stats.copies + rt.stats.poisonedBytes, 0);
  EXPECT_TRUE(allPoison(b.on<std::uint32_t>(0), 0, 39));
  EXPECT_TRUE(allPoison(b.on<std::uint32_t>(1), 0, 39));
}

TEST(MultiRuntime, WithoutTrackingNothingHappens) {
  CpuBackend backend(2);
  Runtime rt(backend);
  rt.track = false;
  Buffer b(rt, "b", 4, 40), c(rt, "c", 4, 40);
  auto host = randomData(40, 5);
  rt.upload(b, host.data());
  rt.acquireAll(0, b);
  rt.wroteAll(1, b);
  rt.acquire(0, b, runs({{0, 3}}));
  rt.copyBuffer(c, b);
  EXPECT_EQ(rt.describe(b), "");
  EXPECT_EQ(rt.describe(c), "");
  EXPECT_FALSE(b.allocated(0));
  EXPECT_FALSE(b.allocated(1));
  EXPECT_EQ(b.bytesAllocated(), 0u);
  std::vector<std::uint32_t> out(40, 7);
  rt.download(b, out.data());
  EXPECT_EQ(out, std::vector<std::uint32_t>(40, 7));
  EXPECT_EQ(rt.stats.peerBytes + rt.stats.h2dBytes + rt.stats.d2hBytes + rt.stats.copies + rt.stats.poisonedBytes, 0);
  // Still checked: a wrong call is wrong whatever is timed.
  EXPECT_THROW(rt.acquire(2, b, runs({{0, 3}})), std::out_of_range);
}

TEST(MultiRuntime, DownloadGathersFromSeveralOwners) {
  RecordingBackend backend(3);
  Runtime rt(backend);
  Buffer b(rt, "b", 4, 60);
  auto host = randomData(60, 6), fresh = randomData(60, 7);
  rt.upload(b, host.data());
  // Device 0 computes [0,19], device 2 [20,39]; [40,59] stays the host's.
  for (idx i = 0; i < 20; ++i)
    b.on<std::uint32_t>(0)[i] = fresh[size_t(i)];
  rt.wrote(0, b, runs({{0, 19}}));
  for (idx i = 20; i < 40; ++i)
    b.on<std::uint32_t>(2)[i] = fresh[size_t(i)];
  rt.wrote(2, b, runs({{20, 39}}));
  rt.acquire(1, b, runs({{0, 19}}));  // [0,19] also on 1: still downloaded from 0, the lowest
  rt.resetStats();
  backend.calls.clear();

  std::vector<std::uint32_t> out(60, 0);
  rt.download(b, out.data());
  std::vector<std::uint32_t> expected(fresh.begin(), fresh.begin() + 40);
  expected.insert(expected.end(), host.begin() + 40, host.end());
  EXPECT_EQ(out, expected);
  EXPECT_EQ(rt.stats.d2hBytes, 40 * 4);
  EXPECT_EQ(rt.stats.copies, 2);
  std::vector<RecordingBackend::Call> calls = {{"download", -1, 0, 80}, {"download", -1, 2, 80}};
  EXPECT_EQ(backend.calls, calls);

  // Into the uploaded array itself: the host's part is there already.
  rt.download(b, host.data());
  EXPECT_EQ(host, expected);
  EXPECT_EQ(rt.stats.d2hBytes, 2 * 40 * 4);
}

TEST(MultiRuntime, CopyBufferCopiesOnTheSourcesOwners) {
  RecordingBackend backend(3);
  Runtime rt(backend);
  Buffer src(rt, "src", 4, 30), dst(rt, "dst", 4, 30);
  auto host = randomData(30, 8), old = randomData(30, 9);
  rt.upload(src, host.data());
  rt.acquire(0, src, runs({{0, 9}}));
  rt.acquire(1, src, runs({{10, 19}}));
  rt.wrote(1, src, runs({{10, 19}}));  // [10,19] is only 1's (its values are still the host's)
  rt.upload(dst, old.data());
  rt.acquireAll(2, dst);
  rt.resetStats();
  backend.calls.clear();

  rt.copyBuffer(dst, src);
  EXPECT_EQ(rt.describe(dst), "[0,9]:{0} [10,19]:{1} [20,29]:{0}");
  // (dst's window on device 0 is the hull [0,29] of its two transfers, made once: no move.)
  std::vector<RecordingBackend::Call> calls = {{"copy", 0, 0, 40}, {"copy", 1, 1, 40}, {"upload", 0, -1, 40}};
  EXPECT_EQ(backend.calls, calls);
  EXPECT_EQ(rt.stats.peerBytes, 80);
  EXPECT_EQ(rt.stats.h2dBytes, 40);
  EXPECT_TRUE(allPoison(dst.on<std::uint32_t>(2), 0, 29));  // dst's old copy on 2 is stale

  std::vector<std::uint32_t> out(30, 0);
  rt.download(dst, out.data());
  EXPECT_EQ(out, host);

  // What src does not own, dst no longer owns either.
  Buffer empty(rt, "empty", 4, 30);
  rt.copyBuffer(dst, empty);
  EXPECT_EQ(rt.describe(dst), "");
}

TEST(MultiRuntime, ErrorsAreThrownNotUndefined) {
  CpuBackend backend(3);
  Runtime rt(backend);
  Buffer b(rt, "b", 4, 10), shorter(rt, "shorter", 4, 9), wider(rt, "wider", 8, 10);
  std::vector<std::uint32_t> host(10, 1);
  rt.upload(b, host.data());
  EXPECT_THROW(rt.acquire(0, b, runs({{-1, 3}})), std::out_of_range);
  EXPECT_THROW(rt.acquire(0, b, runs({{5, 10}})), std::out_of_range);
  EXPECT_THROW(rt.acquire(0, b, runs({{5, 4}})), std::out_of_range);
  EXPECT_THROW(rt.wrote(0, b, runs({{0, 10}})), std::out_of_range);
  EXPECT_THROW(rt.acquire(3, b, runs({{0, 3}})), std::out_of_range);
  EXPECT_THROW(rt.acquire(-1, b, runs({{0, 3}})), std::out_of_range);
  EXPECT_THROW(rt.wroteAll(3, b), std::out_of_range);
  EXPECT_THROW(b.on<float>(3), std::out_of_range);
  EXPECT_THROW(b.allocated(-1), std::out_of_range);
  EXPECT_THROW(rt.copyBuffer(shorter, b), std::invalid_argument);
  EXPECT_THROW(rt.copyBuffer(wider, b), std::invalid_argument);
  EXPECT_THROW(rt.upload(b, nullptr), std::invalid_argument);
  EXPECT_THROW(rt.download(b, nullptr), std::invalid_argument);
  EXPECT_THROW(Buffer(rt, "zero", 0, 10), std::invalid_argument);
  EXPECT_THROW(Buffer(rt, "negative", 4, -1), std::invalid_argument);
  EXPECT_THROW(Buffer(rt, "huge", 1 << 20, idx(1) << 50), std::invalid_argument);
  // A failed call leaves the tracker as it was: runs are checked before any is applied.
  EXPECT_THROW(rt.wrote(1, b, runs({{0, 3}, {8, 12}})), std::out_of_range);
  EXPECT_EQ(rt.describe(b), "[0,9]:{host}");

  Runtime other(backend);
  EXPECT_THROW(other.acquireAll(0, b), std::invalid_argument);

  CpuBackend tooMany(64), mostAllowed(63);
  EXPECT_THROW(Runtime{tooMany}, std::invalid_argument);
  Runtime widest(mostAllowed);
  Buffer w(widest, "w", 4, 10);
  widest.upload(w, host.data());
  widest.acquireAll(62, w);
  EXPECT_EQ(widest.describe(w), "[0,9]:{62,host}");
  EXPECT_THROW(CpuBackend(0), std::invalid_argument);
}

// A 1-D 3-point stencil over `steps` steps, the output's slices spread over the devices; each
// device reads its slice +-1 from its own allocation, after acquiring it unless `skipHalo`.
static std::vector<double> stencil(int devices, const std::vector<double> &input, int steps, bool skipHalo,
    Runtime::Stats *stats = nullptr, size_t *mostBytes = nullptr) {
  CpuBackend backend(devices);
  Runtime rt(backend);
  const idx n = idx(input.size());
  Buffer a(rt, "a", sizeof(double), n), b(rt, "b", sizeof(double), n);
  rt.upload(a, input.data());
  Buffer *in = &a, *out = &b;
  for (int s = 0; s < steps; ++s) {
    for (int d = 0; d < devices; ++d) {
      idx first = n * d / devices, last = n * (d + 1) / devices - 1;
      if (first > last)
        continue;
      Runs reads, halo, writes;
      Runs::add(first > 0 ? first - 1 : 0, last + 1 < n ? last + 1 : last, &halo);
      if (skipHalo && s > 0)
        Runs::add(first, last, &reads);
      else
        reads = halo;
      Runs::add(first, last, &writes);
      // (The window holds the halo either way: a skipped acquire leaves stale values in it to
      // read, not memory outside it.)
      rt.reserve(d, *in, halo);
      rt.acquire(d, *in, reads);
      rt.reserve(d, *out, writes);
      const double *x = in->on<double>(d);
      double *y = out->on<double>(d);
      for (idx i = first; i <= last; ++i)
        y[i] = 0.25 * (i > 0 ? x[i - 1] : 0.0) + 0.5 * x[i] + 0.25 * (i + 1 < n ? x[i + 1] : 0.0);
      rt.wrote(d, *out, writes);
    }
    std::swap(in, out);
  }
  std::vector<double> result(input.size());
  rt.download(*in, result.data());
  if (stats)
    *stats = rt.stats;
  for (int d = 0; mostBytes && d < devices; ++d)
    *mostBytes = std::max(*mostBytes, rt.allocatedBytes(d));
  return result;
}

static std::vector<double> randomDoubles(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> value(1.0, 2.0);
  std::vector<double> data(n);
  for (double &x : data)
    x = value(rng);
  return data;
}

class MultiStencil : public testing::TestWithParam<int> {};

TEST_P(MultiStencil, EqualsTheSequentialResult) {
  const int devices = GetParam(), steps = 6;
  for (size_t n : {size_t(1), size_t(7), size_t(1000)}) {
    auto input = randomDoubles(n, unsigned(n) * 31 + unsigned(devices));
    Runtime::Stats stats;
    size_t mostBytes = 0;
    auto partitioned = stencil(devices, input, steps, false, &stats, &mostBytes);
    auto sequential = stencil(1, input, steps, false);
    ASSERT_EQ(std::memcmp(partitioned.data(), sequential.data(), n * sizeof(double)), 0) << n << " elements";
    // Between devices only the halos move: 2 elements per inner boundary and step (in the first
    // step too: the lower device has uploaded the 2 elements around the boundary, and a device
    // beats the host as a source). So every input element is uploaded exactly once.
    if (n == 1000) {
      EXPECT_EQ(stats.peerBytes, idx(sizeof(double)) * 2 * (devices - 1) * steps);
      EXPECT_EQ(stats.h2dBytes, idx(sizeof(double)) * 1000);
      // Memory scales with the devices: each holds its slice and a halo element on each side of
      // both buffers, not the whole buffers.
      size_t slice = (1000 + size_t(devices) - 1) / size_t(devices);
      EXPECT_LE(mostBytes, 2 * sizeof(double) * (slice + 2));
      EXPECT_GE(mostBytes, 2 * sizeof(double) * (1000 / size_t(devices)));
    }
  }
}

TEST(MultiRuntime, CopyBufferOfAHostHeldSourceSharesTheHostCopy) {
  // An iterated program's output starts as a copy of its input, which the host holds whole: no
  // device gets a copy until it reads one.
  CpuBackend backend(2);
  Runtime rt(backend);
  Buffer in(rt, "in", 4, 20), out(rt, "out", 4, 20);
  auto host = randomData(20, 5), initial = randomData(20, 6);
  rt.upload(in, host.data());
  rt.upload(out, initial.data());
  rt.acquire(1, out, runs({{0, 19}}));
  rt.resetStats();
  rt.copyBuffer(out, in);
  EXPECT_EQ(rt.describe(out), "[0,19]:{host}");
  EXPECT_EQ(rt.stats.peerBytes + rt.stats.h2dBytes, 0);
  EXPECT_TRUE(allPoison(out.on<std::uint32_t>(1), 0, 19));  // out's old copy on 1
  rt.acquire(0, out, runs({{5, 9}}));
  EXPECT_EQ(rt.stats.h2dBytes, 5 * 4);
  EXPECT_EQ(out.window(0), std::make_pair(idx(5), idx(9)));
  std::vector<std::uint32_t> back(20, 0);
  rt.download(out, back.data());
  EXPECT_EQ(back, host);
}

// Named Multi* so that --gtest_filter='Multi*' picks them up with the rest.
INSTANTIATE_TEST_SUITE_P(MultiDevices, MultiStencil, testing::Values(1, 2, 3, 8));

TEST(MultiStencilMissingAcquire, PoisonShowsInTheResult) {
  auto input = randomDoubles(300, 11);
  auto right = stencil(3, input, 4, false), wrong = stencil(3, input, 4, true);
  EXPECT_NE(std::memcmp(right.data(), wrong.data(), right.size() * sizeof(double)), 0);
  // Poison is NaN in double: the halos' neighbours are NaN, and they spread a point per step.
  EXPECT_TRUE(std::isnan(wrong[99]) && std::isnan(wrong[100]) && std::isnan(wrong[199]) && std::isnan(wrong[200]));
  EXPECT_FALSE(std::isnan(wrong[0]) || std::isnan(wrong[150]) || std::isnan(wrong[299]));
}

TEST(MultiLaunchRuns, ReadRunsAFewElementsApartAreBridged) {
  LaunchRuns plan(1, 1, 0);
  plan.read(0, 0) = runs({{0, 9}, {12, 20}, {85, 90}, {200, 210}});
  plan.finish(64);
  ASSERT_EQ(plan.read(0, 0).runs.size(), 2u);  // gaps of 2 and 64 bridged, 109 not
  EXPECT_EQ(plan.read(0, 0).runs[0].first, 0);
  EXPECT_EQ(plan.read(0, 0).runs[0].last, 90);
  EXPECT_EQ(plan.read(0, 0).runs[1].first, 200);
  EXPECT_TRUE(plan.listed());
}

// A 6 x 6 array of random values on the host, over 2 CPU devices, and the runs of one kernel that
// writes it.
class MultiLaunchRuns6x6 : public ::testing::Test {
 protected:
  const idx n = 6;
  CpuBackend backend{2};
  Runtime rt{backend};
  Buffer b{rt, "out", 4, 36};
  std::vector<std::uint32_t> host = randomData(36, 7);
  LaunchRuns plan{2, 0, 1};
  void SetUp() override { rt.upload(b, host.data()); }
};

// Interior rows 1..4 of the array, which two devices write, rows 1-2 and 3-4 (a stencil's output
// split along its rows): the hulls are disjoint, so each device's writes become one segment, and
// the border elements between its rows (which nobody writes) keep their values: acquired with the
// hull, uploaded values there and not poison after the download.
TEST_F(MultiLaunchRuns6x6, RowSplitWritesAreRecordedAsHullsAndKeepTheUnwrittenBorder) {
  for (int d = 0; d < 2; ++d)
    for (idx i = 1 + 2 * d; i <= 2 + 2 * d; ++i)
      Runs::add(i * n + 1, i * n + n - 2, &plan.write(d, 0));
  plan.finish();
  ASSERT_TRUE(plan.hullWrite(0));
  ASSERT_EQ(plan.write(0, 0).runs.size(), 1u);
  EXPECT_EQ(plan.write(0, 0).runs[0].first, 7);
  EXPECT_EQ(plan.write(0, 0).runs[0].last, 16);
  std::vector<std::uint32_t> expect = host;
  for (int d = 0; d < 2; ++d) {
    plan.prepareWrite(rt, d, b, 0);
    auto *p = b.on<std::uint32_t>(d);
    for (idx i = 1 + 2 * d; i <= 2 + 2 * d; ++i)
      for (idx j = 1; j <= n - 2; ++j) {
        p[i * n + j] = std::uint32_t(100 * d + i * n + j + 1);
        expect[size_t(i * n + j)] = p[i * n + j];
      }
    rt.wrote(d, b, plan.write(d, 0));
  }
  EXPECT_EQ(rt.describe(b), "[0,6]:{host} [7,16]:{0} [17,18]:{host} [19,28]:{1} [29,35]:{host}");
  std::vector<std::uint32_t> got(size_t(n * n));
  rt.download(b, got.data());
  EXPECT_EQ(got, expect);
}

// The same array split along its columns: each device's rows interleave with the other's, so the
// hulls overlap and the exact runs are kept.
TEST_F(MultiLaunchRuns6x6, ColumnSplitWritesKeepTheirExactRuns) {
  for (int d = 0; d < 2; ++d)
    for (idx i = 0; i < n; ++i)
      Runs::add(i * n + 3 * d, i * n + 3 * d + 2, &plan.write(d, 0));
  plan.finish();
  EXPECT_FALSE(plan.hullWrite(0));
  EXPECT_EQ(plan.write(0, 0).runs.size(), size_t(n));
  std::vector<std::uint32_t> expect(size_t(n * n));
  for (int d = 0; d < 2; ++d) {
    plan.prepareWrite(rt, d, b, 0);
    auto *p = b.on<std::uint32_t>(d);
    for (idx i = 0; i < n; ++i)
      for (idx j = 3 * d; j < 3 * d + 3; ++j)
        expect[size_t(i * n + j)] = p[i * n + j] = std::uint32_t(7 * (i * n + j) + d + 1);
    rt.wrote(d, b, plan.write(d, 0));
  }
  EXPECT_EQ(rt.stats.h2dBytes, 0);  // reserved, not acquired: nothing uploaded
  std::vector<std::uint32_t> got(size_t(n * n));
  rt.download(b, got.data());
  EXPECT_EQ(got, expect);
}

TEST(MultiLaunchRuns, RuntimeKeepsOneListPerSiteAndParameters) {
  CpuBackend backend(3);
  Runtime rt(backend);
  LaunchRuns &a = rt.runsFor("k0", {100, 7}, 2, 1);
  EXPECT_FALSE(a.listed());
  a.finish();
  EXPECT_EQ(&rt.runsFor("k0", {100, 7}, 2, 1), &a);
  EXPECT_TRUE(rt.runsFor("k0", {100, 7}, 2, 1).listed());
  EXPECT_NE(&rt.runsFor("k0", {100, 8}, 2, 1), &a);
  EXPECT_NE(&rt.runsFor("k1", {100, 7}, 2, 1), &a);
  EXPECT_FALSE(rt.runsFor("k1", {100, 7}, 2, 1).listed());
}

// A backend whose allocations are aligned (CudaBackend: 256 bytes): windows start on such a
// boundary of the tensor, so that kernels index with the alignment of one whole allocation.
TEST(MultiRuntime, WindowsKeepTheBackendsAlignment) {
  struct Aligned : CpuBackend {
    Aligned() : CpuBackend(2) {}
    size_t alignment() const override { return 256; }
  } backend;
  Runtime rt(backend);
  Buffer b(rt, "b", 4, 1000);
  auto host = randomData(1000, 3);
  rt.upload(b, host.data());
  rt.acquire(1, b, runs({{70, 99}}));
  EXPECT_EQ(b.window(1), std::make_pair(idx(64), idx(99)));
  EXPECT_EQ(std::memcmp(b.on<std::uint32_t>(1) + 70, host.data() + 70, 120), 0);
  EXPECT_EQ(rt.stats.h2dBytes, 120);  // the window's extra elements are not copied
  Buffer odd(rt, "odd", 12, 100);      // 12-byte elements: no boundary to keep
  auto oddHost = randomData(300, 4);  // (upload keeps the pointer: acquire reads it)
  rt.upload(odd, oddHost.data());
  rt.acquire(0, odd, runs({{7, 9}}));
  EXPECT_EQ(odd.window(0), std::make_pair(idx(7), idx(9)));
}
