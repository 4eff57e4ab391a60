// The collectives a benchmark measures: names, geometry, bus-bandwidth factors (perf/collectives.h).
#include "collectives.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace perf {

bool parseBytes(const char* text, size_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || text[0] == '-') return false;
  unsigned shift = 0;
  switch (*end) {
    case '\0': break;
    case 'K': case 'k': shift = 10; end++; break;
    case 'M': case 'm': shift = 20; end++; break;
    case 'G': case 'g': shift = 30; end++; break;
    default: return false;
  }
  if (*end == 'B' || *end == 'b') end++;  // "64MB" is accepted too
  if (*end != '\0') return false;
  if (shift && v > (~0ull >> shift)) return false;
  *out = static_cast<size_t>(v << shift);
  return true;
}

Geometry geometryFor(Coll c, size_t bytes, size_t typeSize, int nranks) {
  const size_t n = size_t(nranks);
  const size_t total = bytes / typeSize;
  Geometry g;
  switch (c) {
    case Coll::AllReduce:
    case Coll::Broadcast:
    case Coll::Reduce:
    case Coll::SendRecv:
      g.count = g.sendElems = g.recvElems = g.totalElems = total;
      break;
    case Coll::AllGather:
    case Coll::Gather:
      g.count = total / n;
      g.sendElems = g.count;
      g.recvElems = g.totalElems = g.count * n;
      break;
    case Coll::ReduceScatter:
    case Coll::Scatter:
      g.count = total / n;
      g.sendElems = g.totalElems = g.count * n;
      g.recvElems = g.count;
      break;
    case Coll::AlltoAll:
      g.count = total / n;
      g.sendElems = g.recvElems = g.totalElems = g.count * n;
      break;
  }
  return g;
}

double busBwFactor(Coll c, int nranks) {
  const double n = nranks;
  switch (c) {
    case Coll::AllReduce: return 2.0 * (n - 1) / n;
    case Coll::AllGather:
    case Coll::ReduceScatter:
    case Coll::AlltoAll:
    case Coll::Gather:
    case Coll::Scatter: return (n - 1) / n;
    case Coll::Broadcast:
    case Coll::Reduce:
    case Coll::SendRecv: return 1.0;
  }
  return 1.0;
}

bool hasInPlace(Coll c) { return c != Coll::SendRecv; }

size_t inPlaceSendOffset(Coll c, int rank, size_t count) {
  return c == Coll::AllGather || c == Coll::Gather ? size_t(rank) * count : 0;
}

size_t inPlaceRecvOffset(Coll c, int rank, size_t count) {
  return c == Coll::ReduceScatter || c == Coll::Scatter ? size_t(rank) * count : 0;
}

}  // namespace perf
