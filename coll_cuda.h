/* coll_cuda.h - v0.1.0 - coll.h's local work (copy, reduce, scale) on CUDA device buffers
                          single header; kernels need nvcc, declarations are plain C

   USAGE
     In exactly one .cu file (compiled by nvcc):
         #define COLL_CUDA_IMPLEMENTATION
         #include "coll_cuda.h"
     Everywhere else (C, C++ or CUDA) include "coll_cuda.h" alone: without
     the implementation it only declares functions and one struct, and needs
     no CUDA header, so a plain C99 file can set up device collectives. The
     implementation refuses to compile without nvcc (#error), rather than
     silently leaving the functions undefined.

         coll_cuda_ctx ctx;                    one per rank, lives as long as the comm
         coll_memops   mem;                    the same
         coll_cuda_ctx_init(&ctx, device, stream);
         mem = coll_cuda_memops(&ctx);
         coll_init(&c, rank, nranks, &port, device_scratch, scratch_bytes);
         coll_set_memops(&c, &mem);
         coll_allreduce(&c, d_src, d_dst, n, COLL_BFLOAT16, COLL_SUM, COLL_ALGO_AUTO);
         cudaStreamSynchronize(stream);        only now is d_dst final

     The port must move device memory and obey the stream rules below;
     ports/coll_cuda_port.h is one that does (ranks as host threads, one
     stream each, any number of ranks per GPU, peer copies between GPUs).

   WHAT RUNS ON THE GPU
     coll_cuda_reduce   out[i] = a[i] op b[i]   every dtype of coll.h, ops
                        sum prod min max avg (avg reduces as sum; the
                        division is coll_cuda_scale, called once at the end
                        by the library), band bor bxor for integer types.
                        The kernels and the dispatch are generated from
                        coll.h's COLL_DTYPE_LIST (see "element types").
     coll_cuda_scale    buf[i] /= divisor       the second half of avg.
     coll_cuda_copy     cudaMemcpyAsync         any direction (cudaMemcpyDefault).
     All three only *enqueue* work on ctx->stream and return; none ever
     synchronises the stream or the device. A negative return means nothing
     was enqueued.

   STREAM ORDERING (the contract with the port)
     coll.h calls port recv, then memops reduce on the received bytes. It
     never waits for the GPU in between, so "recv returned" must mean "the
     data will be in the buffer before any later work on this rank's stream
     runs" - not that it is there now. A conforming port therefore:
       1. orders each copy after the work already enqueued on BOTH ranks'
          streams (the sender's producer kernels: read-after-write; the
          receiver's earlier kernels still reading the buffer about to be
          overwritten: write-after-read), with events, not host waits;
       2. before recv returns, makes the receiver's stream wait for the copy
          (so the reduce kernel enqueued next follows it), and before send
          returns, makes the sender's stream wait for it too (so a later
          kernel that overwrites the source cannot race the copy).
     With every rank's memops on the same stream as its port, each rank's
     stream then carries a correct total order of its own work, and the
     result is final once that stream is synchronised.

   THE KERNELS
     One grid-stride loop with size_t indices (any count, 64-bit sizes). When
     a, b and out sit at the same address modulo 16 the middle of the arrays
     moves as 16-byte packs (ld/st.global.v4): a scalar head up to the first
     16-byte boundary, packs, a scalar tail - so a misaligned but consistent
     slice loses almost nothing. When the three differ modulo 16 no common
     pack boundary exists; every element is then loaded on its own, still
     coalesced (consecutive threads, consecutive addresses). float16 and
     bfloat16 packs add and multiply two lanes at a time (__hadd2,
     __hmul2). Pointers must be aligned to their element size, and out
     must be a or not overlap a and b. The kernel bodies are __host__
     __device__ functions of (thread, thread count), so the same code also
     runs thread by thread on the CPU (test/cuda/test_kernels_host.cu).
     Integer sum and prod wrap around (two's complement), as on the host.
     float16/bfloat16 are correctly rounded per operation; the host's
     "through float" arithmetic gives the same bits (float has enough
     precision that the double rounding is harmless) except for a bfloat16
     product that underflows below float's normal range. min and max use
     the host's rule, b < a ? b : a (b > a ? b : a), NaN and -0 included:
     the packed __hmin2/__hmax2 would differ, so 16-bit min/max compare
     lane by lane.
     avg's division is the host's too: integers truncate towards zero,
     float32 divides in float, float64 in double, the 16-bit types through
     float with one rounding back.

   ERRORS
     COLL_ERR_INVAL   null ctx pointer arguments, a pointer not aligned to
                      its element, a bitwise op on a float type, divisor 0
                      or above INT_MAX.
     COLL_ERR_NOSYS   COLL_USER_TYPE / COLL_USER_OP: a host callback cannot
                      run on device memory.
     CUDA failures    -(COLL_CUDA_ERR_BASE + e) for cudaError_t e, so they
                      never collide with coll.h's codes and the original
                      error is recoverable: COLL_CUDA_ERROR_OF(rc) == e,
                      coll_cuda_result_str(rc) prints cudaGetErrorString(e).
     A launch error is reported by the call that launched; an error during
     execution (a bad pointer, say) shows up at the next CUDA call that
     reports sticky errors, typically the caller's cudaStreamSynchronize.

   CONFIGURATION (define before including the implementation)
     COLL_CUDA_STATIC     all functions static                        (off)
     COLL_CUDA_API        decoration of public functions              (extern)
     COLL_CUDA_THREADS    threads per block                           (256)
     COLL_CUDA_BLOCKS_PER_SM  resident blocks per SM the grid is capped to (8)

   THREAD SAFETY
     No global state. A coll_cuda_ctx belongs to one thread at a time (it
     caches the SM count on first use).

   LICENCE: MIT, as coll.h.
*/
#ifndef COLL_CUDA_H
#define COLL_CUDA_H

#ifndef COLL_H
#include "coll.h"
#endif

#ifndef COLL_CUDA_API
#ifdef COLL_CUDA_STATIC
#define COLL_CUDA_API static
#else
#define COLL_CUDA_API extern
#endif
#endif

/* CUDA failures as coll result codes: -(base + cudaError_t). cudaError_t
   values are below 1000, so this range is disjoint from coll.h's. */
#define COLL_CUDA_ERR_BASE 1000
#define COLL_CUDA_ERR(e)      ((int)(e) == 0 ? 0 : -(COLL_CUDA_ERR_BASE + (int)(e)))
#define COLL_CUDA_IS_ERR(rc)  ((rc) <= -COLL_CUDA_ERR_BASE)
#define COLL_CUDA_ERROR_OF(rc) (COLL_CUDA_IS_ERR(rc) ? -(rc) - COLL_CUDA_ERR_BASE : 0)

#ifdef __cplusplus
extern "C" {
#endif

/* cudaStream_t is `struct CUstream_st *`; naming the struct keeps this part
   free of CUDA headers and is the very same type under nvcc. */
struct CUstream_st;

typedef struct coll_cuda_ctx {
    struct CUstream_st *stream; /* every copy and kernel goes here; NULL is the
                                   legacy default stream (it serialises with
                                   everything: prefer a cudaStreamNonBlocking one) */
    int device;                 /* made current before each call; -1: leave the
                                   caller's current device alone               */
    unsigned max_blocks;        /* grid cap; 0: COLL_CUDA_BLOCKS_PER_SM per SM,
                                   found on first use                           */
} coll_cuda_ctx;

COLL_CUDA_API void coll_cuda_ctx_init(coll_cuda_ctx *ctx, int device,
                                      struct CUstream_st *stream);
/* The memops table for coll_set_memops. coll.h keeps a pointer to it: store
   the returned value somewhere that outlives the communicator. */
COLL_CUDA_API coll_memops coll_cuda_memops(coll_cuda_ctx *ctx);

/* The three operations themselves (ctx NULL: legacy stream, current device). */
COLL_CUDA_API int coll_cuda_reduce(coll_cuda_ctx *ctx, void *out, const void *a,
                                   const void *b, size_t count, coll_dtype dtype,
                                   coll_op op);
COLL_CUDA_API int coll_cuda_scale(coll_cuda_ctx *ctx, void *buf, size_t count,
                                  coll_dtype dtype, size_t divisor);
COLL_CUDA_API int coll_cuda_copy(coll_cuda_ctx *ctx, void *dst, const void *src,
                                 size_t bytes);

/* coll_result_str that also names CUDA errors. */
COLL_CUDA_API const char *coll_cuda_result_str(int rc);

#ifdef __cplusplus
}
#endif
#endif /* COLL_CUDA_H */

/* ========================================================================== */
#ifdef COLL_CUDA_IMPLEMENTATION
#ifndef COLL_CUDA_IMPLEMENTED
#define COLL_CUDA_IMPLEMENTED

#ifndef __CUDACC__
#error "coll_cuda.h: COLL_CUDA_IMPLEMENTATION holds CUDA kernels; compile this file with nvcc (as .cu)"
#endif

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <type_traits>

#ifndef COLL_CUDA_THREADS
#define COLL_CUDA_THREADS 256
#endif
#ifndef COLL_CUDA_BLOCKS_PER_SM
#define COLL_CUDA_BLOCKS_PER_SM 8
#endif

/* ---- element types: one row of coll.h's COLL_DTYPE_LIST each ------------ */

/* Every row of the list becomes a coll_cuda__dt<COLL_x>: the element type
   on the device, the type integer sum and prod wrap through (the list's U,
   the unsigned twin: signed overflow is undefined in C++), the type avg
   divides in (the list's W) and whether the bitwise ops apply (the list's
   class). The dispatch further down is generated from the same list, so a
   row added to coll.h needs no edit here: its kernels and its cases come
   with it.
   The one thing the list cannot say is a device type for elements that
   coll.h keeps as bits and converts through host functions (the list's
   IN/OUT, which device code cannot call): the 16-bit floats. They stay
   special: CUDA has types of its own for them (__half, __nv_bfloat16), with
   intrinsics for the arithmetic and for two lanes at once, below. A new row
   of that kind (storage type != compute type) stops the build at the
   static_assert until it is given a device type next to these two. */
#define COLL_CUDA__IS_INT 1
#define COLL_CUDA__IS_FLOAT 0

template <coll_dtype D, typename T, typename C> struct coll_cuda__dev {
    static_assert(std::is_same<T, C>::value,
                  "coll_cuda.h: this dtype is stored as bits and computed through coll.h's host "
                  "conversions; give it a device element type (coll_cuda__dev)");
    typedef T elem;
};
template <typename T, typename C> struct coll_cuda__dev<COLL_FLOAT16, T, C> { typedef __half elem; };
template <typename T, typename C> struct coll_cuda__dev<COLL_BFLOAT16, T, C> { typedef __nv_bfloat16 elem; };

/* avg divides in the list's W, except that a 64-bit integer W for an
   element of 32 bits or fewer becomes the 32-bit type of the same
   signedness: the same quotient (the divisor is at most INT_MAX, see
   coll_cuda_scale), without the GPU's slow 64-bit division. */
template <typename W, bool NARROW> struct coll_cuda__divtype { typedef W type; };
template <> struct coll_cuda__divtype<int64_t, true> { typedef int32_t type; };
template <> struct coll_cuda__divtype<uint64_t, true> { typedef uint32_t type; };

template <coll_dtype D> struct coll_cuda__dt;
#define COLL_CUDA__DT(E, N, T, C, IN, OUT, U, W, CL)                             \
    template <> struct coll_cuda__dt<COLL_##E> {                                 \
        typedef coll_cuda__dev<COLL_##E, T, C>::elem elem;                       \
        typedef U wrap;                                                          \
        typedef coll_cuda__divtype<W, (sizeof(T) <= 4)>::type div;               \
        enum { is_int = COLL_CUDA__IS_##CL };                                    \
    };
COLL_DTYPE_LIST(COLL_CUDA__DT)
#undef COLL_CUDA__DT

/* What a 16-byte pack holds: the 16-bit floats two to a lane (__half2,
   __nv_bfloat162), so sum and product take the packed intrinsics; every
   other type is its own lane. */
template <typename T> struct coll_cuda__lane { typedef T type; };
template <> struct coll_cuda__lane<__half> { typedef __half2 type; };
template <> struct coll_cuda__lane<__nv_bfloat16> { typedef __nv_bfloat162 type; };

/* 16 bytes of lanes. Copying the struct itself would move __half2 lanes
   one 32-bit word at a time (they have their own copy constructor), so
   loads and stores go through uint4: one ld/st.global.v4 each, and the
   memcpy between registers costs nothing. */
template <typename L> struct __align__(16) coll_cuda__pack {
    L e[16 / sizeof(L)];
};

template <typename P> __host__ __device__ static P coll_cuda__load(const P *p)
{
    uint4 r = *(const uint4 *)p;
    P x;
    memcpy((void *)&x, &r, sizeof x);   /* void *: the lanes are plain bits */
    return x;
}

template <typename P> __host__ __device__ static void coll_cuda__store(P *p, const P &x)
{
    uint4 r;
    memcpy(&r, &x, sizeof r);
    *(uint4 *)p = r;
}

/* ---- operators: one struct each, f() overloaded per lane type ----------- */
/* The template covers the integers (and float/double where the built-in
   operator is already exact IEEE); the 16-bit float types get intrinsics.
   Sum and product are parameterised by the dtype's wrap type U. */

template <typename U> struct coll_cuda__sum {
    template <typename T> __host__ __device__ static T f(T a, T b) {
        return (T)(U)((U)a + (U)b);
    }
    __host__ __device__ static __half f(__half a, __half b) { return __hadd(a, b); }
    __host__ __device__ static __half2 f(__half2 a, __half2 b) { return __hadd2(a, b); }
    __host__ __device__ static __nv_bfloat16 f(__nv_bfloat16 a, __nv_bfloat16 b) { return __hadd(a, b); }
    __host__ __device__ static __nv_bfloat162 f(__nv_bfloat162 a, __nv_bfloat162 b) { return __hadd2(a, b); }
};

template <typename U> struct coll_cuda__prod {
    template <typename T> __host__ __device__ static T f(T a, T b) {
        return (T)(U)((U)a * (U)b);
    }
    __host__ __device__ static __half f(__half a, __half b) { return __hmul(a, b); }
    __host__ __device__ static __half2 f(__half2 a, __half2 b) { return __hmul2(a, b); }
    __host__ __device__ static __nv_bfloat16 f(__nv_bfloat16 a, __nv_bfloat16 b) { return __hmul(a, b); }
    __host__ __device__ static __nv_bfloat162 f(__nv_bfloat162 a, __nv_bfloat162 b) { return __hmul2(a, b); }
};

/* min and max follow the host's rule exactly - min(a, b) = b < a ? b : a,
   max(a, b) = b > a ? b : a - so NaNs and signed zeros come out as on the
   host (a NaN in b loses, a NaN in a wins; min(+0, -0) = +0). Packed halves
   are compared lane by lane: the packed __hmin2 would treat NaN otherwise. */
struct coll_cuda__min {
    template <typename T> __host__ __device__ static T f(T a, T b) { return b < a ? b : a; }
    __host__ __device__ static __half f(__half a, __half b) { return __hlt(b, a) ? b : a; }
    __host__ __device__ static __nv_bfloat16 f(__nv_bfloat16 a, __nv_bfloat16 b) { return __hlt(b, a) ? b : a; }
    __host__ __device__ static __half2 f(__half2 a, __half2 b) {
        return __halves2half2(f(__low2half(a), __low2half(b)), f(__high2half(a), __high2half(b)));
    }
    __host__ __device__ static __nv_bfloat162 f(__nv_bfloat162 a, __nv_bfloat162 b) {
        return __halves2bfloat162(f(__low2bfloat16(a), __low2bfloat16(b)),
                                  f(__high2bfloat16(a), __high2bfloat16(b)));
    }
};

struct coll_cuda__max {
    template <typename T> __host__ __device__ static T f(T a, T b) { return b > a ? b : a; }
    __host__ __device__ static __half f(__half a, __half b) { return __hgt(b, a) ? b : a; }
    __host__ __device__ static __nv_bfloat16 f(__nv_bfloat16 a, __nv_bfloat16 b) { return __hgt(b, a) ? b : a; }
    __host__ __device__ static __half2 f(__half2 a, __half2 b) {
        return __halves2half2(f(__low2half(a), __low2half(b)), f(__high2half(a), __high2half(b)));
    }
    __host__ __device__ static __nv_bfloat162 f(__nv_bfloat162 a, __nv_bfloat162 b) {
        return __halves2bfloat162(f(__low2bfloat16(a), __low2bfloat16(b)),
                                  f(__high2bfloat16(a), __high2bfloat16(b)));
    }
};

/* Bitwise: only ever instantiated for integer types (see the dispatch). */
struct coll_cuda__band { template <typename T> __host__ __device__ static T f(T a, T b) { return (T)(a & b); } };
struct coll_cuda__bor  { template <typename T> __host__ __device__ static T f(T a, T b) { return (T)(a | b); } };
struct coll_cuda__bxor { template <typename T> __host__ __device__ static T f(T a, T b) { return (T)(a ^ b); } };

/* buf[i] / divisor, the way the host does it: in the dtype's division
   type W (coll_cuda__dt::div): integers truncating, float in float, double
   in double; the 16-bit floats through float (their W), rounded back once. */
template <typename W> struct coll_cuda__div {
    template <typename T> __host__ __device__ static T f(T x, long long d) {
        return (T)((W)x / (W)d);
    }
    __host__ __device__ static __half f(__half x, long long d) {
        return __float2half_rn(__half2float(x) / (float)d);
    }
    __host__ __device__ static __half2 f(__half2 x, long long d) {
        float2 v = __half22float2(x);
        return __floats2half2_rn(v.x / (float)d, v.y / (float)d);
    }
    __host__ __device__ static __nv_bfloat16 f(__nv_bfloat16 x, long long d) {
        return __float2bfloat16_rn(__bfloat162float(x) / (float)d);
    }
    __host__ __device__ static __nv_bfloat162 f(__nv_bfloat162 x, long long d) {
        float2 v = __bfloat1622float2(x);
        return __floats2bfloat162_rn(v.x / (float)d, v.y / (float)d);
    }
};

/* ---- kernels ------------------------------------------------------------ */

/* out[i] = a[i] op b[i] for i < count, in three parts:
       [0, head)                      scalar, up to the first 16-byte boundary
       [head, head + npacks*per)      16-byte packs
       [head + npacks*per, count)     scalar
   head and npacks are 0 when a, b and out disagree modulo 16: the last,
   scalar part is then the whole array. Each element is read and written by
   one thread only, so out == a is safe (hence no __restrict__).
   The body is a __host__ __device__ function of (thread, thread count), so
   the very same code can be run thread by thread on the CPU
   (test/cuda/test_kernels_host.cu); the kernel only supplies the indices. */
template <typename T, typename Op>
__host__ __device__ static void coll_cuda__reduce_range(T *out, const T *a, const T *b,
                                                        size_t head, size_t npacks, size_t count,
                                                        size_t tid, size_t stride)
{
    typedef coll_cuda__pack<typename coll_cuda__lane<T>::type> P;
    const size_t per = sizeof(P) / sizeof(T);
    const P *pa = (const P *)(a + head), *pb = (const P *)(b + head);
    P *po = (P *)(out + head);
    size_t i;

    for (i = tid; i < head; i += stride)       /* < 16 bytes, but any grid */
        out[i] = Op::f(a[i], b[i]);
    for (i = tid; i < npacks; i += stride) {
        P x = coll_cuda__load(pa + i), y = coll_cuda__load(pb + i), z;
        for (size_t j = 0; j < sizeof(P) / sizeof(x.e[0]); j++)
            z.e[j] = Op::f(x.e[j], y.e[j]);
        coll_cuda__store(po + i, z);
    }
    for (i = head + npacks * per + tid; i < count; i += stride)
        out[i] = Op::f(a[i], b[i]);
}

/* buf[i] = buf[i] / d, with the same head / packs / tail split. */
template <typename T, typename Div>
__host__ __device__ static void coll_cuda__scale_range(T *buf, size_t head, size_t npacks,
                                                       size_t count, long long d,
                                                       size_t tid, size_t stride)
{
    typedef coll_cuda__pack<typename coll_cuda__lane<T>::type> P;
    const size_t per = sizeof(P) / sizeof(T);
    P *pb = (P *)(buf + head);
    size_t i;

    for (i = tid; i < head; i += stride)
        buf[i] = Div::f(buf[i], d);
    for (i = tid; i < npacks; i += stride) {
        P x = coll_cuda__load(pb + i);
        for (size_t j = 0; j < sizeof(P) / sizeof(x.e[0]); j++)
            x.e[j] = Div::f(x.e[j], d);
        coll_cuda__store(pb + i, x);
    }
    for (i = head + npacks * per + tid; i < count; i += stride)
        buf[i] = Div::f(buf[i], d);
}

template <typename T, typename Op>
__global__ void coll_cuda__reduce_kernel(T *out, const T *a, const T *b,
                                         size_t head, size_t npacks, size_t count)
{
    coll_cuda__reduce_range<T, Op>(out, a, b, head, npacks, count,
                                   (size_t)blockIdx.x * blockDim.x + threadIdx.x,
                                   (size_t)gridDim.x * blockDim.x);
}

template <typename T, typename Div>
__global__ void coll_cuda__scale_kernel(T *buf, size_t head, size_t npacks,
                                        size_t count, long long d)
{
    coll_cuda__scale_range<T, Div>(buf, head, npacks, count, d,
                                   (size_t)blockIdx.x * blockDim.x + threadIdx.x,
                                   (size_t)gridDim.x * blockDim.x);
}

/* ---- host side ---------------------------------------------------------- */

/* Makes ctx's GPU current. A device that does not exist is answered
   without asking cudaSetDevice, so no CUDA error is left behind. */
static int coll_cuda__enter(coll_cuda_ctx *ctx)
{
    int cur, ndev;
    cudaError_t e;
    if (!ctx || ctx->device < 0) return COLL_OK;
    e = cudaGetDevice(&cur);
    if (e != cudaSuccess || cur == ctx->device) return COLL_CUDA_ERR(e);
    e = cudaGetDeviceCount(&ndev);
    if (e == cudaSuccess && ctx->device >= ndev) e = cudaErrorInvalidDevice;
    if (e == cudaSuccess) e = cudaSetDevice(ctx->device);
    return COLL_CUDA_ERR(e);
}

static cudaStream_t coll_cuda__stream(const coll_cuda_ctx *ctx)
{
    return ctx ? (cudaStream_t)ctx->stream : (cudaStream_t)0;
}

/* Blocks for `work` independent items: enough for one item per thread, but
   no more than can be resident at once - beyond that the grid-stride loop
   does the rest with less launch and tail overhead. */
static int coll_cuda__grid(coll_cuda_ctx *ctx, size_t work, unsigned *blocks)
{
    unsigned cap = ctx ? ctx->max_blocks : 0;
    size_t want = (work + COLL_CUDA_THREADS - 1) / COLL_CUDA_THREADS;
    if (cap == 0) {
        int dev, sms;
        cudaError_t e = cudaGetDevice(&dev);
        if (e == cudaSuccess)
            e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        if (e != cudaSuccess) return COLL_CUDA_ERR(e);
        cap = (unsigned)sms * COLL_CUDA_BLOCKS_PER_SM;
        if (ctx) ctx->max_blocks = cap;
    }
    if (want == 0) want = 1;
    *blocks = want < cap ? (unsigned)want : cap;
    return COLL_OK;
}

/* Where the pack part starts and how long it is, or (0, 0) for the scalar
   path: packs only when the pointers share addr mod 16, so that after
   `head` elements all of them are 16-byte aligned at once. b = NULL: one
   array (scale). Pointers are aligned to their element (checked before). */
static void coll_cuda__split(size_t elem, const void *out, const void *a, const void *b,
                             size_t count, size_t *head, size_t *npacks)
{
    uintptr_t uo = (uintptr_t)out, ua = (uintptr_t)a, ub = b ? (uintptr_t)b : ua;
    *head = 0;
    *npacks = 0;
    if (uo % 16 != ua % 16 || ub % 16 != ua % 16) return;
    *head = ((16 - ua % 16) % 16) / elem;
    if (*head > count) *head = count;
    *npacks = (count - *head) / (16 / elem);
}

/* The launches, one (element type, operator) each: what the dispatch below
   calls F::run<T, Op>(...) on. */
struct coll_cuda__launch_reduce {
    template <typename T, typename Op>
    static int run(coll_cuda_ctx *ctx, void *out, const void *a, const void *b, size_t count)
    {
        uintptr_t uo = (uintptr_t)out, ua = (uintptr_t)a, ub = (uintptr_t)b;
        size_t head, npacks, tail, work;
        unsigned blocks;
        int rc;

        if ((uo | ua | ub) % sizeof(T)) return COLL_ERR_INVAL;
        coll_cuda__split(sizeof(T), out, a, b, count, &head, &npacks);
        tail = count - head - npacks * (16 / sizeof(T));
        work = npacks > tail ? npacks : tail;
        if ((rc = coll_cuda__grid(ctx, work > head ? work : head, &blocks)) != COLL_OK) return rc;
        coll_cuda__reduce_kernel<T, Op><<<blocks, COLL_CUDA_THREADS, 0, coll_cuda__stream(ctx)>>>(
            (T *)out, (const T *)a, (const T *)b, head, npacks, count);
        return COLL_CUDA_ERR(cudaGetLastError());
    }
};

struct coll_cuda__launch_scale {
    template <typename T, typename Div>
    static int run(coll_cuda_ctx *ctx, void *buf, size_t count, long long divisor)
    {
        uintptr_t ub = (uintptr_t)buf;
        size_t head, npacks, tail, work;
        unsigned blocks;
        int rc;

        if (ub % sizeof(T)) return COLL_ERR_INVAL;
        coll_cuda__split(sizeof(T), buf, buf, NULL, count, &head, &npacks);
        tail = count - head - npacks * (16 / sizeof(T));
        work = npacks > tail ? npacks : tail;
        if ((rc = coll_cuda__grid(ctx, work > head ? work : head, &blocks)) != COLL_OK) return rc;
        coll_cuda__scale_kernel<T, Div><<<blocks, COLL_CUDA_THREADS, 0, coll_cuda__stream(ctx)>>>(
            (T *)buf, head, npacks, count, divisor);
        return COLL_CUDA_ERR(cudaGetLastError());
    }
};

/* ---- the dispatch: generated from COLL_DTYPE_LIST ------------------------ */
/* F::template run<T, Op>(args...) for the element type T of a dtype and the
   operator struct Op of an op; F::template run<T, Div>(args...) for avg's
   division. coll_cuda_reduce and coll_cuda_scale pass the launches above;
   test/cuda/test_kernels_host.cu passes a thread-by-thread emulation of
   them, so both go through these very switches. COLL_ERR_NOSYS for
   COLL_USER_TYPE and COLL_USER_OP, COLL_ERR_INVAL for an unknown dtype or
   op and for a bitwise op on a float type. */

/* Bitwise ops exist for integers only; for the float types this
   instantiation answers INVAL without ever naming `float & float`. */
template <typename T, typename F, int IS_INT> struct coll_cuda__bitwise {
    template <typename... A> static int run(coll_op, A...) { return COLL_ERR_INVAL; }
};
template <typename T, typename F> struct coll_cuda__bitwise<T, F, 1> {
    template <typename... A> static int run(coll_op op, A... args)
    {
        switch (op) {
        case COLL_BAND: return F::template run<T, coll_cuda__band>(args...);
        case COLL_BOR:  return F::template run<T, coll_cuda__bor>(args...);
        case COLL_BXOR: return F::template run<T, coll_cuda__bxor>(args...);
        default:        return COLL_ERR_INVAL;
        }
    }
};

template <coll_dtype D, typename F, typename... A>
static int coll_cuda__reduce_op(coll_op op, A... args)
{
    typedef coll_cuda__dt<D> X;
    typedef typename X::elem T;
    typedef typename X::wrap U;
    switch (op) {
    case COLL_SUM:
    case COLL_AVG:  return F::template run<T, coll_cuda__sum<U> >(args...);
    case COLL_PROD: return F::template run<T, coll_cuda__prod<U> >(args...);
    case COLL_MIN:  return F::template run<T, coll_cuda__min>(args...);
    case COLL_MAX:  return F::template run<T, coll_cuda__max>(args...);
    case COLL_BAND:
    case COLL_BOR:
    case COLL_BXOR: return coll_cuda__bitwise<T, F, X::is_int>::run(op, args...);
    case COLL_USER_OP: return COLL_ERR_NOSYS;
    default:        return COLL_ERR_INVAL;
    }
}

template <typename F, typename... A>
static int coll_cuda__reduce_dispatch(coll_dtype dtype, coll_op op, A... args)
{
    switch (dtype) {
#define COLL_CUDA__REDUCE_CASE(E, N, T, C, IN, OUT, U, W, CL) \
    case COLL_##E: return coll_cuda__reduce_op<COLL_##E, F>(op, args...);
    COLL_DTYPE_LIST(COLL_CUDA__REDUCE_CASE)
#undef COLL_CUDA__REDUCE_CASE
    case COLL_USER_TYPE: return COLL_ERR_NOSYS;
    default:             return COLL_ERR_INVAL;
    }
}

template <typename F, typename... A>
static int coll_cuda__scale_dispatch(coll_dtype dtype, A... args)
{
    switch (dtype) {
#define COLL_CUDA__SCALE_CASE(E, N, T, C, IN, OUT, U, W, CL)                     \
    case COLL_##E: return F::template run<coll_cuda__dt<COLL_##E>::elem,         \
                                          coll_cuda__div<coll_cuda__dt<COLL_##E>::div> >(args...);
    COLL_DTYPE_LIST(COLL_CUDA__SCALE_CASE)
#undef COLL_CUDA__SCALE_CASE
    case COLL_USER_TYPE: return COLL_ERR_NOSYS;
    default:             return COLL_ERR_INVAL;
    }
}

/* ---- public functions ---------------------------------------------------- */

COLL_CUDA_API void coll_cuda_ctx_init(coll_cuda_ctx *ctx, int device,
                                      struct CUstream_st *stream)
{
    ctx->stream = stream;
    ctx->device = device;
    ctx->max_blocks = 0;
}

COLL_CUDA_API int coll_cuda_reduce(coll_cuda_ctx *ctx, void *out, const void *a,
                                   const void *b, size_t count, coll_dtype dtype,
                                   coll_op op)
{
    int rc;
    if (count == 0) return COLL_OK;
    if (!out || !a || !b) return COLL_ERR_INVAL;
    if ((rc = coll_cuda__enter(ctx)) != COLL_OK) return rc;
    return coll_cuda__reduce_dispatch<coll_cuda__launch_reduce>(dtype, op, ctx, out, a, b, count);
}

COLL_CUDA_API int coll_cuda_scale(coll_cuda_ctx *ctx, void *buf, size_t count,
                                  coll_dtype dtype, size_t divisor)
{
    int rc;
    /* INT_MAX bounds the divisor so every type's arithmetic holds it; a
       collective divides by its rank count, an int. */
    if (divisor == 0 || divisor > (size_t)INT_MAX) return COLL_ERR_INVAL;
    if (dtype == COLL_USER_TYPE) return COLL_ERR_NOSYS;
    if (count == 0 || divisor == 1) return COLL_OK;     /* x / 1 == x, bit for bit */
    if (!buf) return COLL_ERR_INVAL;
    if ((rc = coll_cuda__enter(ctx)) != COLL_OK) return rc;
    return coll_cuda__scale_dispatch<coll_cuda__launch_scale>(dtype, ctx, buf, count,
                                                               (long long)divisor);
}

COLL_CUDA_API int coll_cuda_copy(coll_cuda_ctx *ctx, void *dst, const void *src,
                                 size_t bytes)
{
    int rc;
    if (bytes == 0 || dst == src) return COLL_OK;
    if (!dst || !src) return COLL_ERR_INVAL;
    if ((rc = coll_cuda__enter(ctx)) != COLL_OK) return rc;
    return COLL_CUDA_ERR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
                                         coll_cuda__stream(ctx)));
}

/* The memops entry points: coll.h's signatures, ctx as void *. */
static int coll_cuda__mem_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    return coll_cuda_copy((coll_cuda_ctx *)ctx, dst, src, bytes);
}

static int coll_cuda__mem_reduce(void *ctx, void *out, const void *a, const void *b,
                                 size_t count, coll_dtype dtype, coll_op op)
{
    return coll_cuda_reduce((coll_cuda_ctx *)ctx, out, a, b, count, dtype, op);
}

static int coll_cuda__mem_scale(void *ctx, void *buf, size_t count, coll_dtype dtype,
                                size_t divisor)
{
    return coll_cuda_scale((coll_cuda_ctx *)ctx, buf, count, dtype, divisor);
}

COLL_CUDA_API coll_memops coll_cuda_memops(coll_cuda_ctx *ctx)
{
    coll_memops m;
    m.ctx = ctx;
    m.copy = coll_cuda__mem_copy;
    m.reduce = coll_cuda__mem_reduce;
    m.scale = coll_cuda__mem_scale;
    return m;
}

COLL_CUDA_API const char *coll_cuda_result_str(int rc)
{
    if (COLL_CUDA_IS_ERR(rc)) return cudaGetErrorString((cudaError_t)COLL_CUDA_ERROR_OF(rc));
    return coll_result_str(rc);
}

#endif /* COLL_CUDA_IMPLEMENTED */
#endif /* COLL_CUDA_IMPLEMENTATION */
