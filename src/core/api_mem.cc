// Memory API: MemAlloc / MemFree, buffer registration and windows. On the CPU build buffers are host
// memory and every rank's executor reads and writes them directly, so registration has nothing to set up;
// the handles are real (checked when given back, freed with the communicator) so that a program written
// for NCCL's registration runs unchanged.
#include <cstdlib>

#include "core/comm.h"
#include "core/debug.h"

using namespace preccl;

namespace {

constexpr size_t kPageBytes = 4096;  // NCCL_WIN_REQUIRED_ALIGNMENT

precclResult_t addRegistration(precclComm* comm, void* buff, size_t size, int winFlags, const char* fn,
                               Registration** out) {
  PRECCL_CHECK(checkComm(comm, fn));
  if (!buff || size == 0)
    return PRECCL_ERR(comm, precclInvalidArgument, "{}: buffer {} of {} bytes", fn, buff, size);
  auto reg = std::make_unique<Registration>();
  reg->winFlags = winFlags;
  std::lock_guard<std::mutex> lock(comm->opsMutex);
  *out = reg.get();
  comm->registrations.push_back(std::move(reg));
  return precclSuccess;
}

precclResult_t dropRegistration(precclComm* comm, const void* handle, bool window, const char* fn) {
  PRECCL_CHECK(checkComm(comm, fn));
  std::lock_guard<std::mutex> lock(comm->opsMutex);
  auto& regs = comm->registrations;
  for (size_t i = 0; i < regs.size(); i++) {
    if (regs[i].get() != handle || (regs[i]->winFlags >= 0) != window) continue;
    regs.erase(regs.begin() + static_cast<long>(i));
    return precclSuccess;
  }
  return PRECCL_ERR(comm, precclInvalidArgument, "{}: {} is not a {} of this communicator", fn, handle,
                    window ? "window" : "registration handle");
}

}  // namespace

extern "C" {

precclResult_t precclMemAlloc(void** ptr, size_t size) {
  if (!ptr) return PRECCL_ERR(nullptr, precclInvalidArgument, "MemAlloc: ptr is NULL");
  *ptr = nullptr;
  if (size == 0) return PRECCL_ERR(nullptr, precclInvalidArgument, "MemAlloc: size is 0");
  const size_t rounded = (size + kPageBytes - 1) / kPageBytes * kPageBytes;
  if (rounded < size || posix_memalign(ptr, kPageBytes, rounded) != 0) {
    *ptr = nullptr;
    return PRECCL_ERR(nullptr, precclSystemError, "MemAlloc: cannot allocate {} bytes", size);
  }
  return precclSuccess;
}

precclResult_t precclMemFree(void* ptr) {
  free(ptr);  // NULL is accepted, as by free()
  return precclSuccess;
}

precclResult_t precclCommRegister(const precclComm_t comm, void* buff, size_t size, void** handle) {
  Registration* reg = nullptr;
  if (!handle) return PRECCL_ERR(nullptr, precclInvalidArgument, "CommRegister: handle is NULL");
  PRECCL_CHECK(addRegistration(comm, buff, size, -1, "CommRegister", &reg));
  *handle = reg;
  return precclSuccess;
}

precclResult_t precclCommDeregister(const precclComm_t comm, void* handle) {
  return dropRegistration(comm, handle, false, "CommDeregister");
}

precclResult_t precclCommWindowRegister(precclComm_t comm, void* buff, size_t size, precclWindow_t* win,
                                        int winFlags) {
  if (winFlags != PRECCL_WIN_DEFAULT && winFlags != PRECCL_WIN_COLL_SYMMETRIC)
    return PRECCL_ERR(comm, precclInvalidArgument, "CommWindowRegister: unknown flags {:#x}", winFlags);
  Registration* reg = nullptr;
  if (!win) return PRECCL_ERR(nullptr, precclInvalidArgument, "CommWindowRegister: win is NULL");
  PRECCL_CHECK(addRegistration(comm, buff, size, winFlags, "CommWindowRegister", &reg));
  *win = reinterpret_cast<precclWindow_t>(reg);
  return precclSuccess;
}

precclResult_t precclCommWindowDeregister(precclComm_t comm, precclWindow_t win) {
  return dropRegistration(comm, win, true, "CommWindowDeregister");
}

}  // extern "C"
