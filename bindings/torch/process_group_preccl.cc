#include "process_group_preccl.h"

#include <ATen/ATen.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace preccl_torch {

namespace {

using c10d::OpType;
using c10d::ReduceOp;

void check(precclResult_t r, precclComm_t comm, const char* what) {
  if (r == precclSuccess) return;
  throw std::runtime_error(std::string("preccl: ") + what + " failed: " + precclGetErrorString(r) + ": " +
                           precclGetLastError(comm));
}

// Every tensor a call takes: one, dense, on the CPU (this build has no device path).
const at::Tensor& one(const std::vector<at::Tensor>& ts, const char* fn) {
  TORCH_CHECK(ts.size() == 1, "preccl ", fn, ": takes one tensor per process, got ", ts.size());
  return ts[0];
}
void checkTensor(const at::Tensor& t, const char* fn) {
  TORCH_CHECK(t.device().is_cpu(), "preccl ", fn, ": tensors must be on the CPU in this build, got ", t.device());
  TORCH_CHECK(t.layout() == at::kStrided, "preccl ", fn, ": sparse tensors are not supported");
}

size_t bytesOf(const at::Tensor& t) { return static_cast<size_t>(t.numel()) * t.element_size(); }

// A reduction's element type and count. Complex tensors reduce as their real and imaginary parts, which is
// right for sums and averages only.
struct ReduceType {
  precclDataType_t type;
  size_t count;
};
ReduceType reduceType(const at::Tensor& t, const char* fn) {
  const size_t n = static_cast<size_t>(t.numel());
  switch (t.scalar_type()) {
    case at::kFloat: return {precclFloat32, n};
    case at::kDouble: return {precclFloat64, n};
    case at::kHalf: return {precclFloat16, n};
    case at::kBFloat16: return {precclBfloat16, n};
    case at::kChar: return {precclInt8, n};
    case at::kByte:
    case at::kBool: return {precclUint8, n};
    case at::kInt: return {precclInt32, n};
    case at::kLong: return {precclInt64, n};
    case at::kComplexFloat: return {precclFloat32, 2 * n};
    case at::kComplexDouble: return {precclFloat64, 2 * n};
    default:
      TORCH_CHECK(false, "preccl ", fn, ": reductions of ", t.scalar_type(),
                  " are not supported (PReCCL reduces float32/64/16, bfloat16, int8/32/64, uint8, bool, complex)");
  }
}

// The PReCCL op for a torch ReduceOp on t's dtype. Booleans reduce as NCCL's backend does it: sum is
// "any" (max), product is "all" (min). PREMUL_SUM returns precclNumOps: the caller makes the op.
precclRedOp_t reduceOp(const ReduceOp& op, const at::Tensor& t, const char* fn) {
  const bool isBool = t.scalar_type() == at::kBool, isComplex = t.is_complex();
  switch (op.op_) {
    case ReduceOp::SUM: return isBool ? precclMax : precclSum;
    case ReduceOp::PRODUCT:
      TORCH_CHECK(!isComplex, "preccl ", fn, ": PRODUCT of complex tensors is not supported");
      return isBool ? precclMin : precclProd;
    case ReduceOp::MIN:
    case ReduceOp::MAX:
      TORCH_CHECK(!isComplex, "preccl ", fn, ": MIN and MAX of complex tensors are not defined");
      return op.op_ == ReduceOp::MIN ? precclMin : precclMax;
    case ReduceOp::AVG:
      TORCH_CHECK(!isBool, "preccl ", fn, ": AVG of bool tensors is not defined");
      return precclAvg;
    case ReduceOp::PREMUL_SUM:
      TORCH_CHECK(!isBool, "preccl ", fn, ": PREMUL_SUM of bool tensors is not defined");
      return precclNumOps;
    default:
      TORCH_CHECK(false, "preccl ", fn, ": ReduceOp ", static_cast<int>(op.op_),
                  " (BAND, BOR, BXOR) is not supported: PReCCL reduces as NCCL does, with SUM, AVG, PRODUCT, "
                  "MIN, MAX and PREMUL_SUM");
  }
}

// Everything a reduction needs, checked when the call is made (an unsupported dtype or op is the caller's
// error, raised in the caller's thread).
struct Reduction {
  precclDataType_t type;
  size_t count;
  precclRedOp_t base;      // precclNumOps: PREMUL_SUM, made per call
  ReduceOp op;
  at::ScalarType factorType;  // PREMUL_SUM's factor: the tensor's real type
};
Reduction reduction(const at::Tensor& t, const ReduceOp& op, const char* fn) {
  const ReduceType rt = reduceType(t, fn);
  return {rt.type, rt.count, reduceOp(op, t, fn), op,
          t.is_complex() ? c10::toRealValueType(t.scalar_type()) : t.scalar_type()};
}

// The op to run with, made on the worker thread (PREMUL_SUM's factor is read there, as NCCL reads a
// host scalar when the op is created) and destroyed after the call.
class OpHandle {
 public:
  OpHandle(precclComm_t comm, const Reduction& r) : comm_(comm), op_(r.base) {
    if (r.base != precclNumOps) return;
    auto* sup = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(r.op.supplement_.get());
    TORCH_CHECK(sup, "preccl: PREMUL_SUM without its factor");
    at::Tensor factor = sup->tensor_factors.empty()
                            ? at::scalar_tensor(sup->double_factor, at::TensorOptions().dtype(at::kDouble))
                            : sup->tensor_factors[0].to(at::kCPU).reshape({-1}).select(0, 0);
    scalar_ = factor.to(r.factorType).contiguous();
    check(precclRedOpCreatePreMulSum(&op_, scalar_.data_ptr(), r.type, precclScalarHostImmediate, comm), comm,
          "RedOpCreatePreMulSum");
    made_ = true;
  }
  ~OpHandle() {
    if (made_) precclRedOpDestroy(op_, comm_);
  }
  precclRedOp_t get() const { return op_; }

 private:
  precclComm_t comm_;
  precclRedOp_t op_;
  at::Tensor scalar_;
  bool made_ = false;
};

// Copies consecutive parts of a flat tensor into `outs`, each as many elements as it holds.
void unflatten(const at::Tensor& flat, std::vector<at::Tensor>& outs) {
  int64_t off = 0;
  for (at::Tensor& t : outs) {
    t.copy_(flat.narrow(0, off, t.numel()).view_as(t));
    off += t.numel();
  }
}

// Runs `f` on a contiguous view of t, copying back when t was not contiguous.
template <typename F>
void onContiguous(at::Tensor& t, F f) {
  at::Tensor c = t.contiguous();
  f(c);
  if (!c.is_same(t)) t.copy_(c);
}

}  // namespace

WorkPreccl::WorkPreccl(int rank, OpType type, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type), outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

void WorkPreccl::complete(std::exception_ptr error) {
  finish(error);
  if (error) future_->setError(error);
  else future_->markCompleted(c10::IValue(outputs_));
}

ProcessGroupPreccl::ProcessGroupPreccl(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                       std::chrono::milliseconds timeout)
    : c10d::ProcessGroup(rank, size) {
  const std::string key = "preccl_unique_id";
  precclUniqueId id;
  if (rank == 0) {
    check(precclGetUniqueId(&id), nullptr, "GetUniqueId");
    store->set(key, std::vector<uint8_t>(reinterpret_cast<uint8_t*>(&id), reinterpret_cast<uint8_t*>(&id) + sizeof(id)));
  } else {
    std::vector<uint8_t> v = store->get(key);  // waits for rank 0, up to the store's timeout
    TORCH_CHECK(v.size() == sizeof(id), "preccl: the unique id in the store has ", v.size(), " bytes");
    memcpy(&id, v.data(), sizeof(id));
  }
  check(precclCommInitRank(&comm_, size, id, rank), nullptr, "CommInitRank");
  worker_ = std::thread([this] { workerLoop(); });
}

ProcessGroupPreccl::~ProcessGroupPreccl() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();  // runs what is queued first: a peer may still need this rank's part
  precclCommDestroy(comm_);
}

void ProcessGroupPreccl::workerLoop() {
  for (;;) {
    std::pair<c10::intrusive_ptr<WorkPreccl>, Job> item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    std::exception_ptr error;
    try {
      item.second();
    } catch (...) {
      error = std::current_exception();
    }
    item.first->complete(error);
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPreccl::enqueue(OpType type, std::vector<at::Tensor> outputs, Job job) {
  auto work = c10::make_intrusive<WorkPreccl>(getRank(), type, std::move(outputs));
  {
    std::lock_guard<std::mutex> lock(mu_);
    TORCH_CHECK(!coalescing_, "preccl: only send and recv may be coalesced (batch_isend_irecv)");
    queue_.emplace_back(work, std::move(job));
  }
  cv_.notify_one();
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPreccl::broadcast(std::vector<at::Tensor>& tensors,
                                                             const c10d::BroadcastOptions& opts) {
  at::Tensor t = one(tensors, "broadcast");
  checkTensor(t, "broadcast");
  const int root = static_cast<int>(opts.rootRank);
  return enqueue(OpType::BROADCAST, {t}, [this, t, root]() mutable {
    onContiguous(t, [&](at::Tensor& c) {
      check(precclBroadcast(c.data_ptr(), c.data_ptr(), bytesOf(c), precclUint8, root, comm_, nullptr), comm_,
            "Broadcast");
    });
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPreccl::allreduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::AllreduceOptions& opts) {
  at::Tensor t = one(tensors, "allreduce");
  checkTensor(t, "allreduce");
  const Reduction rd = reduction(t, opts.reduceOp, "allreduce");
  return enqueue(OpType::ALLREDUCE, {t}, [this, t, rd]() mutable {
    OpHandle h(comm_, rd);
    onContiguous(t, [&](at::Tensor& c) {
      check(precclAllReduce(c.data_ptr(), c.data_ptr(), rd.count, rd.type, h.get(), comm_, nullptr), comm_,
            "AllReduce");
    });
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPreccl::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                       const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "preccl allreduce_coalesced: no tensors");
  for (const at::Tensor& t : tensors) {
    checkTensor(t, "allreduce_coalesced");
    TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(), "preccl allreduce_coalesced: tensors of mixed dtypes");
  }
  // One AllReduce over the tensors laid end to end.
  at::Tensor flat = at::cat([&] {
    std::vector<at::Tensor> v;
    for (const at::Tensor& t : tensors) v.push_back(t.reshape({-1}));
    return v;
  }());
  const Reduction rd = reduction(flat, opts.reduceOp, "allreduce_coalesced");
  std::vector<at::Tensor> outs = tensors;
  return enqueue(OpType::ALLREDUCE_COALESCED, outs, [this, flat, outs, rd]() mutable {
    OpHandle h(comm_, rd);
    check(precclAllReduce(flat.data_ptr(), flat.data_ptr(), rd.count, rd.type, h.get(), comm_, nullptr), comm_,
          "AllReduce");
    unflatten(flat, outs);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPreccl::reduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::ReduceOptions& opts) {
  at::Tensor t = one(tensors, "reduce");
  checkTensor(t, "reduce");
  const Reduction rd = reduction(t, opts.reduceOp, "reduce");
  const int root = static_cast<int>(opts.rootRank);
  return enqueue(OpType::REDUCE, {t}, [this, t, rd, root]() mutable {
    OpHandle h(comm_, rd);
    onContiguous(t, [&](at::Tensor& c) {
      check(precclReduce(c.data_ptr(), c.data_ptr(), rd.count, rd.type, h.get(), root, comm_, nullptr), comm_,
            "Reduce");
    });
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPreccl::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                             std::vector<at::Tensor>& inputs,
                                                             const c10d::AllgatherOptions&) {
  at::Tensor in = one(inputs, "allgather");
  checkTensor(in, "allgather");
  TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
              "preccl allgather: wants one list of ", getSize(), " output tensors");
  for (const at::Tensor& o : outputs[0]) {
    checkTensor(o, "allgather");
    TORCH_CHECK(o.numel() == in.numel() && o.scalar_type() == in.scalar_type(),
                "preccl allgather: every output must match the input's size and dtype");
  }
  std::vector<at::Tensor> outs = outputs[0];
  return enqueue(OpType::ALLGATHER, outs, [this, in, outs]() mutable {
    at::Tensor src = in.contiguous();
    at::Tensor flat = at::empty({static_cast<int64_t>(outs.size()) * src.numel()}, src.options());
    check(precclAllGather(src.data_ptr(), flat.data_ptr(), bytesOf(src), precclUint8, comm_, nullptr), comm_,
          "AllGather");
    unflatten(flat, outs);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPreccl::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                   const c10d::AllgatherOptions&) {
  checkTensor(input, "_allgather_base");
  checkTensor(output, "_allgather_base");
  TORCH_CHECK(output.numel() == input.numel() * getSize() && output.scalar_type() == input.scalar_type(),
              "preccl _allgather_base: the output must hold world_size inputs of the same dtype");
  at::Tensor in = input, out = output;
  return enqueue(OpType::_ALLGATHER_BASE, {out}, [this, in, out]() mutable {
    at::Tensor src = in.contiguous();
    onContiguous(out, [&](at::Tensor& c) {
      check(precclAllGather(src.data_ptr(), c.data_ptr(), bytesOf(src), precclUint8, comm_, nullptr), comm_,
            "AllGather");
    });
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPreccl::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::GatherOptions& opts) {
  at::Tensor in = one(inputs, "gather");
  checkTensor(in, "gather");
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> outs;
  if (getRank() == root) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
                "preccl gather: the root wants one list of ", getSize(), " output tensors");
    outs = outputs[0];
    for (const at::Tensor& o : outs)
      TORCH_CHECK(o.numel() == in.numel() && o.scalar_type() == in.scalar_type(),
                  "preccl gather: every output must match the input's size and dtype");
  } else {
    TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
                "preccl gather: only the root passes output tensors");
  }
  return enqueue(OpType::GATHER, outs, [this, in, outs, root]() mutable {
    at::Tensor src = in.contiguous();
    at::Tensor flat = outs.empty() ? at::Tensor() : at::empty({static_cast<int64_t>(outs.size()) * src.numel()}, src.options());
    check(precclGather(src.data_ptr(), outs.empty() ? nullptr : flat.data_ptr(), bytesOf(src), precclUint8, root, comm_,
                       nullptr),
          comm_, "Gather");
    unflatten(flat, outs);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPreccl::scatter(std::vector<at::Tensor>& outputs,
                                                           std::vector<std::vector<at::Tensor>>& inputs,
                                                           const c10d::ScatterOptions& opts) {
  at::Tensor out = one(outputs, "scatter");
  checkTensor(out, "scatter");
  const int root = static_cast<int>(opts.rootRank);
  at::Tensor flat;
  if (getRank() == root) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
                "preccl scatter: the root wants one list of ", getSize(), " input tensors");
    std::vector<at::Tensor> v;
    for (const at::Tensor& i : inputs[0]) {
      TORCH_CHECK(i.numel() == out.numel() && i.scalar_type() == out.scalar_type(),
                  "preccl scatter: every input must match the output's size and dtype");
      v.push_back(i.reshape({-1}));
    }
    flat = at::cat(v);
  } else {
    TORCH_CHECK(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()),
                "preccl scatter: only the root passes input tensors");
  }
  return enqueue(OpType::SCATTER, {out}, [this, out, flat, root]() mutable {
    onContiguous(out, [&](at::Tensor& c) {
      check(precclScatter(flat.defined() ? flat.data_ptr() : nullptr, c.data_ptr(), bytesOf(c), precclUint8, root,
                          comm_, nullptr),
            comm_, "Scatter");
    });
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPreccl::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                  std::vector<std::vector<at::Tensor>>& inputs,
                                                                  const c10d::ReduceScatterOptions& opts) {
  at::Tensor out = one(outputs, "reduce_scatter");
  checkTensor(out, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
              "preccl reduce_scatter: wants one list of ", getSize(), " input tensors");
  std::vector<at::Tensor> v;
  for (const at::Tensor& i : inputs[0]) {
    TORCH_CHECK(i.numel() == out.numel() && i.scalar_type() == out.scalar_type(),
                "preccl reduce_scatter: every input must match the output's size and dtype");
    v.push_back(i.reshape({-1}));
  }
  at::Tensor flat = at::cat(v);
  return _reduce_scatter_base(out, flat, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPreccl::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                        const c10d::ReduceScatterOptions& opts) {
  checkTensor(input, "reduce_scatter");
  checkTensor(output, "reduce_scatter");
  TORCH_CHECK(input.numel() == output.numel() * getSize() && input.scalar_type() == output.scalar_type(),
              "preccl reduce_scatter: the input must hold world_size outputs of the same dtype");
  const Reduction rd = reduction(output, opts.reduceOp, "reduce_scatter");
  at::Tensor in = input, out = output;
  return enqueue(OpType::_REDUCE_SCATTER_BASE, {out}, [this, in, out, rd]() mutable {
    OpHandle h(comm_, rd);
    at::Tensor src = in.contiguous();
    onContiguous(out, [&](at::Tensor& c) {
      check(precclReduceScatter(src.data_ptr(), c.data_ptr(), rd.count, rd.type, h.get(), comm_, nullptr), comm_,
            "ReduceScatter");
    });
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPreccl::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                 std::vector<int64_t>& outputSplitSizes,
                                                                 std::vector<int64_t>& inputSplitSizes,
                                                                 const c10d::AllToAllOptions&) {
  checkTensor(input, "alltoall_base");
  checkTensor(output, "alltoall_base");
  TORCH_CHECK(input.scalar_type() == output.scalar_type(), "preccl all_to_all_single: input and output dtypes differ");
  const int n = getSize();
  at::Tensor in = input, out = output;
  if (outputSplitSizes.empty() && inputSplitSizes.empty()) {
    TORCH_CHECK(in.numel() == out.numel() && in.numel() % n == 0,
                "preccl all_to_all_single: equal splits need equal sizes divisible by world_size");
    return enqueue(OpType::ALLTOALL_BASE, {out}, [this, in, out, n]() mutable {
      at::Tensor src = in.contiguous();
      onContiguous(out, [&](at::Tensor& c) {
        check(precclAlltoAll(src.data_ptr(), c.data_ptr(), bytesOf(src) / n, precclUint8, comm_, nullptr), comm_,
              "AlltoAll");
      });
    });
  }
  // Uneven splits (rows of dim 0): PyTorch's all_to_all_single with splits; one group of Send/Recv.
  auto splits = [n](const at::Tensor& t, std::vector<int64_t> s, const char* what) {
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    if (s.empty()) {
      TORCH_CHECK(rows % n == 0, "preccl all_to_all_single: ", what, " rows not divisible by world_size");
      s.assign(n, rows / n);
    }
    TORCH_CHECK(static_cast<int>(s.size()) == n, "preccl all_to_all_single: ", what, " splits need ", n, " entries");
    int64_t sum = 0;
    for (int64_t x : s) {
      TORCH_CHECK(x >= 0, "preccl all_to_all_single: negative split");
      sum += x;
    }
    TORCH_CHECK(sum == rows, "preccl all_to_all_single: ", what, " splits sum to ", sum, ", not ", rows);
    return s;
  };
  std::vector<int64_t> inS = splits(in, inputSplitSizes, "input"), outS = splits(out, outputSplitSizes, "output");
  return enqueue(OpType::ALLTOALL_BASE, {out}, [this, in, out, inS, outS, n]() mutable {
    at::Tensor src = in.contiguous();
    onContiguous(out, [&](at::Tensor& c) {
      const size_t inRow = src.dim() == 0 || src.size(0) == 0 ? 0 : bytesOf(src) / src.size(0);
      const size_t outRow = c.dim() == 0 || c.size(0) == 0 ? 0 : bytesOf(c) / c.size(0);
      auto* s = static_cast<char*>(src.data_ptr());
      auto* d = static_cast<char*>(c.data_ptr());
      check(precclGroupStart(), comm_, "GroupStart");
      for (int p = 0; p < n; p++) {
        check(precclSend(s, inS[p] * inRow, precclUint8, p, comm_, nullptr), comm_, "Send");
        check(precclRecv(d, outS[p] * outRow, precclUint8, p, comm_, nullptr), comm_, "Recv");
        s += inS[p] * inRow;
        d += outS[p] * outRow;
      }
      check(precclGroupEnd(), comm_, "GroupEnd");
    });
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPreccl::alltoall(std::vector<at::Tensor>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllToAllOptions&) {
  const int n = getSize();
  TORCH_CHECK(static_cast<int>(inputs.size()) == n && static_cast<int>(outputs.size()) == n,
              "preccl all_to_all: wants ", n, " input and ", n, " output tensors");
  for (int p = 0; p < n; p++) {
    checkTensor(inputs[p], "all_to_all");
    checkTensor(outputs[p], "all_to_all");
    TORCH_CHECK(inputs[p].scalar_type() == outputs[p].scalar_type(), "preccl all_to_all: input and output dtypes differ");
  }
  std::vector<at::Tensor> ins = inputs, outs = outputs;
  return enqueue(OpType::ALLTOALL, outs, [this, ins, outs, n]() mutable {
    std::vector<at::Tensor> src, dst;
    for (int p = 0; p < n; p++) {
      src.push_back(ins[p].contiguous());
      dst.push_back(outs[p].is_contiguous() ? outs[p] : at::empty_like(outs[p], at::MemoryFormat::Contiguous));
    }
    check(precclGroupStart(), comm_, "GroupStart");
    for (int p = 0; p < n; p++) {
      check(precclSend(src[p].data_ptr(), bytesOf(src[p]), precclUint8, p, comm_, nullptr), comm_, "Send");
      check(precclRecv(dst[p].data_ptr(), bytesOf(dst[p]), precclUint8, p, comm_, nullptr), comm_, "Recv");
    }
    check(precclGroupEnd(), comm_, "GroupEnd");
    for (int p = 0; p < n; p++)
      if (!dst[p].is_same(outs[p])) outs[p].copy_(dst[p]);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPreccl::p2p(OpType type, at::Tensor t, int peer, bool isSend) {
  checkTensor(t, isSend ? "send" : "recv");
  TORCH_CHECK(peer >= 0 && peer < getSize(), "preccl ", isSend ? "send" : "recv", ": peer ", peer, " is not a rank");
  // A receive lands in a contiguous tensor the caller sees: a non-contiguous one is refused rather than
  // copied behind its back after a group.
  TORCH_CHECK(t.is_contiguous(), "preccl ", isSend ? "send" : "recv", ": the tensor must be contiguous");
  Job job = [this, t, peer, isSend]() {
    if (isSend) check(precclSend(t.data_ptr(), bytesOf(t), precclUint8, peer, comm_, nullptr), comm_, "Send");
    else check(precclRecv(t.data_ptr(), bytesOf(t), precclUint8, peer, comm_, nullptr), comm_, "Recv");
  };
  std::lock_guard<std::mutex> lock(mu_);
  auto work = c10::make_intrusive<WorkPreccl>(getRank(), type, std::vector<at::Tensor>{t});
  if (coalescing_) {
    coalesced_.push_back(std::move(job));
    coalescedWork_.push_back(work);
  } else {
    queue_.emplace_back(work, std::move(job));
    cv_.notify_one();
  }
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPreccl::send(std::vector<at::Tensor>& tensors, int dstRank, int) {
  return p2p(OpType::SEND, one(tensors, "send"), dstRank, true);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPreccl::recv(std::vector<at::Tensor>& tensors, int srcRank, int) {
  return p2p(OpType::RECV, one(tensors, "recv"), srcRank, false);
}

void ProcessGroupPreccl::startCoalescing() {
  std::lock_guard<std::mutex> lock(mu_);
  TORCH_CHECK(!coalescing_, "preccl: coalescing already started");
  coalescing_ = true;
}

void ProcessGroupPreccl::endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>& /* reqs: the works p2p gave */) {
  std::vector<Job> jobs;
  std::vector<c10::intrusive_ptr<WorkPreccl>> works;
  {
    std::lock_guard<std::mutex> lock(mu_);
    TORCH_CHECK(coalescing_, "preccl: endCoalescing without startCoalescing");
    coalescing_ = false;
    jobs.swap(coalesced_);
    works.swap(coalescedWork_);
  }
  if (jobs.empty()) return;
  // The group runs as one job; its Work completes the others (each is one of `reqs`).
  enqueue(OpType::UNKNOWN, {}, [this, jobs, works]() {
    std::exception_ptr error;
    try {
      check(precclGroupStart(), comm_, "GroupStart");
      for (const Job& j : jobs) j();
      check(precclGroupEnd(), comm_, "GroupEnd");
    } catch (...) {
      error = std::current_exception();
    }
    for (const auto& w : works) w->complete(error);
    if (error) std::rethrow_exception(error);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupPreccl::barrier(const c10d::BarrierOptions&) {
  return enqueue(OpType::BARRIER, {}, [this]() {
    uint8_t b = 0;
    check(precclAllReduce(&b, &b, 1, precclUint8, precclMax, comm_, nullptr), comm_, "AllReduce (barrier)");
  });
}

}  // namespace preccl_torch
