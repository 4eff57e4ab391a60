// Taking masked VTs back (docs/failures.md, "Probe and rejoin"). Masking asks each edge's transport for a
// fresh connection (Transport::redial), made when the path answers. Before each collective, and again
// when its tasks are done, a rank drops what arrived on a masked VT's edges (slots of its aborted attempt,
// the peers' probes) and puts one probe slot on each of its edges after the masking. A rank reports, in
// its commit, the masked VTs whose edges are not yet on their fresh connection or still hold anything
// unacknowledged; a VT no rank reports rejoins, on every rank, from the next collective. An abort carries
// the same report, so that when every live VT failed the retry can run on masked VTs that answer again.
// The report is also refreshed while a rank waits in a call, which sends the probes during it.
#pragma once
#include <cstdint>

struct precclComm;

namespace preccl {

// The drain and the probes; cheap when nothing is masked.
void probeMasked(precclComm* comm);
// The masked VTs this rank cannot take back yet.
uint64_t maskedNotReady(precclComm* comm);
// The masked VTs outside `notReadyAnywhere` (the same on every rank) rejoin from `fromEpoch`: the next
// one after a commit, this one's retry after an abort. Returns them.
uint64_t rejoin(precclComm* comm, uint64_t notReadyAnywhere, uint64_t fromEpoch);
// After an agreed abort: `failed` leaves the live set from this epoch.
void mask(precclComm* comm, uint64_t failed);
// VT v's state as precclCommGetVtStats and the trace show it: precclVtLive, precclVtMasked, or
// precclVtProbing (live again, still at the policy's floor share until its own telemetry is in).
int vtState(const precclComm* comm, int v);
const char* vtStateName(int state);

}  // namespace preccl
