// When a path is dead rather than slow (docs/failures.md, "Detect"). A pure rule over what the sender's
// transport knows of the path, so that it is tested without sockets and every transport applies the same.
#pragma once
#include <cstdint>

namespace preccl {

// A sending edge's path as its transport sees it (for TCP: tcp_info).
struct PathSample {
  uint32_t unacked = 0;      // segments sent and not acknowledged
  uint32_t timeouts = 0;     // retransmission timeouts since the last acknowledgement
  uint32_t msSinceAck = 0;   // since the last acknowledgement of anything
  // The peer's window was closed: bytes wait unsent (`queued`) and window probes go out; `probes` counts
  // those not answered since the last acknowledgement.
  uint32_t probes = 0;
  uint32_t queued = 0;
};

constexpr uint32_t kDetectMsDefault = 500;  // PRECCL_DETECT_MS

// Dead: nothing was acknowledged for `detectMs` while either bytes are outstanding and the retransmission
// timer fired, or bytes wait behind a closed window and two window probes went unanswered (the window
// update that would have opened it was lost with the path). A congested or slow path still acknowledges
// what it delivers, and a late or stopped peer's kernel answers every window probe (its probes count
// stays at most 1), so only a path that drops everything meets the rule.
inline bool pathDead(const PathSample& s, uint32_t detectMs) {
  if (s.msSinceAck < detectMs) return false;
  return (s.unacked > 0 && s.timeouts > 0) || (s.queued > 0 && s.probes >= 2);
}

}  // namespace preccl
