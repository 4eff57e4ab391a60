// Option parsing for preccl-perf; names, defaults and size suffixes follow nccl-tests.
#include "perf_args.h"

#include <getopt.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace perf {
namespace {

constexpr const char* kOps[] = {"sum", "prod", "max", "min", "avg"};
// Index = precclDataType_t value; spelled as nccl-tests prints them.
constexpr const char* kTypes[] = {"int8",  "uint8",  "int32",  "uint32",   "int64",  "uint64",
                                  "half",  "float",  "double", "bfloat16", "f8e4m3", "f8e5m2"};
// Aliases nccl-tests and users commonly type.
struct TypeAlias {
  const char* name;
  precclDataType_t type;
};
constexpr TypeAlias kTypeAliases[] = {
    {"char", precclInt8},      {"int", precclInt32},      {"fp16", precclHalf},   {"float16", precclHalf},
    {"fp32", precclFloat},     {"float32", precclFloat},  {"fp64", precclDouble}, {"float64", precclDouble},
    {"bf16", precclBfloat16},  {"e4m3", precclFloat8e4m3}, {"fp8_e4m3", precclFloat8e4m3},
    {"e5m2", precclFloat8e5m2}, {"fp8_e5m2", precclFloat8e5m2},
};

void usage(const char* prog) {
  std::printf(
      "Usage: %s [options]\n"
      "  -t <coll>      allreduce (default), allgather, reducescatter, broadcast, reduce, alltoall,\n"
      "                 gather, scatter, sendrecv\n"
      "  -b <bytes>     minimum size (default 8; K/M/G suffixes)\n"
      "  -e <bytes>     maximum size (default 64M)\n"
      "  -f <factor>    multiply the size by factor each step (default 2)\n"
      "  -i <bytes>     add this increment each step instead of -f\n"
      "  -n <iters>     timed iterations per size (default 20)\n"
      "  -w <iters>     warmup iterations per size (default 5)\n"
      "  -c <0|1>       check every result element (default 1)\n"
      "  -o <op>        sum (default), prod, max, min, avg\n"
      "  -d <type>      int8 uint8 int32 uint32 int64 uint64 half float (default) double bfloat16\n"
      "                 f8e4m3 f8e5m2\n"
      "  -r <root>      root rank of broadcast, reduce, gather, scatter (default 0)\n"
      "  -z <0|1>       1 (default): NULL stream, each call blocks; 0: enqueue on a stream, then sync\n"
      "  --ranks N      start N local ranks as processes (default 4 without a job environment)\n"
      "  --csv FILE     also write one CSV row per size to FILE\n"
      "  --iter-csv FILE  rank 0 writes one row per timed iteration (its own time, per-VT shares)\n"
      "  -h             this help\n"
      "Job environment (one process per rank): PRECCL_RANK, PRECCL_NRANKS (or OpenMPI's\n"
      "OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE) and PRECCL_ROOT_ADDR=<ip>:<port>.\n",
      prog);
}

bool parseInt(const char* text, long lo, long hi, long* out) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool parseType(const char* name, precclDataType_t* out) {
  for (int i = 0; i < precclNumTypes; i++) {
    if (std::strcmp(name, kTypes[i]) == 0) {
      *out = static_cast<precclDataType_t>(i);
      return true;
    }
  }
  for (const auto& a : kTypeAliases) {
    if (std::strcmp(name, a.name) == 0) {
      *out = a.type;
      return true;
    }
  }
  return false;
}

}  // namespace

const char* opName(precclRedOp_t op) {
  return (op >= 0 && op < precclNumOps) ? kOps[op] : "?";
}

const char* typeName(precclDataType_t t) {
  return (t >= 0 && t < precclNumTypes) ? kTypes[t] : "?";
}

int parseArgs(int argc, char** argv, PerfArgs* out) {
  enum { kOptRanks = 1000, kOptCsv, kOptIterCsv };
  static const option kLong[] = {{"ranks", required_argument, nullptr, kOptRanks},
                                 {"csv", required_argument, nullptr, kOptCsv},
                                 {"iter-csv", required_argument, nullptr, kOptIterCsv},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  PerfArgs a;
  optind = 1;
  int c;
  long v;
  auto bad = [&](const char* what, const char* val) {
    std::fprintf(stderr, "preccl-perf: invalid %s '%s' (see -h)\n", what, val);
    return -1;
  };
  while ((c = getopt_long(argc, argv, "t:b:e:f:i:n:w:c:o:d:r:z:h", kLong, nullptr)) != -1) {
    switch (c) {
      case 't': if (!collFromKey(optarg, &a.coll)) return bad("collective", optarg); break;
      case 'b': if (!parseBytes(optarg, &a.minBytes)) return bad("-b size", optarg); break;
      case 'e': if (!parseBytes(optarg, &a.maxBytes)) return bad("-e size", optarg); break;
      case 'f':
        if (!parseInt(optarg, 2, 1 << 20, &v)) return bad("-f factor (>= 2)", optarg);
        a.factor = size_t(v), a.increment = 0;
        break;
      case 'i':
        if (!parseBytes(optarg, &a.increment) || a.increment == 0) return bad("-i increment", optarg);
        break;
      case 'n': if (!parseInt(optarg, 1, 1 << 30, &v)) return bad("-n iters", optarg); a.iters = int(v); break;
      case 'w': if (!parseInt(optarg, 0, 1 << 30, &v)) return bad("-w warmup", optarg); a.warmup = int(v); break;
      case 'c': if (!parseInt(optarg, 0, 1, &v)) return bad("-c", optarg); a.check = v != 0; break;
      case 'z': if (!parseInt(optarg, 0, 1, &v)) return bad("-z", optarg); a.blocking = v != 0; break;
      case 'r': if (!parseInt(optarg, 0, 1 << 30, &v)) return bad("-r root", optarg); a.root = int(v); break;
      case 'o': {
        bool found = false;
        for (int i = 0; i < precclNumOps; i++)
          if (std::strcmp(optarg, kOps[i]) == 0) a.op = static_cast<precclRedOp_t>(i), found = true;
        if (!found) return bad("-o op", optarg);
        break;
      }
      case 'd': if (!parseType(optarg, &a.type)) return bad("-d type", optarg); break;
      case kOptRanks:
        if (!parseInt(optarg, 1, 4096, &v)) return bad("--ranks", optarg);
        a.ranks = int(v);
        break;
      case kOptCsv: a.csv = optarg; break;
      case kOptIterCsv: a.iterCsv = optarg; break;
      case 'h': usage(argv[0]); return 1;
      default: return -1;  // getopt already printed the reason
    }
  }
  if (optind < argc) return bad("argument", argv[optind]);
  if (a.minBytes > a.maxBytes) return bad("-b (larger than -e)", std::to_string(a.minBytes).c_str());
  *out = a;
  return 0;
}

}  // namespace perf
