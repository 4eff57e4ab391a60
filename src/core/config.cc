#include "core/config.h"

#include <algorithm>

#include "core/debug.h"
#include "base/env.h"
#include "policy/detect.h"
#include "transport/fifo.h"

namespace preccl {

precclResult_t resolveConfig(const precclConfig_t* user, Config* c) {
  if (user && (user->magic != PRECCL_CONFIG_MAGIC || user->size < sizeof(precclConfig_t)))
    return PRECCL_ERR(nullptr, precclInvalidArgument,
                      "config was not initialised with PRECCL_CONFIG_INITIALIZER (bad magic or size)");
  c->nVTs = static_cast<int>(envInt("NVTS", 0));
  c->shmDisable = envInt("SHM_DISABLE", 0) != 0;
  c->timeoutMs = static_cast<uint64_t>(std::max<int64_t>(1, envInt("TIMEOUT", 120))) * 1000;
  c->nslots = static_cast<uint32_t>(std::clamp<int64_t>(envInt("NSLOTS", 8), 2, kMaxSlots));
  int64_t slot = envInt("SLOT_BYTES", 512 * 1024);
  c->slotBytes = static_cast<uint32_t>(std::clamp<int64_t>(slot, 4096, 16 << 20) / 64 * 64);
  c->socketBuffer = envInt("SOCKET_BUFFER", -1);
  if (c->socketBuffer < -1 || c->socketBuffer > (1ll << 30))
    return PRECCL_ERR(nullptr, precclInvalidArgument, "PRECCL_SOCKET_BUFFER={} is not in 0..1G", c->socketBuffer);
  c->treeMaxBytes = static_cast<size_t>(std::max<int64_t>(0, envInt("TREE_MAX_BYTES", 64 * 1024)));
  c->smallMaxBytes = static_cast<size_t>(std::max<int64_t>(0, envInt("SMALL_MAX_BYTES", 64 * 1024)));
  c->checkAlloc = envInt("CHECK_ALLOC", 0) != 0;
  c->retry = envInt("RETRY", 1) != 0;
  c->deferCommit = envInt("DEFER_COMMIT", 1) != 0;
  c->detectMs = static_cast<uint32_t>(std::clamp<int64_t>(envInt("DETECT_MS", kDetectMsDefault), 50, 600000));
  std::string algo = envString("ALGO", "");
  if (algo.empty()) c->algo = Algo::Auto;
  else if (algo == "ring" || algo == "Ring") c->algo = Algo::Ring;
  else if (algo == "tree" || algo == "Tree") c->algo = Algo::Tree;
  else if (algo == "doubling" || algo == "Doubling") c->algo = Algo::Doubling;
  else return PRECCL_ERR(nullptr, precclInvalidArgument, "PRECCL_ALGO={} is not ring, tree or doubling", algo);
  std::string affinity = envString("NIC_AFFINITY", "all");
  if (affinity == "all") c->railAffinity = false;
  else if (affinity == "rail") c->railAffinity = true;
  else return PRECCL_ERR(nullptr, precclInvalidArgument, "PRECCL_NIC_AFFINITY={} is not all or rail", affinity);
  std::string relay = envString("RELAY", "auto");
  if (relay == "auto") c->relay = RelayMode::Auto;
  else if (relay == "off") c->relay = RelayMode::Off;
  else if (relay == "force") c->relay = RelayMode::Force;
  else return PRECCL_ERR(nullptr, precclInvalidArgument, "PRECCL_RELAY={} is not auto, off or force", relay);
  std::string exec = envString("EXECUTOR", "host");
  if (exec == "host") c->lanes = false;
  else if (exec == "lanes") c->lanes = true;
  else return PRECCL_ERR(nullptr, precclInvalidArgument, "PRECCL_EXECUTOR={} is not host or lanes", exec);
  std::string policy = envString("POLICY", "preccl");
  if (user && user->policy) policy = user->policy;
  if (!policyFromName(policy, &c->policy))
    return PRECCL_ERR(nullptr, precclInvalidArgument, "unknown policy '{}' (known: static, aimd, preccl)", policy);
  if (user) {
    if (user->blocking != PRECCL_CONFIG_UNDEF_INT) c->blocking = user->blocking != 0;
    if (user->numVTs != PRECCL_CONFIG_UNDEF_INT) {
      if (user->numVTs < 1 || user->numVTs > kMaxVtsConfig)
        return PRECCL_ERR(nullptr, precclInvalidArgument, "config numVTs={} is not in 1..{}", user->numVTs, kMaxVtsConfig);
      c->nVTs = user->numVTs;
    }
    if (user->commName) c->commName = user->commName;
  }
  if (c->nVTs < 0 || c->nVTs > kMaxVtsConfig)
    return PRECCL_ERR(nullptr, precclInvalidArgument, "PRECCL_NVTS={} is not in 1..{}", c->nVTs, kMaxVtsConfig);
  return precclSuccess;
}

}  // namespace preccl
