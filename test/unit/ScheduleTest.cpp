// Sizes: parsing PPCG-style maps, and the analytical default rule's invariants.
#include "polyk/Schedule.h"

#include <gtest/gtest.h>

using namespace polyk;

TEST(Sizes, ParsesSeveralKernelsOfOneKind) {
  auto s = parseSizes("{ kernel[0] -> tile[32, 256]; kernel[0] -> block[32, 8]; kernel[1] -> tile[512]; kernel[1] -> block[128] }");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].tile, (std::vector<long long>{32, 256}));
  EXPECT_EQ(s[0].block, (std::vector<long long>{32, 8}));
  EXPECT_EQ(s[1].tile, (std::vector<long long>{512}));
  EXPECT_EQ(parseSizes(printSizes(s)).at(1).block, (std::vector<long long>{128}));
}

TEST(Sizes, RejectsWhatIsNotASizesMap) {
  EXPECT_THROW(parseSizes("{ kernel[0] -> tile[32"), UsageError);
  EXPECT_THROW(parseSizes("{ kernel[0] -> tiles[32] }"), UsageError);
  EXPECT_THROW(parseSizes("{ kernel[0] -> tile[i] : i > 0 }"), UsageError);
  EXPECT_THROW(parseSizes("{ kernel[0] -> tile[0] }"), UsageError);
  EXPECT_THROW(parseSizes("{ kernel[0] -> vector[0] }"), UsageError);
  EXPECT_EQ(parseSizes("{ kernel[1] -> vector[4] }").at(1).vector, 4);
  EXPECT_EQ(parseSizes("{ kernel[1] -> tile[64]; kernel[1] -> block[64] }").at(1).vector, 0); // not given
}

TEST(Sizes, TimeEntryIsOneStepCountAndRoundTrips) {
  EXPECT_THROW(parseSizes("{ kernel[0] -> time[0] }"), UsageError);
  EXPECT_THROW(parseSizes("{ kernel[0] -> time[65] }"), UsageError); // kMaxTimeTile
  EXPECT_THROW(parseSizes("{ kernel[0] -> time[2, 3] }"), UsageError);
  auto sizes = parseSizes("{ kernel[0] -> tile[32, 80]; kernel[0] -> block[8, 32]; kernel[0] -> time[8] }");
  EXPECT_EQ(sizes.at(0).time, 8);
  EXPECT_EQ(parseSizes("{ kernel[0] -> tile[32]; kernel[0] -> block[32] }").at(0).time, 0); // none
  EXPECT_EQ(printSizes(sizes), "{ kernel[0] -> tile[32, 80]; kernel[0] -> block[8, 32]; kernel[0] -> time[8] }");
}

TEST(Sizes, SplitEntryIsOneBlockCountAndRoundTrips) {
  EXPECT_THROW(parseSizes("{ kernel[0] -> split[0] }"), UsageError);
  EXPECT_THROW(parseSizes("{ kernel[0] -> split[257] }"), UsageError); // kMaxSplit
  EXPECT_THROW(parseSizes("{ kernel[0] -> split[2, 2] }"), UsageError);
  EXPECT_THROW(parseSizes("{ kernel[0] -> split[2]; kernel[0] -> split[3] }"), UsageError);
  std::string text = "{ kernel[0] -> tile[64, 64]; kernel[0] -> block[16, 16]; kernel[0] -> reduce[16]; kernel[0] -> split[9] }";
  auto sizes = parseSizes(text);
  EXPECT_EQ(sizes.at(0).split, 9);
  EXPECT_EQ(parseSizes("{ kernel[0] -> tile[32]; kernel[0] -> block[32] }").at(0).split, 0); // none
  EXPECT_EQ(printSizes(sizes), text);
}

namespace {

/// A band of `extent` members, the last one reduced (one member: reduced), as analyseBand gives it.
BandShape band(Form form, std::vector<long long> extent, int contiguous, int vector = 1) {
  BandShape b;
  b.form = form;
  b.reduced.assign(extent.size(), false);
  b.reduced.back() = true;
  b.extent = std::move(extent);
  b.contiguous = contiguous;
  b.vector = vector;
  return b;
}

} // namespace

TEST(Sizes, DefaultsKeepBindsInvariants) {
  // For every shape: tiles are whole multiples of blocks on reduced dims, tile == block on
  // parallel dims, and at most 1024 threads per block.
  for (long long P : {1LL, 7LL, 768LL, 1280LL, 1048576LL})
    for (long long R : {1LL, 5LL, 1000LL, 21128LL, 8192LL})
      for (int contiguous : {0, 1}) {
        KernelSizes s = defaultSizes(band(contiguous == 1 ? Form::XReduce : Form::YReduce, {P, R}, contiguous));
        SCOPED_TRACE(std::to_string(P) + "x" + std::to_string(R) + " contiguous " + std::to_string(contiguous));
        EXPECT_EQ(s.tile[0], s.block[0]);
        EXPECT_EQ(s.tile[1] % s.block[1], 0);
        EXPECT_LE(s.block[0] * s.block[1], 1024);
      }
  // Threads taking vectors: the tile of the contiguous reduced dim holds whole vectors per thread.
  for (long long R : {768LL, 1024LL, 21128LL, 131072LL})
    for (int vector : {1, 4, 8, 16}) {
      KernelSizes s = defaultSizes(band(Form::XReduce, {1024, R}, 1, vector));
      SCOPED_TRACE(std::to_string(R) + " vector " + std::to_string(vector));
      EXPECT_EQ(s.tile[1] % (s.block[1] * vector), 0);
      EXPECT_EQ(s.tile[0], s.block[0]);
    }
  // A y-reduce taking vectors of columns: each thread owns `vector` outputs (tile = block x V on
  // the parallel dim); wide columns keep every column in one block.
  for (long long R : {1024LL, 131072LL})
    for (int vector : {2, 4, 8}) {
      KernelSizes s = defaultSizes(band(Form::YReduce, {131072, R}, 0, vector));
      SCOPED_TRACE(std::to_string(R) + " vector " + std::to_string(vector));
      EXPECT_EQ(s.tile[0], s.block[0] * vector);
      EXPECT_EQ(s.tile[1] % s.block[1], 0);
      EXPECT_EQ(s.tile[1], R); // 131072 / (32 V) >= 264 column blocks: whole columns
    }
  for (long long N : {1LL, 3072LL, 16226304LL}) {
    KernelSizes s = defaultSizes(band(Form::AllReduce, {N}, 0));
    EXPECT_EQ(s.tile[0] % s.block[0], 0);
    EXPECT_LE(s.block[0], 1024);
  }
}

TEST(Sizes, FewRowsTakeOneThreadAColumn) {
  // A y-reduce of at most 8 rows, or at most 32 where the columns give 2 blocks of 128 an SM:
  // one thread over the rows (its whole column, no block reduction), up to 128 over the columns;
  // more rows, or 9-32 rows of few columns, keep threads over the rows.
  for (long long R : {1LL, 2LL, 5LL, 8LL}) {
    KernelSizes s = defaultSizes(band(Form::YReduce, {1048576, R}, 0));
    SCOPED_TRACE(std::to_string(R));
    EXPECT_EQ(s.block[1], 1);
    EXPECT_EQ(s.tile[1], R);
    EXPECT_EQ(s.block[0], 128);
  }
  EXPECT_EQ(defaultSizes(band(Form::YReduce, {1048576, 32}, 0)).block[1], 1);
  EXPECT_GT(defaultSizes(band(Form::YReduce, {1048576, 33}, 0)).block[1], 1);
  EXPECT_GT(defaultSizes(band(Form::YReduce, {4096, 16}, 0)).block[1], 1);
  EXPECT_EQ(defaultSizes(band(Form::YReduce, {100, 3}, 0)).block[0], 32); // few columns: a warp's
}

TEST(Sizes, MidHeightColumnsTakeNarrowWholeColumnBlocks) {
  // Up to 2048 rows, and columns for at least 64 blocks of 8: every column in one block of 8
  // columns x 64 threads over the rows (a direct store, no combine).
  for (long long R : {100LL, 1000LL, 1024LL, 2048LL})
    for (long long P : {512LL, 517LL, 1024LL, 4096LL}) {
      KernelSizes s = defaultSizes(band(Form::YReduce, {P, R}, 0));
      SCOPED_TRACE(std::to_string(R) + " rows x " + std::to_string(P) + " columns");
      EXPECT_EQ(s.block, (std::vector<long long>{8, 64}));
      EXPECT_EQ(s.tile[0], 8);
      EXPECT_GE(s.tile[1], R);
      EXPECT_LT(s.tile[1], R + 64);
    }
  // Taller columns, or too few for 64 blocks: the reduced dim is split over blocks as before.
  for (auto [P, R] : {std::pair{1024LL, 4096LL}, std::pair{256LL, 1024LL}, std::pair{1024LL, 8192LL}}) {
    KernelSizes s = defaultSizes(band(Form::YReduce, {P, R}, 0));
    SCOPED_TRACE(std::to_string(R) + " rows x " + std::to_string(P) + " columns");
    EXPECT_EQ(s.block[0], 32);
    EXPECT_LT(s.tile[1], R);
  }
}

TEST(Sizes, OneByteWideColumnsTakeEightColumnThreads) {
  // bool [768, 21128] over dim 0 with vector[4]: 32 threads x 4 columns would give 166 blocks,
  // 8 x 4 give 661; every column stays whole in its block.
  BandShape b = band(Form::YReduce, {21128, 768}, 0, 4);
  b.elementBytes = 1;
  KernelSizes s = defaultSizes(b);
  EXPECT_EQ(s.block, (std::vector<long long>{8, 32}));
  EXPECT_EQ(s.tile, (std::vector<long long>{32, 768}));
  // Wider elements, or columns a warp already fills: a warp along the columns.
  b.elementBytes = 2;
  EXPECT_EQ(defaultSizes(b).block[0], 32);
  b = band(Form::YReduce, {131072, 1024}, 0, 4);
  b.elementBytes = 1;
  EXPECT_EQ(defaultSizes(b).block[0], 32);
}
