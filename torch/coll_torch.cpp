// torch/coll_torch.cpp - coll as a torch.distributed backend.
//
//     import coll_torch                      # registers the backend "coll"
//     torch.distributed.init_process_group(backend="coll", ...)
//
// This file is the extension coll_torch._C; the package around it
// (torch/python/coll_torch/: __init__.py, and run.py, the launcher) is Python.
//
// One ProcessGroupColl per process group: it meets its peers through the
// Store that init_process_group (or new_group) made, picks a port - shm when
// every rank is on this host; over several hosts the composite port of
// ports/coll_hosts.h (shm inside a host, TCP between) with the collectives
// routed through coll_hier.h; COLL_TORCH_PORT=shm|tcp|hosts forces one -
// and runs every operation on a thread of its own, in the order Python
// issued them, each returning a Work whose wait() and getFuture() are what
// DDP expects. A coll error becomes a RuntimeError carrying coll_last_error;
// each communicator keeps its last calls in a flight recorder, written to
// COLL_TORCH_RECORD when a call fails. docs/torch.md says what is supported
// and why.

#include <ATen/ATen.h>
#include <torch/csrc/utils/pybind.h>
#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "coll_hier.h"
#include "ports/coll_hosts.h"

namespace coll_torch {

using c10d::OpType;
using WorkPtr = c10::intrusive_ptr<c10d::Work>;

// ---- errors ------------------------------------------------------------------

// What reaches Python as RuntimeError: every message starts with "coll".
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// An argument this rank cannot run (checked before anything is queued).
// The caller gets it at once; the peers get COLL_ERR_PEER from the call
// check of a refused stand-in call, so nobody waits for this rank.
struct Refusal : Error {
    using Error::Error;
};

// "COLL_ERR_MISMATCH" for -74: the name a user can look up in coll.h.
static const char *code_name(int rc)
{
    switch (rc) {
    case COLL_ERR_IO: return "COLL_ERR_IO";
    case COLL_ERR_BROKEN: return "COLL_ERR_BROKEN";
    case COLL_ERR_CORRUPT: return "COLL_ERR_CORRUPT";
    case COLL_ERR_PEER: return "COLL_ERR_PEER";
    case COLL_ERR_INVAL: return "COLL_ERR_INVAL";
    case COLL_ERR_NOSPC: return "COLL_ERR_NOSPC";
    case COLL_ERR_NOSYS: return "COLL_ERR_NOSYS";
    case COLL_ERR_MISMATCH: return "COLL_ERR_MISMATCH";
    case COLL_ERR_TIMEOUT: return "COLL_ERR_TIMEOUT";
    case COLL_ERR_ABORTED: return "COLL_ERR_ABORTED";
    case COLL_TCP_ERR_AUTH: return "COLL_TCP_ERR_AUTH";
    case COLL_TCP_ERR_VERSION: return "COLL_TCP_ERR_VERSION";
    case COLL_TCP_ERR_INUSE: return "COLL_TCP_ERR_INUSE";
    case COLL_SHM_ERR_ACCESS: return "COLL_SHM_ERR_ACCESS";
    default: return "error";
    }
}

// torch's own name of a dtype ("int16", not c10's "Short").
static std::string dtype_name(at::ScalarType t)
{
    switch (t) {
    case at::kFloat: return "float32";
    case at::kDouble: return "float64";
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    case at::kChar: return "int8";
    case at::kByte: return "uint8";
    case at::kShort: return "int16";
    case at::kInt: return "int32";
    case at::kLong: return "int64";
    case at::kBool: return "bool";
    case at::kComplexFloat: return "complex64";
    case at::kComplexDouble: return "complex128";
    default: return c10::toString(t);
    }
}

static std::string env_str(const char *name, const char *dflt)
{
    const char *v = std::getenv(name);
    return v && *v ? v : dflt;
}

// coll_hosts_init takes its job token (COLL_TCP_TOKEN), the host identity
// (COLL_HOST_ID) and the claims it checks (LOCAL_RANK, LOCAL_WORLD_SIZE)
// from the environment, which has no arguments for them: they are set for
// the call and put back after it, under one lock for every group.
class EnvFor {
public:
    EnvFor() : lk_(mu()) {}
    ~EnvFor()
    {
        for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
            if (it->second) setenv(it->first.c_str(), it->second->c_str(), 1);
            else unsetenv(it->first.c_str());
        }
    }
    void set(const char *name, const char *value)   // nullptr: unset
    {
        const char *old = std::getenv(name);
        saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
        if (value) setenv(name, value, 1);
        else unsetenv(name);
    }

private:
    static std::mutex &mu()
    {
        static std::mutex m;
        return m;
    }
    std::lock_guard<std::mutex> lk_;
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// 128 bits of FNV-1a (two offsets) in hex: a host identity of any length
// as one that COLL_HOST_ID takes (at most 255 bytes).
static std::string digest_hex(const std::string &s)
{
    std::string out;
    for (uint64_t h : {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull}) {
        for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
        char b[17];
        std::snprintf(b, sizeof b, "%016llx", (unsigned long long)h);
        out += b;
    }
    return out;
}

// The flight recorder's clock: nanoseconds, CLOCK_MONOTONIC (steady_clock).
static uint64_t now_ns(void *)
{
    return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

static int append_text(void *ctx, const char *text, size_t n)
{
    static_cast<std::string *>(ctx)->append(text, n);
    return 0;
}

// ---- dtypes and operators ------------------------------------------------------

// The torch dtype as coll's, for reductions. false: coll has none.
static bool dtype_of(at::ScalarType t, coll_dtype *out)
{
    switch (t) {
    case at::kFloat: *out = COLL_FLOAT32; return true;
    case at::kDouble: *out = COLL_FLOAT64; return true;
    case at::kHalf: *out = COLL_FLOAT16; return true;
    case at::kBFloat16: *out = COLL_BFLOAT16; return true;
    case at::kChar: *out = COLL_INT8; return true;
    case at::kByte: *out = COLL_UINT8; return true;
    case at::kInt: *out = COLL_INT32; return true;
    case at::kLong: *out = COLL_INT64; return true;
    default: return false;
    }
}

static coll_op op_of(const c10d::ReduceOp &op)
{
    switch (op.op_) {
    case c10d::ReduceOp::SUM: return COLL_SUM;
    case c10d::ReduceOp::AVG: return COLL_AVG;
    case c10d::ReduceOp::PRODUCT: return COLL_PROD;
    case c10d::ReduceOp::MIN: return COLL_MIN;
    case c10d::ReduceOp::MAX: return COLL_MAX;
    case c10d::ReduceOp::BAND: return COLL_BAND;
    case c10d::ReduceOp::BOR: return COLL_BOR;
    case c10d::ReduceOp::BXOR: return COLL_BXOR;
    case c10d::ReduceOp::PREMUL_SUM:
        throw Refusal("coll: reduce op PREMUL_SUM (torch 1.13 makes it for NCCL only) is not supported: scale the "
                      "tensor, then SUM");
    default:
        throw Refusal("coll: reduce op " + std::to_string((int)op.op_) +
                      " is not supported; SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR are");
    }
}

// A tensor coll can read and write in place: dense, on the CPU, contiguous.
static void check_tensor(const at::Tensor &t, const char *op)
{
    std::string why;
    if (!t.defined()) why = "an undefined tensor";
    else if (t.layout() != at::kStrided) why = "a sparse tensor (only dense tensors are supported)";
    else if (!t.device().is_cpu())
        why = "a tensor on " + t.device().str() + " (this build moves CPU tensors only)";
    else if (!t.is_contiguous()) why = "a non-contiguous tensor (call .contiguous() first)";
    if (!why.empty()) throw Refusal(std::string("coll: ") + op + ": " + why);
}

static void check_one(const std::vector<at::Tensor> &ts, const char *op)
{
    if (ts.size() != 1)
        throw Refusal(std::string("coll: ") + op + ": one tensor per process, got " + std::to_string(ts.size()));
    check_tensor(ts[0], op);
}

// For a reduction: coll's dtype, or a refusal naming the torch one.
static coll_dtype reduce_dtype(const at::Tensor &t, const char *op)
{
    coll_dtype d;
    if (!dtype_of(t.scalar_type(), &d))
        throw Refusal(std::string("coll: ") + op + ": dtype " + dtype_name(t.scalar_type()) +
                      " cannot be reduced (float32/64, float16, bfloat16, int8, uint8, int16, int32, int64 and bool can)");
    return d;
}

// For a copy: coll's dtype where there is one (the call check then also
// compares dtypes), else bytes (ProcessGroupColl::elems: the ranks agree
// on the torch dtype first).
struct Elems {
    coll_dtype dtype;
    size_t count, size;
};

// int16, which coll has no dtype for, reduces through coll's user
// operator: elements of 2 bytes, the function chosen by the torch op (set
// on the communicator right before the call, once the ranks agree on the
// op: ProcessGroupColl::agree_dtype). Sums and products wrap, as torch's.
template <class F>
static void i16_each(void *out, const void *a, const void *b, size_t n, F f)
{
    unsigned char *o = (unsigned char *)out;
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    for (size_t i = 0; i < n; i++) {
        int16_t u, v, w;
        std::memcpy(&u, x + 2 * i, 2);   // the runs need not be 2-byte aligned
        std::memcpy(&v, y + 2 * i, 2);
        w = (int16_t)(uint16_t)f((int)u, (int)v);
        std::memcpy(o + 2 * i, &w, 2);
    }
}
static void i16_sum(void *o, const void *a, const void *b, size_t n, void *) { i16_each(o, a, b, n, [](int u, int v) { return u + v; }); }
static void i16_prod(void *o, const void *a, const void *b, size_t n, void *) { i16_each(o, a, b, n, [](int u, int v) { return u * v; }); }
static void i16_min(void *o, const void *a, const void *b, size_t n, void *) { i16_each(o, a, b, n, [](int u, int v) { return u < v ? u : v; }); }
static void i16_max(void *o, const void *a, const void *b, size_t n, void *) { i16_each(o, a, b, n, [](int u, int v) { return u > v ? u : v; }); }
static void i16_band(void *o, const void *a, const void *b, size_t n, void *) { i16_each(o, a, b, n, [](int u, int v) { return u & v; }); }
static void i16_bor(void *o, const void *a, const void *b, size_t n, void *) { i16_each(o, a, b, n, [](int u, int v) { return u | v; }); }
static void i16_bxor(void *o, const void *a, const void *b, size_t n, void *) { i16_each(o, a, b, n, [](int u, int v) { return u ^ v; }); }

static coll_reduce_fn i16_fn(int op)
{
    switch (op) {
    case c10d::ReduceOp::SUM: return i16_sum;
    case c10d::ReduceOp::PRODUCT: return i16_prod;
    case c10d::ReduceOp::MIN: return i16_min;
    case c10d::ReduceOp::MAX: return i16_max;
    case c10d::ReduceOp::BAND: return i16_band;
    case c10d::ReduceOp::BOR: return i16_bor;
    case c10d::ReduceOp::BXOR: return i16_bxor;
    default: return nullptr;
    }
}

// For a reduction: coll's dtype and operator, or a refusal naming the torch
// ones. bool is reduced as uint8 0/1, as gloo reduces it (C++ bool
// arithmetic): SUM and MAX are OR, PRODUCT and MIN are AND. int16 through
// coll's user operator (i16_fn).
static coll_dtype reduce_args(const at::Tensor &t, const c10d::ReduceOp &o, coll_op *op, const char *what)
{
    if (t.scalar_type() == at::kShort) {
        if (!i16_fn(o.op_))
            throw Refusal(std::string("coll: ") + what + ": int16 tensors reduce with SUM, PRODUCT, MIN, MAX, BAND, "
                          "BOR, BXOR, not with op " + std::to_string((int)o.op_) + " (AVG?)");
        *op = COLL_USER_OP;
        return COLL_USER_TYPE;
    }
    if (t.scalar_type() == at::kBool) {
        switch (o.op_) {
        case c10d::ReduceOp::SUM: case c10d::ReduceOp::MAX: case c10d::ReduceOp::BOR: *op = COLL_MAX; break;
        case c10d::ReduceOp::PRODUCT: case c10d::ReduceOp::MIN: case c10d::ReduceOp::BAND: *op = COLL_MIN; break;
        case c10d::ReduceOp::BXOR: *op = COLL_BXOR; break;
        default:
            throw Refusal(std::string("coll: ") + what + ": bool tensors reduce with SUM, PRODUCT, MIN, MAX, BAND, "
                          "BOR, BXOR, not with op " + std::to_string((int)o.op_) + " (AVG?)");
        }
        return COLL_UINT8;
    }
    coll_dtype d = reduce_dtype(t, what);
    *op = op_of(o);
    return d;
}

static void same_shape(const at::Tensor &a, const at::Tensor &b, const char *op)
{
    if (a.scalar_type() != b.scalar_type() || a.numel() != b.numel())
        throw Refusal(std::string("coll: ") + op + ": tensors of one call must have one dtype and size (" +
                      dtype_name(a.scalar_type()) + " x " + std::to_string(a.numel()) + " vs " +
                      dtype_name(b.scalar_type()) + " x " + std::to_string(b.numel()) + ")");
}

// ---- Work ----------------------------------------------------------------------

class ProcessGroupColl;

// One queued operation: what the worker runs, and what Python waits on.
class CollWork : public c10d::Work {
public:
    CollWork(c10d::ProcessGroup *pg, int rank, OpType type, std::vector<at::Tensor> outputs)
        : c10d::Work(rank, type),
          group(c10::intrusive_ptr<c10d::ProcessGroup>::unsafe_reclaim_from_nonowning(pg)),
          outputs_(std::move(outputs)),
          future_(c10::make_intrusive<at::ivalue::Future>(c10::ListType::create(c10::TensorType::get())))
    {
    }

    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
    bool wait(std::chrono::milliseconds timeout) override;   // below
    std::vector<at::Tensor> result() override { return outputs_; }

    // The future first (DDP's callbacks hang on it), then wait()'s waiters.
    void done(std::exception_ptr e)
    {
        if (e) future_->setError(e);
        else future_->markCompleted(c10::IValue(outputs_));
        finish(e);
    }

    std::function<void(CollWork &)> run;   // by whoever holds the executor
    c10::weak_intrusive_ptr<c10d::ProcessGroup> group;   // for wait()
    std::vector<at::Tensor> keep;          // inputs, alive until done
    bool deferred = false;                 // run() left it in flight (send)
    int handle[2] = {-1, -1};              // the port's handles of a send
    unsigned char header[24];              // a send's header, in flight

private:
    std::vector<at::Tensor> outputs_;
    c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// ---- the process group -----------------------------------------------------------

// Point-to-point messages carry a header first: the receive checks it and
// knows the payload's size before posting it (a byte stream cannot tell).
enum { P2P_MAGIC = 0x636f6c70u, P2P_REFUSED = 1, P2P_MAX_SENDS = 4 };
static const uint64_t P2P_MAX_DRAIN = 1ull << 30;

class ProcessGroupColl : public c10d::ProcessGroup {
public:
    ProcessGroupColl(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
                     std::chrono::milliseconds timeout)
        : c10d::ProcessGroup(rank, size), timeout_(timeout)
    {
        init();                          // torch's usage logging
        try {
            rendezvous(store);
        } catch (...) {
            close_port();
            throw;
        }
        worker_ = std::thread([this] { loop(); });
    }

    ~ProcessGroupColl() override { shutdown(); }

    // When the last strong reference goes, not when the last weak one does:
    // every Work holds a weak one (for wait()), and finished Works wait in
    // done_ for a caller's thread, so the destructor alone could wait
    // forever, the thread and the port with it.
    void release_resources() override { shutdown(); }

    void shutdown()
    {
        {
            std::lock_guard<std::mutex> lk(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        if (worker_.joinable()) worker_.join();
        done_.clear();
        close_port();
    }

    void close_port()
    {
        if (shm_) coll_shm_close(shm_.get());
        if (tcp_) coll_tcp_close(tcp_.get());
        if (hosts_) coll_hosts_close(hosts_.get());
        shm_.reset();
        tcp_.reset();
        hosts_.reset();
    }

    const std::string getBackendName() const override { return "coll"; }
    std::string portName() const { return port_name_; }

    // ---- collectives (each checks here, runs on the worker) ----

    WorkPtr allreduce(std::vector<at::Tensor> &ts, const c10d::AllreduceOptions &o) override
    {
        return guarded([&] {
            check_one(ts, "allreduce");
            at::Tensor t = ts[0];
            coll_op op;
            coll_dtype d = reduce_args(t, o.reduceOp, &op, "allreduce");
            int top = (int)o.reduceOp.op_;
            return submit(OpType::ALLREDUCE, {t}, {}, o.timeout, [=](CollWork &) {
                agree_dtype(t, top, "allreduce");
                void *p = t.data_ptr();
                check(run_allreduce(p, p, (size_t)t.numel(), d, op), "allreduce");
            });
        });
    }

    WorkPtr allreduce_coalesced(std::vector<at::Tensor> &ts, const c10d::AllreduceCoalescedOptions &o) override
    {
        return guarded([&] {
            if (ts.empty()) throw Refusal("coll: allreduce_coalesced: no tensors");
            for (auto &t : ts) check_tensor(t, "allreduce_coalesced");
            coll_op op;
            coll_dtype d = reduce_args(ts[0], o.reduceOp, &op, "allreduce_coalesced");
            int top = (int)o.reduceOp.op_;
            for (auto &t : ts)
                if (t.scalar_type() != ts[0].scalar_type())
                    throw Refusal("coll: allreduce_coalesced: tensors of one dtype only");
            std::vector<at::Tensor> out = ts;
            return submit(OpType::ALLREDUCE_COALESCED, out, {}, o.timeout, [=](CollWork &) {
                agree_dtype(out[0], top, "allreduce_coalesced");
                at::Tensor flat = at::cat(flatten(out));
                check(run_allreduce(flat.data_ptr(), flat.data_ptr(), (size_t)flat.numel(), d, op), "allreduce_coalesced");
                int64_t off = 0;
                for (auto &t : out) {
                    t.view(-1).copy_(flat.narrow(0, off, t.numel()));
                    off += t.numel();
                }
            });
        });
    }

    WorkPtr broadcast(std::vector<at::Tensor> &ts, const c10d::BroadcastOptions &o) override
    {
        return guarded([&] {
            check_one(ts, "broadcast");
            at::Tensor t = ts[0];
            int root = root_of(o.rootRank, "broadcast");
            return submit(OpType::BROADCAST, {t}, {}, o.timeout, [=](CollWork &) {
                Elems e = elems(t, "broadcast");
                check(run_broadcast(t.data_ptr(), e.count, e.dtype, root), "broadcast");
            });
        });
    }

    // The result lands in the root's tensor; the others' stay as they were.
    WorkPtr reduce(std::vector<at::Tensor> &ts, const c10d::ReduceOptions &o) override
    {
        return guarded([&] {
            check_one(ts, "reduce");
            at::Tensor t = ts[0];
            coll_op op;
            coll_dtype d = reduce_args(t, o.reduceOp, &op, "reduce");
            int top = (int)o.reduceOp.op_;
            int root = root_of(o.rootRank, "reduce");
            return submit(OpType::REDUCE, {t}, {}, o.timeout, [=](CollWork &) {
                agree_dtype(t, top, "reduce");
                at::Tensor dst = rank_ == root ? t : at::empty_like(t);
                check(run_reduce(t.data_ptr(), dst.data_ptr(), (size_t)t.numel(), d, op, root), "reduce");
            });
        });
    }

    WorkPtr allgather(std::vector<std::vector<at::Tensor>> &outs, std::vector<at::Tensor> &ins,
                      const c10d::AllgatherOptions &o) override
    {
        return guarded([&] {
            check_one(ins, "allgather");
            if (outs.size() != 1 || outs[0].size() != (size_t)size_)
                throw Refusal("coll: allgather: one output list of " + std::to_string(size_) + " tensors expected");
            at::Tensor in = ins[0];
            std::vector<at::Tensor> out = outs[0];
            for (auto &t : out) {
                check_tensor(t, "allgather");
                same_shape(t, in, "allgather");
            }
            return submit(OpType::ALLGATHER, out, {in}, o.timeout, [=](CollWork &) {
                Elems e = elems(in, "allgather");
                at::Tensor flat = at::empty({(int64_t)size_ * in.numel()}, in.options());
                check(run_allgather(in.data_ptr(), flat.data_ptr(), e.count, e.dtype),
                      "allgather");
                unflatten(flat, out);
            });
        });
    }

    WorkPtr _allgather_base(at::Tensor &out, at::Tensor &in, const c10d::AllgatherOptions &o) override
    {
        return guarded([&] {
            check_tensor(in, "_allgather_base");
            check_tensor(out, "_allgather_base");
            if (out.scalar_type() != in.scalar_type() || out.numel() != in.numel() * size_)
                throw Refusal("coll: _allgather_base: the output must hold world_size x the input, same dtype");
            at::Tensor i = in, d = out;
            return submit(OpType::_ALLGATHER_BASE, {d}, {i}, o.timeout, [=](CollWork &) {
                Elems e = elems(i, "_allgather_base");
                check(run_allgather(i.data_ptr(), d.data_ptr(), e.count, e.dtype),
                      "_allgather_base");
            });
        });
    }

    WorkPtr reduce_scatter(std::vector<at::Tensor> &outs, std::vector<std::vector<at::Tensor>> &ins,
                           const c10d::ReduceScatterOptions &o) override
    {
        return guarded([&] {
            check_one(outs, "reduce_scatter");
            if (ins.size() != 1 || ins[0].size() != (size_t)size_)
                throw Refusal("coll: reduce_scatter: one input list of " + std::to_string(size_) + " tensors expected");
            at::Tensor out = outs[0];
            std::vector<at::Tensor> in = ins[0];
            for (auto &t : in) {
                check_tensor(t, "reduce_scatter");
                same_shape(t, out, "reduce_scatter");
            }
            coll_op op;
            coll_dtype d = reduce_args(out, o.reduceOp, &op, "reduce_scatter");
            int top = (int)o.reduceOp.op_;
            return submit(OpType::REDUCE_SCATTER, {out}, in, o.timeout, [=](CollWork &) {
                agree_dtype(out, top, "reduce_scatter");
                at::Tensor flat = at::cat(flatten(in));
                check(run_reduce_scatter(flat.data_ptr(), out.data_ptr(), (size_t)out.numel(), d, op), "reduce_scatter");
            });
        });
    }

    WorkPtr _reduce_scatter_base(at::Tensor &out, at::Tensor &in, const c10d::ReduceScatterOptions &o) override
    {
        return guarded([&] {
            check_tensor(in, "_reduce_scatter_base");
            check_tensor(out, "_reduce_scatter_base");
            if (out.scalar_type() != in.scalar_type() || in.numel() != out.numel() * size_)
                throw Refusal("coll: _reduce_scatter_base: the input must hold world_size x the output, same dtype");
            coll_op op;
            coll_dtype d = reduce_args(out, o.reduceOp, &op, "_reduce_scatter_base");
            int top = (int)o.reduceOp.op_;
            at::Tensor i = in, r = out;
            return submit(OpType::_REDUCE_SCATTER_BASE, {r}, {i}, o.timeout, [=](CollWork &) {
                agree_dtype(r, top, "_reduce_scatter_base");
                check(run_reduce_scatter(i.data_ptr(), r.data_ptr(), (size_t)r.numel(), d, op), "_reduce_scatter_base");
            });
        });
    }

    WorkPtr gather(std::vector<std::vector<at::Tensor>> &outs, std::vector<at::Tensor> &ins,
                   const c10d::GatherOptions &o) override
    {
        return guarded([&] {
            check_one(ins, "gather");
            int root = root_of(o.rootRank, "gather");
            at::Tensor in = ins[0];
            std::vector<at::Tensor> out;
            if (rank_ == root) {
                if (outs.size() != 1 || outs[0].size() != (size_t)size_)
                    throw Refusal("coll: gather: the root needs one output list of " + std::to_string(size_) +
                                  " tensors");
                out = outs[0];
                for (auto &t : out) {
                    check_tensor(t, "gather");
                    same_shape(t, in, "gather");
                }
            } else if (!outs.empty() && !outs[0].empty()) {
                throw Refusal("coll: gather: only the root passes output tensors");
            }
            return submit(OpType::GATHER, out, {in}, o.timeout, [=](CollWork &) {
                Elems e = elems(in, "gather");
                at::Tensor flat;
                if (rank_ == root) flat = at::empty({(int64_t)size_ * in.numel()}, in.options());
                check(run_gather(in.data_ptr(), flat.defined() ? flat.data_ptr() : nullptr, e.count,
                                  e.dtype, root), "gather");
                if (rank_ == root) unflatten(flat, out);
            });
        });
    }

    WorkPtr scatter(std::vector<at::Tensor> &outs, std::vector<std::vector<at::Tensor>> &ins,
                    const c10d::ScatterOptions &o) override
    {
        return guarded([&] {
            check_one(outs, "scatter");
            int root = root_of(o.rootRank, "scatter");
            at::Tensor out = outs[0];
            std::vector<at::Tensor> in;
            if (rank_ == root) {
                if (ins.size() != 1 || ins[0].size() != (size_t)size_)
                    throw Refusal("coll: scatter: the root needs one input list of " + std::to_string(size_) +
                                  " tensors");
                in = ins[0];
                for (auto &t : in) {
                    check_tensor(t, "scatter");
                    same_shape(t, out, "scatter");
                }
            } else if (!ins.empty() && !ins[0].empty()) {
                throw Refusal("coll: scatter: only the root passes input tensors");
            }
            return submit(OpType::SCATTER, {out}, in, o.timeout, [=](CollWork &) {
                Elems e = elems(out, "scatter");
                at::Tensor flat;
                if (rank_ == root) flat = at::cat(flatten(in));
                check(run_scatter(flat.defined() ? flat.data_ptr() : nullptr, out.data_ptr(), e.count,
                                   e.dtype, root), "scatter");
            });
        });
    }

    // Split sizes count rows of dim 0, as in torch; none = equal blocks.
    WorkPtr alltoall_base(at::Tensor &out, at::Tensor &in, std::vector<int64_t> &outSplit,
                          std::vector<int64_t> &inSplit, const c10d::AllToAllOptions &o) override
    {
        return guarded([&] {
            check_tensor(in, "alltoall_base");
            check_tensor(out, "alltoall_base");
            if (in.scalar_type() != out.scalar_type())
                throw Refusal("coll: alltoall_base: input and output of one dtype");
            at::Tensor i = in, d = out;
            if (outSplit.empty() && inSplit.empty()) {
                if (in.numel() % size_ || out.numel() != in.numel())
                    throw Refusal("coll: alltoall_base: without split sizes, input and output must be equal and "
                                  "divisible by world_size");
                return submit(OpType::ALLTOALL_BASE, {d}, {i}, o.timeout, [=](CollWork &) {
                    Elems e = elems(i, "alltoall_base");
                    check(run_alltoall(i.data_ptr(), d.data_ptr(), e.count / size_, e.dtype),
                          "alltoall_base");
                });
            }
            std::vector<size_t> send = split_counts(in, inSplit, "input"), recv = split_counts(out, outSplit, "output");
            return submit(OpType::ALLTOALL_BASE, {d}, {i}, o.timeout, [=](CollWork &) {
                alltoallv(i.data_ptr(), d.data_ptr(), send, recv, i, "alltoall_base");
            });
        });
    }

    WorkPtr alltoall(std::vector<at::Tensor> &outs, std::vector<at::Tensor> &ins,
                     const c10d::AllToAllOptions &o) override
    {
        return guarded([&] {
            if (outs.size() != (size_t)size_ || ins.size() != (size_t)size_)
                throw Refusal("coll: alltoall: lists of world_size tensors expected");
            std::vector<size_t> send, recv;
            for (int j = 0; j < size_; j++) {
                check_tensor(ins[j], "alltoall");
                check_tensor(outs[j], "alltoall");
                if (ins[j].scalar_type() != ins[0].scalar_type() || outs[j].scalar_type() != ins[0].scalar_type())
                    throw Refusal("coll: alltoall: tensors of one dtype only");
                send.push_back((size_t)ins[j].numel());
                recv.push_back((size_t)outs[j].numel());
            }
            std::vector<at::Tensor> in = ins, out = outs;
            return submit(OpType::ALLTOALL, out, in, o.timeout, [=](CollWork &) {
                at::Tensor flat_in = at::cat(flatten(in));
                int64_t total = 0;
                for (auto &t : out) total += t.numel();
                at::Tensor flat_out = at::empty({total}, flat_in.options());
                alltoallv(flat_in.data_ptr(), flat_out.data_ptr(), send, recv, flat_in, "alltoall");
                unflatten(flat_out, out);
            });
        });
    }

    WorkPtr barrier(const c10d::BarrierOptions &o) override
    {
        return submit(OpType::BARRIER, {}, {}, o.timeout,
                      [=](CollWork &) { check(run_barrier(), "barrier"); });
    }

    // ---- point to point ----

    WorkPtr send(std::vector<at::Tensor> &ts, int dst, int tag) override
    {
        peer_ok(dst, "send");
        std::string refused;
        try {
            check_one(ts, "send");
        } catch (const Refusal &e) {
            refused = e.what();
        }
        at::Tensor t = refused.empty() ? ts[0] : at::Tensor();
        auto w = submit(OpType::SEND, {}, {}, c10d::kUnsetTimeout, [=](CollWork &w) {
            post_send(w, t, dst, tag);
        });
        if (!refused.empty()) throw Error(refused);   // the receiver hears of it
        return w;
    }

    WorkPtr recv(std::vector<at::Tensor> &ts, int src, int tag) override
    {
        peer_ok(src, "recv");
        std::string refused;
        try {
            check_one(ts, "recv");
        } catch (const Refusal &e) {
            refused = e.what();
        }
        at::Tensor t = refused.empty() ? ts[0] : at::Tensor();
        std::vector<at::Tensor> out;
        if (t.defined()) out.push_back(t);
        auto w = submit(OpType::RECV, out, {}, c10d::kUnsetTimeout, [=](CollWork &) {
            take_recv(t, src, tag);
        });
        if (!refused.empty()) throw Error(refused);   // its message is drained
        return w;
    }

    WorkPtr recvAnysource(std::vector<at::Tensor> &, int) override
    {
        throw Error("coll: recv without a source rank is not supported: name the sender (src=...)");
    }

private:
    // ---- rendezvous through the Store ----

    // What tells hosts apart: COLL_HOST_ID where set (as coll_hosts.h
    // reads it: tests, and setups where the default is wrong), else the
    // kernel (boot id), the host name and the /dev/shm this process sees
    // (containers differ). A launcher's node counts too: with WORLD_SIZE
    // above LOCAL_WORLD_SIZE the job says it spans nodes, and GROUP_RANK
    // (else RANK / LOCAL_WORLD_SIZE, torchrun's host-major numbering) says
    // which is this one, so two nodes started on one machine are two hosts.
    static std::string host_id()
    {
        std::string id;
        if (const char *e = std::getenv("COLL_HOST_ID")) {
            id = std::string("env:") + e;
        } else {
            char h[256] = "";
            gethostname(h, sizeof h - 1);
            std::string boot;
            std::ifstream f("/proc/sys/kernel/random/boot_id");
            std::getline(f, boot);
            id = std::string(h) + "|" + boot;
            struct stat st;
            if (stat("/dev/shm", &st) == 0) id += "|" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
        }
        long world = std::atol(env_str("WORLD_SIZE", "0").c_str()), local = std::atol(env_str("LOCAL_WORLD_SIZE", "0").c_str());
        if (world > 0 && local > 0 && world > local) {
            std::string node = env_str("GROUP_RANK", "");
            if (node.empty()) node = std::to_string(std::atol(env_str("RANK", "0").c_str()) / local);
            id += "|node " + node;
        }
        return id;
    }

    static std::string get(c10d::Store &s, const std::string &k)
    {
        auto v = s.get(k);
        return std::string(v.begin(), v.end());
    }
    static void set(c10d::Store &s, const std::string &k, const std::string &v)
    {
        s.set(k, std::vector<uint8_t>(v.begin(), v.end()));
    }

    // The address rank 0's TCP listener is reachable at: where torch's own
    // TCPStore is (rank 0 hosts it), else MASTER_ADDR, else the host name.
    static std::string store_host(const c10::intrusive_ptr<c10d::Store> &store)
    {
        c10::intrusive_ptr<c10d::Store> s = store;
        for (int depth = 0; depth < 8 && s; depth++) {
            if (auto *p = dynamic_cast<c10d::PrefixStore *>(s.get())) s = p->getUnderlyingStore();
            else if (auto *t = dynamic_cast<c10d::TCPStore *>(s.get())) return t->getHost();
            else break;
        }
        std::string m = env_str("MASTER_ADDR", "");
        if (!m.empty()) return m;
        char h[256] = "";
        gethostname(h, sizeof h - 1);
        return h;
    }

    static std::string random_hex(size_t bytes)
    {
        std::random_device rd;
        std::string s;
        for (size_t i = 0; i < bytes; i++) s += "0123456789abcdef"[rd() & 0xf], s += "0123456789abcdef"[rd() & 0xf];
        return s;
    }

    // A verdict against the entries (sizes, COLL_TORCH_PORT, scratch that
    // differ) raises on every rank, but rank 0 hosts torch's store (env://,
    // tcp://) and its exit takes the store with it: a rank still reading
    // the entries would then raise "never came to the store" instead. So
    // each rank adds 1 to coll/verdict, and rank 0 raises once its size_
    // ranks have, or 5 s on.
    void stay_for_verdict(c10d::Store &store) const
    {
        try {
            int64_t n = store.add("coll/verdict", 1);
            if (rank_ != 0) return;
            auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
            while (n < size_ && std::chrono::steady_clock::now() < until) {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
                n = store.add("coll/verdict", 0);
            }
        } catch (const std::exception &) {
            // the store is gone already: nothing to wait for
        }
    }

    void rendezvous(const c10::intrusive_ptr<c10d::Store> &sp)
    {
        c10d::Store &store = *sp;
        auto timeout_ms = (unsigned long long)timeout_.count();
        unsigned op_ms = timeout_ms > 0xffffffffull ? 0xffffffffu : (unsigned)timeout_ms;
        unsigned join_ms = op_ms < 60000u ? op_ms : 60000u;   // everybody is here already
        std::string want = env_str("COLL_TORCH_PORT", "auto");
        // Scratch: the message segment is half of it (1 MiB default); both
        // ends of a message must cut it alike, so every rank must agree.
        std::string scratch = env_str("COLL_TORCH_SCRATCH", "1048576");
        // The group's size leads: a rank started with another WORLD_SIZE
        // is found by every rank that reads its entry, or whose entry it
        // reads, instead of at the timeout.
        std::string me = host_id();
        set(store, "coll/host/" + std::to_string(rank_),
            std::to_string(size_) + "\n" + want + "\n" + scratch + "\n" + me);

        // Every rank reads every rank's entry and comes to the same verdict.
        bool one_host = true, heard = true;
        std::string host0;
        try {
            for (int r = 0; r < size_; r++) {
                std::string entry;
                try {
                    entry = get(store, "coll/host/" + std::to_string(r));
                } catch (const std::exception &e) {
                    heard = false;
                    throw Error("coll: rank " + std::to_string(r) + " of " + std::to_string(size_) +
                                " never came to the store within the group's timeout (is it running, and is "
                                "WORLD_SIZE=" + std::to_string(size_) + " right?): " + e.what());
                }
                std::istringstream v(entry);
                std::string n, w, sc, h;
                std::getline(v, n);
                std::getline(v, w);
                std::getline(v, sc);
                std::getline(v, h);
                if (n != std::to_string(size_))
                    throw Error("coll: the ranks disagree on the group's size (WORLD_SIZE): " + std::to_string(size_) +
                                " on this rank (" + std::to_string(rank_) + "), " + n + " on rank " + std::to_string(r));
                if (r == 0) host0 = h;
                else one_host = one_host && h == host0;
                if (w != "auto" && w != "shm" && w != "tcp" && w != "hosts")
                    throw Error("coll: rank " + std::to_string(r) + ": COLL_TORCH_PORT=" + w +
                                " is none of auto, shm, tcp, hosts");
                if (w != want)
                    throw Error("coll: COLL_TORCH_PORT differs between ranks (" + want + " here, " + w + " on rank " +
                                std::to_string(r) + ")");
                if (sc != scratch)
                    throw Error("coll: COLL_TORCH_SCRATCH differs between ranks (" + scratch + " here, " + sc +
                                " on rank " + std::to_string(r) + ")");
            }
            if (want == "shm" && !one_host)
                throw Error("coll: COLL_TORCH_PORT=shm, but the ranks are not all on one host");
        } catch (const Error &) {
            if (heard) stay_for_verdict(store);
            throw;
        }
        port_name_ = want != "auto" ? want : one_host ? "shm" : "hosts";

        int rc;
        if (port_name_ == "shm") {
            if (rank_ == 0) set(store, "coll/shm", "/coll-torch-" + std::to_string(getpid()) + "-" + random_hex(8));
            std::string name = get(store, "coll/shm");
            shm_.reset(new coll_shm());
            rc = coll_shm_open(shm_.get(), name.c_str(), rank_, size_, join_ms, &port_);
            if (rc) {
                std::string why = shm_->why ? shm_->why : "";
                shm_.reset();
                fail(rc, "joining the shm group " + name + (why.empty() ? "" : ": " + why));
            }
            shm_->timeout_ms = op_ms;
        } else {
            // TCP, or the composite port whose TCP mesh meets the same way:
            // rank 0 says where to meet, or why it cannot ("!why"): the
            // others must not wait for a rendezvous that will not happen.
            if (rank_ == 0) {
                char token[33];
                std::string addr = env_str("COLL_TORCH_TCP_ADDR", "");
                if (addr.empty()) addr = one_host ? "127.0.0.1" : store_host(sp);
                int port = coll_tcp_free_port();
                if (coll_tcp_new_token(token)) set(store, "coll/tcp", "!no random source for the TCP job token");
                else if (port < 0) set(store, "coll/tcp", "!no free TCP port for the rendezvous");
                else set(store, "coll/tcp", addr + "\n" + std::to_string(port) + "\n" + token);
            }
            std::string v = get(store, "coll/tcp");
            if (!v.empty() && v[0] == '!') throw Error("coll: rank 0: " + v.substr(1));
            std::istringstream in(v);
            std::string addr, port, token;
            std::getline(in, addr);
            std::getline(in, port);
            std::getline(in, token);
            if (port_name_ == "tcp") {
                tcp_.reset(new coll_tcp());
                rc = coll_tcp_init_token(tcp_.get(), addr.c_str(), std::atoi(port.c_str()), rank_, size_, join_ms,
                                         token.c_str());
                if (rc) {
                    tcp_.reset();
                    fail(rc, "joining over TCP at " + addr + ":" + port);
                }
                coll_tcp_set_timeout(tcp_.get(), op_ms);
                port_ = coll_tcp_port(tcp_.get());
            } else {
                // The hosts port learns the hosts at its own rendezvous, from
                // the identity this rank wrote to the store (so both agree),
                // with the store's token. LOCAL_RANK and LOCAL_WORLD_SIZE
                // describe the job, not this group (a new_group's ranks are
                // numbered anew): its claims are left out; the identity
                // already carries the launcher's node.
                hosts_.reset(new coll_hosts());
                {
                    EnvFor env;
                    env.set("COLL_TCP_TOKEN", token.c_str());
                    env.set("COLL_HOST_ID", ("torch:" + digest_hex(me)).c_str());
                    env.set("LOCAL_RANK", nullptr);
                    env.set("LOCAL_WORLD_SIZE", nullptr);
                    rc = coll_hosts_init(hosts_.get(), addr.c_str(), std::atoi(port.c_str()), rank_, size_, join_ms);
                }
                if (rc) {
                    std::string why = hosts_->why;
                    hosts_.reset();
                    fail(rc, "joining the hosts port at " + addr + ":" + port + (why.empty() ? "" : ": " + why));
                }
                coll_hosts_set_timeout(hosts_.get(), op_ms);
                port_ = coll_hosts_port(hosts_.get());
            }
        }

        size_t bytes = (size_t)std::strtoull(scratch.c_str(), nullptr, 10);
        scratch_.resize(bytes < 64 ? 64 : bytes);
        comm_.reset(new coll_comm());
        rc = coll_init(comm_.get(), rank_, size_, &port_, scratch_.data(), scratch_.size());
        if (rc) fail(rc, "coll_init");
        default_timeout_ = op_ms;
        start_recorder(comm_.get(), 0);

        // Over the hosts port every collective goes through coll_hier: the
        // subs share the world's scratch (they take turns with it); work
        // stages the blocks a phase reorders (a call that needs more takes
        // a flat road, still right). One host: coll_hier takes the world's
        // road anyway, so it is left out. COLL_TORCH_HIER=0 (the same on
        // every rank) keeps the calls flat over the hosts port.
        if (hosts_ && coll_hosts_nhosts(hosts_.get()) > 1 && env_str("COLL_TORCH_HIER", "1") != "0") {
            size_t wb = (size_t)std::strtoull(env_str("COLL_TORCH_HIER_WORK", "4194304").c_str(), nullptr, 10);
            work_.resize(wb);
            hier_.reset(new coll_hier());
            rc = coll_hier_init(hier_.get(), comm_.get(), coll_hosts_host(hosts_.get()), scratch_.data(),
                                scratch_.size(), work_.empty() ? nullptr : work_.data(), work_.size());
            if (rc) {
                std::string why = coll_hier_last_error(hier_.get());
                hier_.reset();
                fail(rc, "coll_hier_init" + (why.empty() ? "" : " (" + why + ")"));
            }
            start_recorder(&hier_->local, 1);
            start_recorder(&hier_->cross, 2);
            start_recorder(&hier_->byhost, 3);
        }
    }

    // ---- the worker ----

    coll_comm *comm() { return comm_.get(); }

    [[noreturn]] void fail(int rc, const std::string &what) const
    {
        std::string last = hier_ ? hier_error() : "";
        if (last.empty() && comm_) last = coll_last_error(comm_.get());
        std::ostringstream o;
        o << "coll: " << what << " failed on rank " << rank_ << " of " << size_ << " (" << port_name_
          << " port): " << code_name(rc) << " (" << rc << ", " << coll_result_str(rc) << ")";
        if (!last.empty()) o << ": " << last;
        std::string path = comm_ ? write_record(o.str()) : "";
        if (!path.empty()) o << " [the last calls: " << path << "]";
        throw Error(o.str());
    }

    // ---- the flight recorder ----

    // Each communicator the group made keeps its last calls (64,
    // COLL_TORCH_RECORD_CALLS) in a ring, stamped in CLOCK_MONOTONIC ns:
    // [0] the world's, [1..3] coll_hier's local, cross and byhost.
    void start_recorder(coll_comm *c, int which)
    {
        long n = std::atol(env_str("COLL_TORCH_RECORD_CALLS", "64").c_str());
        if (n <= 0) return;
        rec_[which].assign((size_t)n, coll_record{});
        if (coll_set_recorder(c, rec_[which].data(), (unsigned)n, now_ns, nullptr) != COLL_OK) rec_[which].clear();
    }

    struct Recorded {
        const char *name;
        const coll_comm *comm;
        const coll_subport *sp;   // sub rank -> world rank (nullptr: the world)
        const std::vector<coll_record> *ring;
    };
    std::vector<Recorded> recorded() const
    {
        std::vector<Recorded> v;
        if (comm_) v.push_back({"world", comm_.get(), nullptr, &rec_[0]});
        if (hier_) {
            v.push_back({"local (the ranks of this host)", &hier_->local, &hier_->local_sp, &rec_[1]});
            v.push_back({"cross (one rank of each host)", &hier_->cross, &hier_->cross_sp, &rec_[2]});
            v.push_back({"byhost (the world, host-major)", &hier_->byhost, &hier_->byhost_sp, &rec_[3]});
        }
        return v;
    }

    // Every communicator's ring as text, oldest call first, a header each.
    std::string record_text() const
    {
        std::string s;
        for (auto &r : recorded()) {
            if (r.ring->empty()) continue;
            s += std::string("# ") + r.name + " communicator: rank " + std::to_string(coll_rank(r.comm)) + " of " +
                 std::to_string(coll_size(r.comm)) + "; start, end: CLOCK_MONOTONIC ns; peer: this "
                 "communicator's rank\n";
            coll_dump(r.comm, append_text, &s);
        }
        return s;
    }

    // COLL_TORCH_RECORD=path (%r: this rank in the group): the recorders'
    // lines under a header naming the failure, the file rewritten at each
    // failure (the ring holds the earlier ones' calls). The path, or "".
    std::string write_record(const std::string &why) const
    {
        std::string path = env_str("COLL_TORCH_RECORD", "");
        if (path.empty()) return "";
        for (size_t at; (at = path.find("%r")) != std::string::npos;) path.replace(at, 2, std::to_string(rank_));
        std::ofstream f(path, std::ios::trunc);
        if (!f) return "";
        f << "# coll_torch: rank " << rank_ << " of " << size_ << ", " << port_name_ << " port, pid " << getpid()
          << ", at " << now_ns(nullptr) << " ns\n# " << why << "\n" << record_text();
        f.flush();
        return f ? path : "";
    }

    // A failure inside coll_hier: the communicator whose call failed last
    // during this operation, its reason, and the peer as a world rank
    // (the reason counts the sub's ranks).
    std::string hier_error() const
    {
        const Recorded *best = nullptr;
        const coll_record *be = nullptr;
        auto all = recorded();
        for (auto &r : all)
            for (auto &e : *r.ring)
                if (e.seq && e.result < 0 && e.result != COLL_AGAIN && e.end >= op_start_ns_ &&
                    (!be || e.end > be->end)) {
                    best = &r;
                    be = &e;
                }
        if (!be) return "";
        std::string s = coll_last_error(best->comm);
        if (best->sp) {
            s = std::string("in the ") + best->name + " communicator: " + s;
            if (be->peer >= 0 && be->peer < best->sp->n)
                s += " (that is world rank " + std::to_string(best->sp->members[be->peer]) + ")";
        }
        return s;
    }

public:
    std::string recordText() const { return record_text(); }
    // The road coll_hier took for the last collective ("phases", "byhost",
    // "world"), or "flat": the group runs without coll_hier.
    std::string lastRoad() const { return road_name(last_road_); }
    std::map<std::string, unsigned long long> roads() const
    {
        std::map<std::string, unsigned long long> m;
        for (int i = 0; i < 5; i++)
            if (roads_[i]) m[road_name(i)] = roads_[i];
        return m;
    }
    int hosts() const { return hosts_ ? coll_hosts_nhosts(hosts_.get()) : 1; }

private:
    static std::string road_name(int r)
    {
        switch (r) {
        case COLL_HIER_PHASES: return "phases";
        case COLL_HIER_BYHOST: return "byhost";
        case COLL_HIER_WORLD: return "world";
        case 4: return "flat";
        default: return "none";
        }
    }

    // ---- the collectives, flat or through coll_hier ----

    int road(int rc)
    {
        last_road_ = hier_ ? coll_hier_road(hier_.get()) : 4;
        if (last_road_ < 0 || last_road_ > 4) last_road_ = 0;
        roads_[last_road_]++;
        return rc;
    }
    // Through coll_hier every collective first agrees on the call over the
    // world: one all-reduce (MAX) of 8 bytes, a digest of the call's kind,
    // count, dtype, op and root and its complement. A rank that refuses its
    // arguments runs that all-reduce as a refusal instead (guarded, below):
    // every other rank's agreement ends in COLL_ERR_PEER before anyone
    // enters coll_hier, whose phases on sub-communicators could not tell
    // them (a rank outside a phase never hears of it), and the group stays
    // usable. Ranks whose digests differ would take different roads: every
    // rank sees it here (the max of the digest is then not the complement
    // of the max of its complement) and raises alike.
    int agree_call(coll_kind k, size_t n, coll_dtype t, coll_op op, int root)
    {
        const uint64_t v[5] = {(uint64_t)k, (uint64_t)n, (uint64_t)t, (uint64_t)op, (uint64_t)(uint32_t)root};
        uint32_t d = 2166136261u;
        for (uint64_t x : v)
            for (int b = 0; b < 8; b++) d = (d ^ (uint32_t)((x >> (8 * b)) & 0xff)) * 16777619u;
        uint32_t mine[2] = {d, ~d}, all[2] = {0, 0};
        int rc = coll_allreduce(comm(), mine, all, 2, COLL_UINT32, COLL_MAX, COLL_ALGO_AUTO);
        if (rc != COLL_OK) return rc;
        if (all[0] != ~all[1])
            throw Error(std::string("coll: ") + coll_kind_name(k) + ": the ranks' calls differ in count, dtype, op "
                        "or root (through coll_hier they would take different roads)");
        return COLL_OK;
    }
    int run_allreduce(const void *s, void *d, size_t n, coll_dtype t, coll_op op)
    {
        if (!hier_) return road(coll_allreduce(comm(), s, d, n, t, op, COLL_ALGO_AUTO));
        int rc = agree_call(COLL_ALLREDUCE, n, t, op, 0);
        return rc ? rc : road(coll_hier_allreduce(hier_.get(), s, d, n, t, op));
    }
    int run_broadcast(void *b, size_t n, coll_dtype t, int root)
    {
        if (!hier_) return road(coll_broadcast(comm(), b, n, t, root, COLL_ALGO_AUTO));
        int rc = agree_call(COLL_BROADCAST, n, t, COLL_SUM, root);
        return rc ? rc : road(coll_hier_broadcast(hier_.get(), b, n, t, root));
    }
    int run_reduce(const void *s, void *d, size_t n, coll_dtype t, coll_op op, int root)
    {
        if (!hier_) return road(coll_reduce(comm(), s, d, n, t, op, root, COLL_ALGO_AUTO));
        int rc = agree_call(COLL_REDUCE, n, t, op, root);
        return rc ? rc : road(coll_hier_reduce(hier_.get(), s, d, n, t, op, root));
    }
    int run_allgather(const void *s, void *d, size_t n, coll_dtype t)
    {
        if (!hier_) return road(coll_allgather(comm(), s, d, n, t, COLL_ALGO_AUTO));
        int rc = agree_call(COLL_ALLGATHER, n, t, COLL_SUM, 0);
        return rc ? rc : road(coll_hier_allgather(hier_.get(), s, d, n, t));
    }
    int run_reduce_scatter(const void *s, void *d, size_t n, coll_dtype t, coll_op op)
    {
        if (!hier_) return road(coll_reduce_scatter(comm(), s, d, n, t, op, COLL_ALGO_AUTO));
        int rc = agree_call(COLL_REDUCE_SCATTER, n, t, op, 0);
        return rc ? rc : road(coll_hier_reduce_scatter(hier_.get(), s, d, n, t, op));
    }
    int run_gather(const void *s, void *d, size_t n, coll_dtype t, int root)
    {
        if (!hier_) return road(coll_gather(comm(), s, d, n, t, root, COLL_ALGO_AUTO));
        int rc = agree_call(COLL_GATHER, n, t, COLL_SUM, root);
        return rc ? rc : road(coll_hier_gather(hier_.get(), s, d, n, t, root));
    }
    int run_scatter(const void *s, void *d, size_t n, coll_dtype t, int root)
    {
        if (!hier_) return road(coll_scatter(comm(), s, d, n, t, root, COLL_ALGO_AUTO));
        int rc = agree_call(COLL_SCATTER, n, t, COLL_SUM, root);
        return rc ? rc : road(coll_hier_scatter(hier_.get(), s, d, n, t, root));
    }
    int run_alltoall(const void *s, void *d, size_t n, coll_dtype t)
    {
        if (!hier_) return road(coll_alltoall(comm(), s, d, n, t, COLL_ALGO_AUTO));
        int rc = agree_call(COLL_ALLTOALL, n, t, COLL_SUM, 0);
        return rc ? rc : road(coll_hier_alltoall(hier_.get(), s, d, n, t));
    }
    int run_barrier()
    {
        if (!hier_) return road(coll_barrier(comm(), COLL_ALGO_AUTO));
        int rc = agree_call(COLL_BARRIER, 0, COLL_UINT8, COLL_SUM, 0);
        return rc ? rc : road(coll_hier_barrier(hier_.get()));
    }
    void check(int rc, const char *what) const
    {
        if (rc != COLL_OK) fail(rc, what);
    }

    int root_of(int64_t root, const char *op) const
    {
        if (root < 0 || root >= size_)
            throw Refusal(std::string("coll: ") + op + ": root " + std::to_string(root) + " is not a rank of this group");
        return (int)root;
    }

    void peer_ok(int peer, const char *op) const
    {
        if (peer < 0 || peer >= size_ || peer == rank_)
            throw Error(std::string("coll: ") + op + ": rank " + std::to_string(peer) +
                        " is not another rank of this group");
    }

    // A dtype coll has no name for (bool, int16, complex, ...) goes as bytes
    // or as uint8, and the call check cannot tell a bool from a uint8, or an
    // int16 from two of them. Such a call first agrees on the torch dtype
    // (and the torch op, -1 for a copy), in an all-gather of its own:
    // COLL_UINT32, which no tensor's call uses, so a rank calling with a
    // dtype coll has meets this one's all-gather in the call check and both
    // raise COLL_ERR_MISMATCH; ranks that both agree first compare here.
    // One small call more, for those dtypes only. An int16 reduction then
    // sets the communicator's user operator to the agreed op's function.
    void agree_dtype(const at::Tensor &t, int op, const char *what)
    {
        coll_dtype d;
        if (dtype_of(t.scalar_type(), &d)) return;
        uint32_t mine[3] = {0x636f6474u, (uint32_t)t.scalar_type(), (uint32_t)op};
        std::vector<uint32_t> all(3 * (size_t)size_);
        int rc = coll_allgather(comm(), mine, all.data(), 3, COLL_UINT32, COLL_ALGO_AUTO);
        if (rc == COLL_ERR_MISMATCH)
            fail(rc, std::string(what) + " of " + dtype_name(t.scalar_type()) + " (another rank's dtype or call differs)");
        check(rc, what);
        for (int r = 0; r < size_; r++) {
            const uint32_t *v = &all[3 * (size_t)r];
            if (v[0] != mine[0]) throw Error(std::string("coll: ") + what + ": rank " + std::to_string(r) +
                                             " sent something else than its dtype (the ranks' calls are out of step)");
            if (v[1] != mine[1])
                throw Error(std::string("coll: ") + what + ": the ranks' tensors differ in dtype: " +
                            dtype_name(t.scalar_type()) + " on this rank (" + std::to_string(rank_) + "), " +
                            dtype_name((at::ScalarType)v[1]) + " on rank " + std::to_string(r));
            if (v[2] != mine[2])
                throw Error(std::string("coll: ") + what + ": the ranks' reduce ops differ: " + std::to_string((int)mine[2]) +
                            " on this rank (" + std::to_string(rank_) + "), " + std::to_string((int)v[2]) + " on rank " +
                            std::to_string(r));
        }
        if (t.scalar_type() == at::kShort && op >= 0) {
            coll_user_op u{};
            u.fn = i16_fn(op);
            u.elem_size = 2;
            u.commutative = 1;
            check(hier_ ? coll_hier_set_user_op(hier_.get(), &u) : coll_set_user_op(comm(), &u), what);
        }
    }

    // A copy's elements: coll's dtype, or bytes once the ranks agree on it.
    Elems elems(const at::Tensor &t, const char *what)
    {
        coll_dtype d;
        size_t es = t.element_size();
        if (dtype_of(t.scalar_type(), &d)) return {d, (size_t)t.numel(), es};
        agree_dtype(t, -1, what);
        return {COLL_UINT8, (size_t)t.numel() * es, 1};
    }

    static std::vector<at::Tensor> flatten(const std::vector<at::Tensor> &ts)
    {
        std::vector<at::Tensor> v;
        for (auto &t : ts) v.push_back(t.reshape({-1}));
        return v;
    }
    static void unflatten(const at::Tensor &flat, const std::vector<at::Tensor> &out)
    {
        int64_t off = 0;
        for (auto &t : out) {
            t.view({-1}).copy_(flat.narrow(0, off, t.numel()));
            off += t.numel();
        }
    }

    // Elements per destination (or source) rank from torch's split sizes.
    std::vector<size_t> split_counts(const at::Tensor &t, const std::vector<int64_t> &split, const char *which) const
    {
        int64_t rows = t.dim() ? t.size(0) : 1, per = rows ? t.numel() / rows : 0, sum = 0;
        std::vector<size_t> n(size_);
        if (split.empty() && rows % size_)
            throw Refusal(std::string("coll: alltoall_base: ") + which + " of " + std::to_string(rows) +
                          " rows does not split evenly");
        if (!split.empty() && split.size() != (size_t)size_)
            throw Refusal(std::string("coll: alltoall_base: ") + which + " split sizes need world_size entries");
        for (int j = 0; j < size_; j++) {
            int64_t r = split.empty() ? rows / size_ : split[j];
            if (r < 0) throw Refusal("coll: alltoall_base: a negative split size");
            sum += r;
            n[j] = (size_t)(r * per);
        }
        if (sum != rows)
            throw Refusal(std::string("coll: alltoall_base: ") + which + " split sizes add up to " + std::to_string(sum) +
                          ", the tensor has " + std::to_string(rows) + " rows");
        return n;
    }

    // All-to-all with per-pair counts: one all-gather of every rank's sends
    // and receives, the same verdict on every rank, then coll_alltoallv.
    void alltoallv(const void *in, void *out, const std::vector<size_t> &send, const std::vector<size_t> &recv,
                   const at::Tensor &like, const char *what)
    {
        size_t p = (size_t)size_;
        std::vector<uint64_t> mine(2 * p), all(2 * p * p);
        for (size_t j = 0; j < p; j++) {
            mine[j] = send[j];
            mine[p + j] = recv[j];
        }
        check(coll_allgather(comm(), mine.data(), all.data(), 2 * p, COLL_UINT64, COLL_ALGO_AUTO), what);
        std::vector<size_t> counts(p * p);   // counts[i*p + j]: i sends to j
        for (size_t i = 0; i < p; i++)
            for (size_t j = 0; j < p; j++) {
                counts[i * p + j] = (size_t)all[i * 2 * p + j];
                if (all[j * 2 * p + p + i] != all[i * 2 * p + j]) {
                    std::ostringstream o;
                    o << "coll: " << what << ": rank " << i << " sends " << all[i * 2 * p + j] << " elements to rank "
                      << j << ", which expects " << all[j * 2 * p + p + i] << " (split sizes disagree)";
                    throw Error(o.str());
                }
            }
        Elems e = elems(like, what);
        size_t k = e.count / (like.numel() ? (size_t)like.numel() : 1);   // coll elements per torch element
        if (k != 1)
            for (auto &c : counts) c *= k;
        check(coll_alltoallv(comm(), in, out, counts.data(), e.dtype, COLL_ALGO_AUTO), what);
    }

    // A send: its header and payload posted, left in flight (the worker
    // moves on; a later wait on the port moves its bytes, and the worker
    // completes it once the port says so). A refused send sends its header
    // with the flag and nothing else, so the receiver raises too.
    void post_send(CollWork &w, const at::Tensor &t, int dst, int tag)
    {
        while (sends_.size() >= P2P_MAX_SENDS) finish_send(sends_.front(), 1);
        uint32_t h[6] = {P2P_MAGIC, (uint32_t)tag, t.defined() ? 0u : (uint32_t)P2P_REFUSED,
                         t.defined() ? (uint32_t)t.scalar_type() : 0u, 0, 0};
        uint64_t bytes = t.defined() ? (uint64_t)t.nbytes() : 0;
        std::memcpy(&h[4], &bytes, 8);
        std::memcpy(w.header, h, sizeof w.header);
        check(post(1, dst, w.header, sizeof w.header, &w.handle[0]), "send");
        if (bytes) check(post(1, dst, t.data_ptr(), bytes, &w.handle[1]), "send");
        w.deferred = true;
        sends_.push_back(c10::intrusive_ptr<CollWork>::reclaim_copy(&w));
        if (t.defined()) w.keep.push_back(t);
    }

    int post(int is_send, int peer, void *buf, size_t bytes, int *h)
    {
        for (;;) {
            int rc = is_send ? port_.isend(port_.ctx, peer, buf, bytes, h) : port_.irecv(port_.ctx, peer, buf, bytes, h);
            if (rc != COLL_AGAIN) return rc;
            if (sends_.empty()) return rc;                    // nothing of ours to wait for
            finish_send(sends_.front(), 1);
        }
    }

    // Waits for (block) or polls a send's handles; completes its Work when
    // both are done. true when it completed.
    bool finish_send(const c10::intrusive_ptr<CollWork> &w, int block)
    {
        int err = 0;
        for (int &h : w->handle) {
            if (h < 0) continue;
            int rc = port_.wait(port_.ctx, h, block);
            if (rc == COLL_AGAIN) continue;
            h = -1;
            if (rc && !err) err = rc;
        }
        if (err) {
            // A transfer failed: the links are in an unknown state.
            for (int &h : w->handle)
                if (h >= 0) { port_.wait(port_.ctx, h, 1); h = -1; }
            abort_port(err);
        }
        if (w->handle[0] >= 0 || w->handle[1] >= 0) return false;
        for (auto it = sends_.begin(); it != sends_.end(); ++it)
            if (it->get() == w.get()) {
                sends_.erase(it);
                break;
            }
        std::exception_ptr e;
        if (err) {
            try {
                fail(err, "send");
            } catch (...) {
                e = std::current_exception();
            }
        }
        retire(w);
        w->done(e);
        return true;
    }

    // A finished Work is kept here until a Python thread next comes by
    // (submit, help) or the group goes: its tensors may hold the last
    // reference to Python objects, and dropping that on the group's thread
    // takes the GIL there - after Python began to finalize, that thread is
    // ended inside a C++ destructor and the process aborts ("terminate
    // called without an active exception", seen at the exit of 1 rank in
    // about 5 jobs). Kept before done(): once a caller can see the Work
    // finished, the group's thread never holds its last reference.
    void retire(const c10::intrusive_ptr<CollWork> &w)
    {
        std::lock_guard<std::mutex> lk(mu_);
        done_.push_back(w);
    }
    // On a caller's thread, without the lock: what the group's thread kept.
    void bury()
    {
        std::vector<c10::intrusive_ptr<CollWork>> v;
        {
            std::lock_guard<std::mutex> lk(mu_);
            v.swap(done_);
        }
    }

    bool poll_sends()
    {
        bool any = false;
        auto copy = sends_;
        for (auto &w : copy) any |= finish_send(w, 0);
        return any;
    }

    void abort_port(int code)
    {
        if (shm_) coll_shm_abort(shm_.get(), code);
        if (tcp_) coll_tcp_abort(tcp_.get(), code);
        if (hosts_) coll_hosts_abort(hosts_.get(), code);
    }

    int wait_one(int is_send, int peer, void *buf, size_t bytes)
    {
        int h, rc = post(is_send, peer, buf, bytes, &h);
        return rc ? rc : port_.wait(port_.ctx, h, 1);
    }

    // A receive's header: polled, not waited for, so that sends Python
    // issues while it waits (irecv, then isend) are posted meanwhile
    // (post_sends_behind) - its sender may be waiting for exactly those.
    // Yields first, then naps of up to 200 us; at the operation's timeout
    // one last wait with a 1 ms deadline gives the port's own verdict.
    int wait_header(int peer, void *buf, size_t bytes)
    {
        int h, rc = post(0, peer, buf, bytes, &h);
        if (rc) return rc;
        auto t0 = std::chrono::steady_clock::now();
        for (unsigned spin = 0;; spin++) {
            rc = port_.wait(port_.ctx, h, 0);
            if (rc != COLL_AGAIN) return rc;
            post_sends_behind();
            if (!sends_.empty()) poll_sends();
            if (spin < 64) {
                sched_yield();
                continue;
            }
            auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
            if (cur_timeout_ && (unsigned long long)ms.count() >= cur_timeout_) {
                unsigned keep = cur_timeout_;
                set_timeout(1);
                rc = port_.wait(port_.ctx, h, 1);
                set_timeout(keep);
                return rc;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(spin < 256 ? 20 : 200));
        }
    }

    // A receive: the header first, then (if it agrees) the payload. A
    // header of another size leaves the link unreadable: the group is
    // aborted, so the sender fails too instead of waiting.
    void take_recv(const at::Tensor &t, int src, int tag)
    {
        uint32_t h[6];
        uint64_t bytes;
        check(wait_header(src, h, sizeof h), "recv");
        std::memcpy(&bytes, &h[4], 8);
        std::string from = "coll: recv from rank " + std::to_string(src) + ": ";
        if (h[0] != P2P_MAGIC) {
            abort_port(COLL_ERR_MISMATCH);
            throw Error(from + "not a send's header (the ranks' calls are out of step); group aborted");
        }
        if (h[2] & P2P_REFUSED) throw Error(from + "the sender refused its tensor (see its error)");
        // a refused receive drains the message, up to a size worth holding
        uint64_t want = t.defined() ? (uint64_t)t.nbytes() : bytes <= P2P_MAX_DRAIN ? bytes : 0;
        if (bytes != want) {
            abort_port(COLL_ERR_MISMATCH);
            throw Error(from + "the sender sent " + std::to_string(bytes) + " bytes, this receive takes " +
                        std::to_string(want) + "; group aborted");
        }
        at::Tensor into = t.defined() ? t : at::empty({(int64_t)bytes}, at::kByte);
        if (bytes) check(wait_one(0, src, into.data_ptr(), bytes), "recv");
        if (!t.defined()) return;
        if ((int)h[1] != tag)
            throw Error(from + "tag " + std::to_string((int)h[1]) + " sent, tag " + std::to_string(tag) + " expected");
        if (h[3] != (uint32_t)t.scalar_type())
            throw Error(from + "dtype " + dtype_name((at::ScalarType)h[3]) + " sent, " +
                        dtype_name(t.scalar_type()) + " expected");
    }

    // Queues one operation. Its timeout, if given, replaces the group's for
    // the port's waits while it runs.
    WorkPtr submit(OpType type, std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep,
                   std::chrono::milliseconds timeout, std::function<void(CollWork &)> fn)
    {
        bury();
        auto w = c10::make_intrusive<CollWork>(this, rank_, type, std::move(outputs));
        w->keep = std::move(keep);
        unsigned ms = timeout.count() >= 0 ? (unsigned)std::min<long long>(timeout.count(), 0xffffffffll) : 0;
        w->run = [fn = std::move(fn), ms, this](CollWork &x) {
            op_start_ns_ = now_ns(nullptr);
            set_timeout(ms ? ms : default_timeout_);
            fn(x);
        };
        {
            std::lock_guard<std::mutex> lk(mu_);
            if (stop_) throw Error("coll: the process group is shut down");
            queue_.push_back(w);
        }
        cv_.notify_one();
        return w;
    }

    // A collective this rank refuses still takes part in the call check,
    // with a call coll refuses (no buffer): every other rank then gets
    // COLL_ERR_PEER instead of waiting for this one. Through coll_hier too:
    // there every collective's first call is the world's agreement
    // (agree_call, or agree_dtype's all-gather before it), which this
    // refusal meets; the group stays usable.
    template <class F>
    WorkPtr guarded(F &&body)
    {
        try {
            return body();
        } catch (const Refusal &) {
            submit(OpType::UNKNOWN, {}, {}, c10d::kUnsetTimeout, [this](CollWork &) {
                coll_allreduce(comm(), nullptr, nullptr, 1, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
            });
            throw;
        }
    }

    void set_timeout(unsigned ms)
    {
        cur_timeout_ = ms;
        if (shm_) shm_->timeout_ms = ms;
        if (tcp_) coll_tcp_set_timeout(tcp_.get(), ms);
        if (hosts_) coll_hosts_set_timeout(hosts_.get(), ms);
    }

    // A receive blocks the executor until its message comes; the sends
    // issued right behind it (irecv, then isend: batch_isend_irecv's and
    // every ring's order) are posted first, or two ranks that each receive
    // before sending would wait for each other until the timeout. Only the
    // run of point-to-point operations right behind it: a send never
    // overtakes a collective, whose frames share the links. Sends keep
    // their order among themselves, receives theirs.
    void post_sends_behind()
    {
        std::vector<c10::intrusive_ptr<CollWork>> sends;
        {
            std::lock_guard<std::mutex> lk(mu_);
            for (auto it = queue_.begin(); it != queue_.end();) {
                OpType t = (*it)->retrieveOpType();
                if (t == OpType::SEND) {
                    sends.push_back(*it);
                    it = queue_.erase(it);
                } else if (t == OpType::RECV) {
                    ++it;
                } else {
                    break;
                }
            }
        }
        for (auto &x : sends) run_one(x);
    }

    void run_one(const c10::intrusive_ptr<CollWork> &w)
    {
        if (w->retrieveOpType() == OpType::RECV) post_sends_behind();
        std::exception_ptr e;
        try {
            w->run(*w);
        } catch (...) {
            e = std::current_exception();
        }
        // w->run (and the tensors it holds) goes with w, on a caller's thread
        if (!w->deferred || e) {
            retire(w);
            w->done(e);
        }
    }

public:
    // A caller waiting for `w` runs the queue up to it itself when the
    // worker is idle: a blocking call then costs no thread hand-off (two
    // wake-ups, ~50 us each on a busy 2-core machine, against 1 us for an
    // 8-byte all-reduce). Whoever holds `busy_` owns the communicator.
    void help(CollWork &w)
    {
        std::unique_lock<std::mutex> lk(mu_);
        if (busy_) return;               // the worker has it: wait for it
        busy_ = true;
        while (!w.isCompleted() && !queue_.empty()) {
            auto x = queue_.front();
            queue_.pop_front();
            lk.unlock();
            run_one(x);
            lk.lock();
        }
        lk.unlock();
        for (bool mine = true; mine && !w.isCompleted();) {  // a send in flight
            mine = false;
            for (auto &x : sends_) mine |= x.get() == &w;
            if (mine) finish_send(c10::intrusive_ptr<CollWork>::reclaim_copy(&w), 1);
        }
        if (!sends_.empty()) poll_sends();
        lk.lock();
        busy_ = false;
        if (!queue_.empty() || !sends_.empty()) cv_.notify_all();
        lk.unlock();
        bury();
    }

private:
    // Issue order, one at a time. Sends left in flight are polled between
    // operations and while idle, and finished before the worker ends.
    void loop()
    {
        std::unique_lock<std::mutex> lk(mu_);
        int idle = 0;
        for (;;) {
            if (busy_) {                          // a waiting caller runs them
                cv_.wait(lk);
                continue;
            }
            if (!queue_.empty()) {
                auto w = queue_.front();
                queue_.pop_front();
                busy_ = true;
                lk.unlock();
                run_one(w);
                if (!sends_.empty()) poll_sends();
                idle = 0;
                lk.lock();
                busy_ = false;
                continue;
            }
            if (!sends_.empty()) {
                // poll; yield a while, then nap longer and longer (a new
                // operation wakes us at once)
                bool stopping = stop_;
                busy_ = true;
                lk.unlock();
                if (stopping) finish_send(sends_.front(), 1);
                else if (poll_sends()) idle = 0;
                else if (++idle < 64) sched_yield();
                lk.lock();
                busy_ = false;
                if (idle >= 64 && queue_.empty() && !stop_)
                    cv_.wait_for(lk, std::chrono::microseconds(idle < 256 ? 20 : 500));
                continue;
            }
            if (stop_) return;
            cv_.wait(lk);
        }
    }

    std::chrono::milliseconds timeout_;
    unsigned default_timeout_ = 0;
    unsigned cur_timeout_ = 0;          // the running operation's, ms (0: none)
    std::string port_name_;
    std::unique_ptr<coll_shm> shm_;
    std::unique_ptr<coll_tcp> tcp_;
    std::unique_ptr<coll_hosts> hosts_;   // several hosts: shm inside, TCP between
    coll_port port_{};
    std::unique_ptr<coll_comm> comm_;
    std::vector<unsigned char> scratch_;
    std::unique_ptr<coll_hier> hier_;     // with hosts_ over 2+ hosts
    std::vector<unsigned char> work_;     // coll_hier's staging
    std::vector<coll_record> rec_[4];     // the recorders' rings
    uint64_t op_start_ns_ = 0;            // when the running operation began
    int last_road_ = 0;                   // COLL_HIER_*, 4: flat
    unsigned long long roads_[5] = {};

    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<c10::intrusive_ptr<CollWork>> queue_;
    std::deque<c10::intrusive_ptr<CollWork>> sends_;   // the executor's
    std::vector<c10::intrusive_ptr<CollWork>> done_;   // retire(), under mu_
    bool stop_ = false;
    bool busy_ = false;                 // the worker or a waiting caller runs
    std::thread worker_;
};

bool CollWork::wait(std::chrono::milliseconds timeout)
{
    if (!isCompleted())
        if (auto g = group.lock()) static_cast<ProcessGroupColl *>(g.get())->help(*this);
    return c10d::Work::wait(timeout);
}

static c10::intrusive_ptr<ProcessGroupColl> create(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
                                                   const std::chrono::duration<double> &timeout)
{
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
    return c10::make_intrusive<ProcessGroupColl>(store, rank, size, ms);
}

} // namespace coll_torch

PYBIND11_MODULE(_C, m)   // coll_torch._C: coll_torch/__init__.py loads it
{
    namespace py = pybind11;
    m.doc() = "coll as a torch.distributed backend: import it, then init_process_group(backend=\"coll\")";
    py::object dist = py::module::import("torch.distributed");
    py::class_<coll_torch::ProcessGroupColl, c10d::ProcessGroup, c10::intrusive_ptr<coll_torch::ProcessGroupColl>>(
        m, "ProcessGroupColl")
        .def("port", &coll_torch::ProcessGroupColl::portName,
             "the port this group runs over: \"shm\", \"tcp\" or \"hosts\"")
        .def("hosts", &coll_torch::ProcessGroupColl::hosts, "the hosts this group spans, as its port learned them")
        .def("road", &coll_torch::ProcessGroupColl::lastRoad,
             "the road of the last collective: \"phases\", \"byhost\" or \"world\" through coll_hier, "
             "\"flat\" without it")
        .def("roads", &coll_torch::ProcessGroupColl::roads, "collectives run so far, by road")
        .def("record", &coll_torch::ProcessGroupColl::recordText,
             "the flight recorders' last calls as text (what COLL_TORCH_RECORD gets at a failure)");
    m.def("create_process_group", &coll_torch::create, py::arg("store"), py::arg("rank"), py::arg("size"),
          py::arg("timeout"), py::call_guard<py::gil_scoped_release>(),
          "the backend's creator (what init_process_group calls for backend=\"coll\")");
    py::object backend = dist.attr("Backend");
    if (!py::hasattr(backend, "COLL"))
        backend.attr("register_backend")("coll", m.attr("create_process_group"));
}
