// What a chain of ranks computes (send -> recvReduceSend -> ... -> recvReduceCopy), by the host's
// reduceCopy in the chain's order: r = pre(in[0]); r = pre(in[k]) (+) r; the last with the post-division.
// The reference of the device primitive tests, on CPU threads and on the GPU.
#pragma once
#include <vector>

#include "reduce/reduce.h"

inline std::vector<unsigned char> chainReference(const preccl::RedOp& op, precclDataType_t t, size_t count,
                                                 const std::vector<std::vector<unsigned char>>& in) {
  std::vector<unsigned char> acc(in[0].size()), next(in[0].size());
  void* out[] = {acc.data()};
  preccl::reduceCopy(op, t, count, in[0].data(), nullptr, 0, out, 1, in.size() == 1);
  for (size_t k = 1; k < in.size(); k++) {
    const void* prev[] = {acc.data()};
    void* o[] = {next.data()};
    preccl::reduceCopy(op, t, count, in[k].data(), prev, 1, o, 1, k + 1 == in.size());
    acc.swap(next);
  }
  return acc;
}
