/* perf-mpi-allreduce: MPI_Allreduce (float, sum) measured and printed like preccl-perf / nccl-tests, as the
 * OpenMPI reference point of perf/compare_allreduce.sh. Out-of-place uses two buffers, in-place
 * MPI_IN_PLACE. Every result element is checked. Options: -b -e -f -n -w -c (as preccl-perf), and
 * --iter-csv FILE: rank 0 writes one row per timed iteration (its own time; see docs/benchmarks.md). */
#include <errno.h>
#include <getopt.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  size_t minBytes, maxBytes, factor;
  int iters, warmup, check;
  const char* iterCsv; /* NULL: no per-iteration rows */
} Opts;

static int parseBytes(const char* t, size_t* out) {
  char* end = NULL;
  errno = 0;
  unsigned long long v = strtoull(t, &end, 10);
  if (errno || end == t || t[0] == '-') return 0;
  int shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10, end++;
  else if (*end == 'M' || *end == 'm') shift = 20, end++;
  else if (*end == 'G' || *end == 'g') shift = 30, end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end) return 0;
  *out = (size_t)(v << shift);
  return 1;
}

static int parseOpts(int argc, char** argv, Opts* o) {
  o->minBytes = 8, o->maxBytes = (size_t)64 << 20, o->factor = 2, o->iters = 20, o->warmup = 5, o->check = 1;
  o->iterCsv = NULL;
  static const struct option kLong[] = {{"iter-csv", required_argument, NULL, 1000}, {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "b:e:f:n:w:c:h", kLong, NULL)) != -1) {
    switch (c) {
      case 'b': if (!parseBytes(optarg, &o->minBytes)) return 0; break;
      case 'e': if (!parseBytes(optarg, &o->maxBytes)) return 0; break;
      case 'f': o->factor = (size_t)atol(optarg); if (o->factor < 2) return 0; break;
      case 'n': o->iters = atoi(optarg); if (o->iters < 1) return 0; break;
      case 'w': o->warmup = atoi(optarg); if (o->warmup < 0) return 0; break;
      case 'c': o->check = atoi(optarg) != 0; break;
      case 1000: o->iterCsv = optarg; break;
      default: return 0;
    }
  }
  return o->minBytes <= o->maxBytes;
}

static int64_t nowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Small integers: the float sum of up to 2^17 ranks is exact in any order. */
static float input(int rank, size_t i) { return (float)((rank * 7 + i * 13 + (i >> 7)) % 128); }

static void fill(float* buf, size_t n, int rank) {
  for (size_t i = 0; i < n; i++) buf[i] = input(rank, i);
}

static long long countWrong(const float* buf, size_t n, int nranks) {
  long long wrong = 0;
  for (size_t i = 0; i < n; i++) {
    float want = 0;
    for (int r = 0; r < nranks; r++) want += input(r, i);
    if (memcmp(&want, &buf[i], sizeof want) != 0) wrong++;
  }
  return wrong;
}

static double unixSeconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --iter-csv: rank 0's own time of each timed call (an extra reduction per call would disturb the run). */
static FILE* iterFile;
static int64_t programStartNs;

static void iterRow(size_t bytes, const char* mode, int iter, int64_t ns, double busFactor) {
  double us = (double)ns / 1e3, algbw = us > 0 ? (double)bytes / 1e3 / us : 0.0;
  fprintf(iterFile, "allreduce,%s,%zu,%d,%.6f,%.6f,%.3f,%.9f,%.9f\n", mode, bytes, iter,
          (double)(nowNs() - programStartNs) / 1e9, unixSeconds(), us, algbw, algbw * busFactor);
  fflush(iterFile);
}

/* Times iters calls after warmup; returns the slowest rank's time per call in microseconds. */
static double timeCalls(const Opts* o, const void* send, float* recv, size_t n, const char* mode, double busFactor) {
  for (int i = 0; i < o->warmup; i++) MPI_Allreduce(send, recv, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  int64_t t0 = nowNs();
  for (int i = 0; i < o->iters; i++) {
    int64_t ti = nowNs();
    MPI_Allreduce(send, recv, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (iterFile) iterRow(n * sizeof(float), mode, i, nowNs() - ti, busFactor);
  }
  int64_t ns = nowNs() - t0, maxNs = 0;
  MPI_Allreduce(&ns, &maxNs, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  return (double)maxNs / 1e3 / o->iters;
}

static void printMeasure(double us, double algbw, double busbw, long long wrong, int check) {
  char t[32];
  snprintf(t, sizeof t, us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f", us);
  if (check) printf("  %7s  %6.2f  %6.2f  %6lld", t, algbw, busbw, wrong);
  else printf("  %7s  %6.2f  %6.2f  %6s", t, algbw, busbw, "N/A");
}

int main(int argc, char** argv) {
  programStartNs = nowNs();
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  Opts o;
  if (!parseOpts(argc, argv, &o)) {
    if (rank == 0)
      fprintf(stderr, "usage: %s [-b min] [-e max] [-f factor] [-n iters] [-w warmup] [-c 0|1] [--iter-csv FILE]\n",
              argv[0]);
    MPI_Finalize();
    return 2;
  }
  if (rank == 0 && o.iterCsv) {
    iterFile = fopen(o.iterCsv, "w");
    if (!iterFile) fprintf(stderr, "perf-mpi-allreduce: cannot write %s: %s\n", o.iterCsv, strerror(errno));
    else fprintf(iterFile, "collective,mode,bytes,iter,t_s,unix_s,time_us,algbw,busbw\n");
  }
  size_t maxN = o.maxBytes / sizeof(float);
  float* send = malloc((maxN ? maxN : 1) * sizeof(float));
  float* recv = malloc((maxN ? maxN : 1) * sizeof(float));
  if (!send || !recv) MPI_Abort(MPI_COMM_WORLD, 1);
  memset(send, 0, (maxN ? maxN : 1) * sizeof(float));
  memset(recv, 0, (maxN ? maxN : 1) * sizeof(float));

  if (rank == 0) {
    printf("# perf-mpi-allreduce: nRanks %d minBytes %zu maxBytes %zu step: %zu(factor) warmup iters: %d iters: %d "
           "validation: %d\n#\n", nranks, o.minBytes, o.maxBytes, o.factor, o.warmup, o.iters, o.check);
    printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "",
           "", "", "");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type",
           "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "",
           "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  }
  const double factor = 2.0 * (nranks - 1) / nranks;
  long long totalWrong = 0;
  double bwSum = 0;
  int bwCount = 0;
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes;) {
    size_t n = bytes / sizeof(float);
    double us[2];
    long long wrong[2] = {0, 0};
    for (int ip = 0; ip < 2; ip++) {
      const void* src = ip ? MPI_IN_PLACE : (const void*)send;
      if (o.check) fill(ip ? recv : send, n, rank);
      us[ip] = timeCalls(&o, src, recv, n, ip ? "ip" : "oop", factor);
      if (o.check) {  /* one more call on fresh inputs, output poisoned first */
        if (!ip) memset(recv, 0xA5, n * sizeof(float));
        fill(ip ? recv : send, n, rank);
        MPI_Allreduce(src, recv, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        long long w = countWrong(recv, n, nranks);
        MPI_Allreduce(&w, &wrong[ip], 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        totalWrong += wrong[ip];
      }
    }
    if (rank == 0) {
      printf("%12zu  %12zu  %8s  %6s  %6d", n * sizeof(float), n, "float", "sum", -1);
      for (int ip = 0; ip < 2; ip++) {
        double algbw = us[ip] > 0 ? (double)(n * sizeof(float)) / 1e3 / us[ip] : 0.0;
        printMeasure(us[ip], algbw, algbw * factor, wrong[ip], o.check);
        bwSum += algbw * factor, bwCount++;
      }
      printf("\n");
      fflush(stdout);
    }
    size_t next = bytes ? bytes * o.factor : 1;
    if (next <= bytes) break;
    bytes = next;
  }
  if (rank == 0) {
    printf("# Out of bounds values : %lld %s\n", totalWrong, totalWrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g \n#\n", bwCount ? bwSum / bwCount : 0.0);
  }
  free(send);
  free(recv);
  if (iterFile) fclose(iterFile);
  MPI_Finalize();
  return totalWrong ? 1 : 0;
}
