#include "policy/allocation.h"

#include <algorithm>

namespace preccl {

size_t Allocation::total() const {
  size_t t = 0;
  for (auto& r : vt) t += r.count;
  return t;
}

bool Allocation::coversExactly(size_t count) const {
  size_t next = 0;
  for (auto& r : vt) {
    if (r.offset != next) return false;
    next += r.count;
  }
  return next == count;
}

uint32_t Allocation::digest() const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over (offset, count, piece cap)
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; i++) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  for (auto& r : vt) {
    mix(r.offset);
    mix(r.count);
    mix(r.pieceCapBytes);
  }
  return static_cast<uint32_t>(h ^ (h >> 32));
}

Allocation staticAllocation(const AllocRequest& req) {
  Allocation a;
  const int n = std::max(1, req.nVTs);
  a.vt.resize(n);
  const size_t esz = std::max<size_t>(1, req.elemBytes);
  const size_t grain = std::max<size_t>(1, req.grainBytes / esz);  // elements per grain
  const size_t bytes = req.count * esz;
  int used = static_cast<int>(std::min<size_t>(n, std::max<size_t>(1, bytes / std::max<size_t>(1, req.minBytesPerVt))));
  const size_t grains = req.count / grain + (req.count % grain != 0);
  used = static_cast<int>(std::min<size_t>(used, std::max<size_t>(1, grains)));
  size_t off = 0;
  for (int v = 0; v < n; v++) {
    size_t g = v < used ? grains / used + (static_cast<size_t>(v) < grains % used ? 1 : 0) : 0;
    size_t c = std::min(g * grain, req.count - off);
    a.vt[v] = {off, c};
    off += c;
  }
  return a;
}

void oneVtAllocation(const AllocRequest& req, int vt, Allocation* out) {
  out->vt.assign(size_t(std::max(1, req.nVTs)), VtRange{});
  for (size_t v = 0; v < out->vt.size(); v++) out->vt[v].offset = int(v) > vt ? req.count : 0;
  if (vt >= 0 && size_t(vt) < out->vt.size()) out->vt[size_t(vt)].count = req.count;
}

bool policyFromName(const std::string& name, PolicyKind* out) {
  if (name.empty() || name == "static") {
    *out = PolicyKind::Static;
    return true;
  }
  if (name == "aimd") {
    *out = PolicyKind::Aimd;
    return true;
  }
  if (name == "preccl") {
    *out = PolicyKind::Preccl;
    return true;
  }
  return false;
}

const char* policyName(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::Static: return "static";
    case PolicyKind::Aimd: return "aimd";
    case PolicyKind::Preccl: return "preccl";
  }
  return "?";
}

}  // namespace preccl
