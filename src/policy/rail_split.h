// Under rail affinity (topo/topology.h Topology::rail) a rank sends only through the NICs it owns, and
// the point-to-point families read the policy's allocation as a host's split: the part of every block
// that leaves a host through each VT's NIC. Each rank sends its own blocks; what a VT's owners cannot
// carry of its part comes from the host's other ranks through the VT's relay (shared memory, then the
// owner's NIC). Pure functions, the same on every rank for the same inputs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "policy/allocation.h"

namespace preccl {

enum class RelayMode { Auto, Off, Force };

// The least gain for which Auto relays: the owners alone must stretch the host's time beyond
// kRelayGainNum / kRelayGainDen of its own split's (a tenth more; `stretchesBeyond` below). The relay
// costs a copy and a forwarding task, and on balanced links the measured shares differ by a few percent:
// below this margin relaying would move bytes for noise. A ratio of integers, so every rank decides alike.
constexpr uint32_t kRelayGainNum = 11, kRelayGainDen = 10;

// Per local rank of one host (own[g]: the VTs whose NIC local rank g owns, bit v; live: the live VTs),
// its split of a block of `count` elements over the VTs (contiguous ranges in VT order):
//   Off:   each rank over its own VTs only, in proportion to the host's parts there (over every VT the
//          host uses when it uses none of the rank's own).
//   Auto:  Off, unless that stretches the host's time beyond kRelayGainNum / kRelayGainDen; then the host's split
//          with the fewest elements relayed: every rank first fills the VTs it owns, up to the host's part
//          of each (nLocal x host.vt[v].count over the host's blocks), and only what remains goes to VTs
//          with room left, through their relays. An owner may take up to `slackElems` more than a VT's
//          part, so that parts rounded to grains relay nothing. On balanced links (equal shares, or
//          shares a few percent apart) nothing is relayed.
//   Force: every rank takes the host's split itself, relaying all it has on VTs it does not own (tests).
// A message for which the host's split uses fewer VTs than are live (small: the policies then use fewer
// VTs) goes, under Auto and Off, whole on the rank's own live VT with the largest part: no relay.
std::vector<Allocation> railSplit(const Allocation& host, size_t count, const std::vector<uint64_t>& own, uint64_t live,
                                  RelayMode mode, size_t slackElems);

// Whether the host's time under a split (per[g][v]: local rank g's elements on VT v) exceeds num / den of
// its own split's, as the model predicts it: the host's parts are in proportion to what each VT carries
// in the same time, so VT v takes load[v] / (nLocal x hostPart[v]) of it, and the worst VT sets the time
// (a VT the host gives nothing that carries elements stretches it without bound).
bool stretchesBeyond(const std::vector<std::vector<size_t>>& per, const std::vector<size_t>& hostPart, uint32_t num,
                     uint32_t den);

// Elements the split sends through a relay: those on VTs their rank does not own.
size_t relayedElems(const std::vector<Allocation>& split, const std::vector<uint64_t>& own);

}  // namespace preccl
