/* Checks polyk-partition's enumerators of s2 (B(i, j) = A(i +- 1, j) + A(i, j +- 1) over the
   interior, blocks of 8 rows along the split member) against the program itself: for every block
   range lo..hi (empty ones too), the runs of B's writes are exactly the elements those rows write,
   and the runs of A's reads cover every element they read, no element twice, and nothing outside
   the first..last read element of each row. Prints "ok N M ranges" or the first difference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "s2_enum.h"

typedef struct { long long n; unsigned char *hit; long long twice, outside; } Marks;

static void mark(polyk_enum_idx first, polyk_enum_idx last, void *user) {
  Marks *m = (Marks *)user;
  for (polyk_enum_idx e = first; e <= last; ++e) {
    if (e < 0 || e >= m->n) { m->outside++; continue; }
    if (m->hit[e]++) m->twice++;
  }
}

int main(int argc, char **argv) {
  long long N = atoll(argv[1]), M = atoll(argv[2]), blocks = (N - 2 + 7) / 8, ranges = 0;
  unsigned char *wr = malloc(N * M), *rd = malloc(N * M);
  Marks w = {N * M, malloc(N * M), 0, 0}, r = {N * M, malloc(N * M), 0, 0};
  for (long long lo = 0; lo <= blocks; ++lo)
    for (long long hi = lo - 1; hi < blocks; ++hi, ++ranges) {
      memset(wr, 0, N * M); memset(rd, 0, N * M); memset(w.hit, 0, N * M); memset(r.hit, 0, N * M);
      for (long long i = 1; i < N - 1; ++i)
        for (long long j = 1; j < M - 1; ++j) {
          if (i < 8 * lo || i > 8 * hi + 7) continue;
          wr[i * M + j] = 1;
          rd[(i - 1) * M + j] = rd[(i + 1) * M + j] = rd[i * M + j - 1] = rd[i * M + j + 1] = 1;
        }
      polyk_enum_s2_k0_B_write(N, M, lo, hi, mark, &w);
      polyk_enum_s2_k0_A_read(N, M, lo, hi, mark, &r);
      if (w.twice || w.outside || r.twice || r.outside) { printf("FAIL lo %lld hi %lld: twice/outside\n", lo, hi); return 1; }
      for (long long i = 0; i < N; ++i) {
        long long first = M, last = -1;
        for (long long j = 0; j < M; ++j) if (rd[i * M + j]) { if (first == M) first = j; last = j; }
        for (long long j = 0; j < M; ++j) {
          long long e = i * M + j;
          if (w.hit[e] != wr[e]) { printf("FAIL lo %lld hi %lld: B(%lld, %lld) write %d, enumerated %d\n", lo, hi, i, j, wr[e], w.hit[e]); return 1; }
          if (rd[e] && !r.hit[e]) { printf("FAIL lo %lld hi %lld: A(%lld, %lld) read, not enumerated\n", lo, hi, i, j); return 1; }
          if (r.hit[e] && (j < first || j > last)) { printf("FAIL lo %lld hi %lld: A(%lld, %lld) enumerated outside its row's reads\n", lo, hi, i, j); return 1; }
        }
      }
    }
  printf("ok %lld %lld %lld\n", N, M, ranges);
  return 0;
}
