// Taking masked VTs back (docs/failures.md, "Probe and rejoin"). Masking asks each edge's transport for a
// fresh connection (Transport::redial), made when the path answers. Before each collective, and again
// when its tasks are done, a rank drops what arrived on a masked VT's edges (slots of its aborted attempt,
// the peers' probes) and puts one probe slot on each of its edges after the masking. A rank reports, in
// its commit, the masked VTs whose edges are not yet on their fresh connection or still hold anything
// unacknowledged; a VT no rank reports rejoins, on every rank, from the next collective.
#pragma once
#include <cstdint>

struct precclComm;

namespace preccl {

// The drain and the probes; cheap when nothing is masked.
void probeMasked(precclComm* comm);
// The masked VTs this rank cannot take back yet.
uint64_t maskedNotReady(precclComm* comm);
// After a commit: the masked VTs outside `notReadyAnywhere` rejoin from the next epoch.
void rejoin(precclComm* comm, uint64_t notReadyAnywhere);
// After an agreed abort: `failed` leaves the live set from this epoch.
void mask(precclComm* comm, uint64_t failed);

}  // namespace preccl
