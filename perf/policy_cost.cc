// What the policy costs a rank per call at scale: the preccl policy's observe + decide for one CCT, with
// new telemetry every call (so every call takes a model step: the worst case), for 1..32 VTs. A rank
// keeps one row of per-VT maxima whatever the number of ranks (docs/telemetry.md, "At scale"), so the
// cost does not depend on n; it is set against the time a 64 MiB ring AllReduce takes at 400 Gb/s.
//
// Usage: preccl-policy-cost [calls]      (default 200000)
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "policy/policy.h"

using namespace preccl;

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 200000;
  const double gbps = 400, bytes = 64.0 * (1 << 20);
  std::printf("%4s %14s %28s\n", "VTs", "ns per call", "of a 64 MiB AllReduce (n=1024)");
  for (int vts : {1, 2, 4, 8, 16, 32}) {
    PolicyState st;
    st.vtGroup.assign(size_t(vts), -1);
    for (int v = 0; v < vts; v++) st.vtGroup[size_t(v)] = v % 8;  // up to 8 NICs, VTs v and v + 8 share one
    AllocRequest req;
    req.count = 16 << 20;
    req.elemBytes = 4;
    req.nVTs = vts;
    AllocKey key;
    EpochTelemetry t;
    uint64_t sink = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < calls; c++) {
      // The latest telemetry: one row of per-VT maxima, as every rank holds it (core/settle.cc).
      t.reset(uint64_t(c + 1), 1, vts);
      for (int v = 0; v < vts; v++) {
        VtRecord& r = t.at(0, v);
        r.bytes = (64u << 20) / uint64_t(vts);
        r.elapsedNs = 1000000 + uint64_t((c * 7919 + v * 104729) % 200000) + (v == 0 ? 3000000 : 0);
      }
      const Allocation al = decide(PolicyKind::Preccl, st, req, key, &t, ~0ull);
      sink += al.vt[0].count;
    }
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / calls;
    const double callNs = 2.0 * 1023 / 1024 * bytes / (gbps / 8) ;  // ring AllReduce: 2(n-1)/n of the bytes at the link rate (B/ns)
    std::printf("%4d %14.0f %27.4f%%%s\n", vts, ns, 100.0 * ns / callNs, sink == 0 ? " (?)" : "");
  }
  return 0;
}
