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
};

constexpr uint32_t kDetectMsDefault = 500;  // PRECCL_DETECT_MS

// Dead: bytes are outstanding, the retransmission timer fired, and nothing was acknowledged for
// `detectMs`. A congested or slow path still acknowledges what it delivers; a late or stopped peer's
// kernel still acknowledges (or closes the window, leaving nothing outstanding); only a path that drops
// everything meets all three.
inline bool pathDead(const PathSample& s, uint32_t detectMs) {
  return s.unacked > 0 && s.timeouts > 0 && s.msSinceAck >= detectMs;
}

}  // namespace preccl
