// Collective and point-to-point API: argument checks (every bad argument is an error code and a message,
// never a crash), then submit().

#include "core/comm.h"
#include "core/debug.h"
#include "core/enqueue.h"
#include "core/group.h"
#include "reduce/dtype.h"

using namespace preccl;

namespace {

// Resolves a built-in or PreMulSum op for `dtype`.
precclResult_t resolveOp(precclComm* comm, precclRedOp_t op, precclDataType_t dtype, const char* fn, RedOp* out) {
  *out = RedOp{};
  int o = static_cast<int>(op);
  if (o >= 0 && o < precclNumOps) {
    if (op == precclAvg) {
      out->kind = RedKind::Sum;
      out->postDivide = comm->nranks;
    } else {
      out->kind = static_cast<RedKind>(o);
    }
    return precclSuccess;
  }
  std::lock_guard<std::mutex> lock(comm->opsMutex);
  size_t idx = static_cast<size_t>(o) - precclNumOps;
  if (o < 0 || idx >= comm->userOps.size() || !comm->userOps[idx].live)
    return PRECCL_ERR(comm, precclInvalidArgument, "{}: invalid reduction op {}", fn, o);
  if (comm->userOps[idx].dtype != dtype)
    return PRECCL_ERR(comm, precclInvalidArgument, "{}: op {} was created for type {}, used with {}", fn, o,
                      dtypeName(comm->userOps[idx].dtype), dtypeName(dtype));
  *out = comm->userOps[idx].op;
  return precclSuccess;
}

// Common checks; `elems` is the largest element count any buffer of this call spans.
precclResult_t checkArgs(precclComm* comm, const char* fn, precclDataType_t dtype, size_t count, size_t blocks,
                         const void* sendbuff, bool needSend, const void* recvbuff, bool needRecv) {
  PRECCL_CHECK(checkComm(comm, fn));
  if (comm->revoked.load())
    return PRECCL_ERR(comm, precclInvalidUsage, "{}: the communicator was revoked (only Split, Shrink, Destroy and "
                      "Abort remain)", fn);
  if (!dtypeValid(static_cast<int>(dtype)))
    return PRECCL_ERR(comm, precclInvalidArgument, "{}: invalid data type {}", fn, static_cast<int>(dtype));
  const size_t esz = dtypeSize(dtype);
  // No buffer can be larger than the user address space (2^47 on x86-64 Linux; 2^48 leaves margin).
  constexpr size_t kMaxBytes = size_t{1} << 48;
  if (count > kMaxBytes / esz / blocks)
    return PRECCL_ERR(comm, precclInvalidArgument, "{}: count {} x {} B x {} exceeds the address space", fn, count,
                      esz, blocks);
  if (count > 0 && needSend && !sendbuff) return PRECCL_ERR(comm, precclInvalidArgument, "{}: sendbuff is NULL", fn);
  if (count > 0 && needRecv && !recvbuff) return PRECCL_ERR(comm, precclInvalidArgument, "{}: recvbuff is NULL", fn);
  return precclSuccess;
}

precclResult_t checkRoot(precclComm* comm, const char* fn, int root) {
  if (root < 0 || root >= comm->nranks)
    return PRECCL_ERR(comm, precclInvalidArgument, "{}: root {} is not in 0..{}", fn, root, comm->nranks - 1);
  return precclSuccess;
}

CctArgs args(Coll coll, const void* s, void* r, size_t count, precclDataType_t dtype, int root = 0) {
  CctArgs a;
  a.coll = coll;
  a.sendbuff = s;
  a.recvbuff = r;
  a.count = count;
  a.dtype = dtype;
  a.root = root;
  return a;
}

}  // namespace

extern "C" {

precclResult_t precclAllReduce(const void* sendbuff, void* recvbuff, size_t count, precclDataType_t datatype,
                               precclRedOp_t op, precclComm_t comm, precclStream_t stream) {
  PRECCL_CHECK(checkArgs(comm, "AllReduce", datatype, count, 1, sendbuff, true, recvbuff, true));
  CctArgs a = args(Coll::AllReduce, sendbuff, recvbuff, count, datatype);
  PRECCL_CHECK(resolveOp(comm, op, datatype, "AllReduce", &a.op));
  return submit(comm, stream, std::move(a));
}

precclResult_t precclBroadcast(const void* sendbuff, void* recvbuff, size_t count, precclDataType_t datatype, int root,
                               precclComm_t comm, precclStream_t stream) {
  PRECCL_CHECK(checkComm(comm, "Broadcast"));
  PRECCL_CHECK(checkRoot(comm, "Broadcast", root));
  PRECCL_CHECK(checkArgs(comm, "Broadcast", datatype, count, 1, sendbuff, comm->rank == root, recvbuff, true));
  return submit(comm, stream, args(Coll::Broadcast, sendbuff, recvbuff, count, datatype, root));
}

precclResult_t precclReduce(const void* sendbuff, void* recvbuff, size_t count, precclDataType_t datatype,
                            precclRedOp_t op, int root, precclComm_t comm, precclStream_t stream) {
  PRECCL_CHECK(checkComm(comm, "Reduce"));
  PRECCL_CHECK(checkRoot(comm, "Reduce", root));
  PRECCL_CHECK(checkArgs(comm, "Reduce", datatype, count, 1, sendbuff, true, recvbuff, comm->rank == root));
  CctArgs a = args(Coll::Reduce, sendbuff, recvbuff, count, datatype, root);
  PRECCL_CHECK(resolveOp(comm, op, datatype, "Reduce", &a.op));
  return submit(comm, stream, std::move(a));
}

precclResult_t precclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, precclDataType_t datatype,
                               precclComm_t comm, precclStream_t stream) {
  PRECCL_CHECK(checkComm(comm, "AllGather"));
  PRECCL_CHECK(checkArgs(comm, "AllGather", datatype, sendcount, comm->nranks, sendbuff, true, recvbuff, true));
  return submit(comm, stream, args(Coll::AllGather, sendbuff, recvbuff, sendcount, datatype));
}

precclResult_t precclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, precclDataType_t datatype,
                                   precclRedOp_t op, precclComm_t comm, precclStream_t stream) {
  PRECCL_CHECK(checkComm(comm, "ReduceScatter"));
  PRECCL_CHECK(checkArgs(comm, "ReduceScatter", datatype, recvcount, comm->nranks, sendbuff, true, recvbuff, true));
  CctArgs a = args(Coll::ReduceScatter, sendbuff, recvbuff, recvcount, datatype);
  PRECCL_CHECK(resolveOp(comm, op, datatype, "ReduceScatter", &a.op));
  return submit(comm, stream, std::move(a));
}

precclResult_t precclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, precclDataType_t datatype,
                              precclComm_t comm, precclStream_t stream) {
  PRECCL_CHECK(checkComm(comm, "AlltoAll"));
  PRECCL_CHECK(checkArgs(comm, "AlltoAll", datatype, count, comm->nranks, sendbuff, true, recvbuff, true));
  return submit(comm, stream, args(Coll::AlltoAll, sendbuff, recvbuff, count, datatype));
}

precclResult_t precclGather(const void* sendbuff, void* recvbuff, size_t count, precclDataType_t datatype, int root,
                            precclComm_t comm, precclStream_t stream) {
  PRECCL_CHECK(checkComm(comm, "Gather"));
  PRECCL_CHECK(checkRoot(comm, "Gather", root));
  PRECCL_CHECK(checkArgs(comm, "Gather", datatype, count, comm->nranks, sendbuff, true, recvbuff, comm->rank == root));
  return submit(comm, stream, args(Coll::Gather, sendbuff, recvbuff, count, datatype, root));
}

precclResult_t precclScatter(const void* sendbuff, void* recvbuff, size_t count, precclDataType_t datatype, int root,
                             precclComm_t comm, precclStream_t stream) {
  PRECCL_CHECK(checkComm(comm, "Scatter"));
  PRECCL_CHECK(checkRoot(comm, "Scatter", root));
  PRECCL_CHECK(checkArgs(comm, "Scatter", datatype, count, comm->nranks, sendbuff, comm->rank == root, recvbuff, true));
  return submit(comm, stream, args(Coll::Scatter, sendbuff, recvbuff, count, datatype, root));
}

static precclResult_t p2p(bool isSend, const void* buf, size_t count, precclDataType_t datatype, int peer,
                          precclComm_t comm, precclStream_t stream) {
  const char* fn = isSend ? "Send" : "Recv";
  PRECCL_CHECK(checkArgs(comm, fn, datatype, count, 1, buf, isSend, buf, !isSend));
  if (peer < 0 || peer >= comm->nranks)
    return PRECCL_ERR(comm, precclInvalidArgument, "{}: peer {} is not in 0..{}", fn, peer, comm->nranks - 1);
  CctArgs a;
  a.coll = Coll::SendRecv;
  a.dtype = precclInt8;  // point-to-point moves bytes; both sides split the same byte count
  if (count > 0) a.p2p.push_back(P2POp{isSend, peer, const_cast<void*>(buf), count * dtypeSize(datatype)});
  if (a.p2p.empty() && groupDepth() == 0) return precclSuccess;
  return submit(comm, stream, std::move(a));
}

precclResult_t precclSend(const void* sendbuff, size_t count, precclDataType_t datatype, int peer, precclComm_t comm,
                          precclStream_t stream) {
  return p2p(true, sendbuff, count, datatype, peer, comm, stream);
}

precclResult_t precclRecv(void* recvbuff, size_t count, precclDataType_t datatype, int peer, precclComm_t comm,
                          precclStream_t stream) {
  return p2p(false, recvbuff, count, datatype, peer, comm, stream);
}

precclResult_t precclGroupStart(void) { return groupStart(); }
precclResult_t precclGroupEnd(void) { return groupEnd(); }

precclResult_t precclGroupSimulateEnd(precclSimInfo_t* simInfo) {
  if (!simInfo || simInfo->magic != PRECCL_SIM_INFO_MAGIC || simInfo->size < sizeof(precclSimInfo_t))
    return PRECCL_ERR(nullptr, precclInvalidArgument,
                      "GroupSimulateEnd: simInfo was not initialised with PRECCL_SIM_INFO_INITIALIZER");
  double us = -1;
  PRECCL_CHECK(groupSimulateEnd(&us));
  simInfo->estimatedTime = static_cast<float>(us);
  return precclSuccess;
}

}  // extern "C"
