// Host memory bandwidth (copy, read, write of 1 GiB arrays on every thread),
// the bound of the in-memory engine on a GPU machine (BENCHMARKS.md,
// "Several GPUs in one run"). Build a static binary here and carry it:
//   gcc -O2 -fopenmp -static -o carry/stream benches/memory/stream.c
//   (GPU machine) OMP_NUM_THREADS=16 carry/stream
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <omp.h>
#define N (1ull << 30)
static double now(void){ return omp_get_wtime(); }
int main(void){
  uint8_t *a = aligned_alloc(64, N), *b = aligned_alloc(64, N);
  #pragma omp parallel for schedule(static)
  for (size_t i = 0; i < N; i += 4096) { memset(a + i, 1, 4096); memset(b + i, 2, 4096); }
  for (int rep = 0; rep < 3; rep++) {
    double t0 = now();
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i += 1 << 16) memcpy(b + i, a + i, 1 << 16);
    double t1 = now();
    uint64_t s = 0;
    #pragma omp parallel for schedule(static) reduction(+:s)
    for (size_t i = 0; i < N; i += 8) s += *(uint64_t *)(a + i);
    double t2 = now();
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i += 1 << 16) memset(b + i, rep, 1 << 16);
    double t3 = now();
    printf("threads %d: copy %.1f GB/s (read+write), read %.1f GB/s, write %.1f GB/s (%llu)\n",
      omp_get_max_threads(), 2.0 * N / (t1 - t0) / 1e9, N / (t2 - t1) / 1e9, N / (t3 - t2) / 1e9, (unsigned long long)(s & 1));
  }
  return 0;
}
