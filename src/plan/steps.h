// The primitives a planner writes a Step with, named after what they do (NCCL's send, recv,
// recvReduceSend, recvReduceCopySend, recvCopySend ...). Edges are Plan::edges indices; -1 leaves an input
// or output out where the algorithm has none there (a tree's leaf has no children, a chain's last rank no
// successor), and the step is then the smaller primitive of that shape (primOf).
#pragma once
#include <initializer_list>

#include "plan/plan.h"

namespace preccl::steps {

namespace detail {
inline Step make(std::initializer_list<int32_t> recv, std::initializer_list<int32_t> send, const char* src, char* dst,
                 size_t bytes, bool reduce = false, bool post = false) {
  Step s;
  for (int32_t e : recv)
    if (e >= 0) s.recv[s.nrecv++] = e;
  for (int32_t e : send)
    if (e >= 0) s.send[s.nsend++] = e;
  s.src = src;
  s.dst = dst;
  s.bytes = bytes;
  s.reduce = reduce;
  s.post = post;
  return s;
}
}  // namespace detail

inline Step copy(const char* src, char* dst, size_t bytes) { return detail::make({}, {}, src, dst, bytes); }
// One rank's reduction: its input, pre-multiplied, to its output, post-divided.
inline Step reduceCopy(const char* src, char* dst, size_t bytes) { return detail::make({}, {}, src, dst, bytes, true, true); }
inline Step send(int32_t to, const char* src, size_t bytes) { return detail::make({}, {to}, src, nullptr, bytes); }
// A reduction's first hop: this rank's input, pre-multiplied (PreMulSum), sent on.
inline Step reduceSend(int32_t to, const char* src, size_t bytes) { return detail::make({}, {to}, src, nullptr, bytes, true); }
inline Step copySend(const char* src, char* dst, std::initializer_list<int32_t> to, size_t bytes) {
  return detail::make({}, to, src, dst, bytes);
}
inline Step recv(int32_t from, char* dst, size_t bytes) { return detail::make({from}, {}, nullptr, dst, bytes); }
inline Step recvCopySend(int32_t from, char* dst, std::initializer_list<int32_t> to, size_t bytes) {
  return detail::make({from}, to, nullptr, dst, bytes);
}
inline Step recvReduceSend(std::initializer_list<int32_t> from, const char* src, int32_t to, size_t bytes) {
  return detail::make(from, {to}, src, nullptr, bytes, true);
}
inline Step recvReduceCopy(std::initializer_list<int32_t> from, const char* src, char* dst, size_t bytes) {
  return detail::make(from, {}, src, dst, bytes, true, true);
}
inline Step recvReduceCopySend(std::initializer_list<int32_t> from, const char* src, char* dst,
                               std::initializer_list<int32_t> to, size_t bytes) {
  return detail::make(from, to, src, dst, bytes, true, true);
}
// A relay's forward (Topology::rail): another rank's slots passed on, with the telemetry they came with.
// `countsAsSend`: the relay's record counts them as its own sends (Step::relayIsSend). A header-only slot
// (a chain's telemetry tail) is forwarded as one.
inline Step forward(int32_t from, int32_t to, size_t bytes, bool countsAsSend, bool headerOnly = false) {
  Step s = detail::make({from}, {to}, nullptr, nullptr, bytes);
  s.relayed = true;
  s.relayIsSend = countsAsSend;
  s.headerOnly = headerOnly;
  return s;
}
// One header-only slot (telemetry): received from each of `from`, then sent to each of `to`.
inline Step header(std::initializer_list<int32_t> from, std::initializer_list<int32_t> to) {
  Step s = detail::make(from, to, nullptr, nullptr, 0);
  s.headerOnly = true;
  return s;
}

}  // namespace preccl::steps
