/* test_cuda.cu - coll_cuda.h and ports/coll_cuda_port.h on a real GPU

   What is checked, each against an independent plain loop on the host:
     1. every reduce kernel (all dtypes x ops) and the avg scale kernel, for
        aligned, equally misaligned and differently misaligned pointers,
        in place and not, ragged lengths from 0 to past one full grid, with
        guard bytes around the output; the grid-stride loop is forced to
        wrap by a one-block grid on half the cases;
     2. that the kernels and copies only enqueue (they return while a long
        kernel still occupies the stream) and the memops table's error
        answers;
     3. the port's stream ordering: data produced by a pending kernel is
        what arrives (read after write), a pending kernel reading the
        receive buffer still sees the old bytes (write after read on the
        receiver), a kernel overwriting the sent buffer right after send
        does not race the copy (write after read on the sender) - each with
        the sender posting first and with the receiver posting first;
     4. every collective x every algorithm coll.h offers, over the port with
        2, 3, 4 and 8 ranks on one GPU (and across GPUs when there are
        several), every rank's result and guard bytes checked, sources
        checked unchanged; algorithms coll.h does not offer for a call are
        counted as skipped, never as passed.

   RUN
     make test-cuda                       builds and runs this program
     Without a GPU it prints "NO GPU: CUDA tests NOT RUN" and exits 77: a
     skip is never a pass.
     Under compute-sanitizer (it ships with the CUDA toolkit on GPU hosts):
       compute-sanitizer --tool memcheck  build/cuda/test_cuda   out-of-bounds, misaligned
       compute-sanitizer --tool racecheck build/cuda/test_cuda   shared-memory races
       compute-sanitizer --tool synccheck build/cuda/test_cuda   barrier misuse
       compute-sanitizer --tool initcheck build/cuda/test_cuda   reads of unset device memory
     (make test-cuda-sanitize runs memcheck and initcheck.) Set
     COLL_TEST_QUICK=1 to run the collectives on fewer cases, which keeps
     the sanitizer runs short.
*/
#include "coll.h"
#include "coll_cuda.h"
#include "ports/coll_cuda_port.h"

#include <cuda_runtime.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NO_GPU_EXIT 77

static int g_pass, g_fail, g_skip;
static pthread_mutex_t g_print = PTHREAD_MUTEX_INITIALIZER;

static void fail_msg(const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&g_print);
    va_start(ap, fmt);
    fputs("FAIL: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
    pthread_mutex_unlock(&g_print);
}

static void check(int ok, const char *fmt, ...)
{
    va_list ap;
    if (ok) { g_pass++; return; }
    g_fail++;
    pthread_mutex_lock(&g_print);
    va_start(ap, fmt);
    fputs("FAIL: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
    pthread_mutex_unlock(&g_print);
}

/* A CUDA call the test itself makes: failing it is a broken environment. */
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    printf("FATAL: %s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
    printf("cuda: %d passed, %d failed\n", g_pass, g_fail + 1); exit(1); } } while (0)

static void on_alarm(int sig)
{
    static const char m[] = "FAIL: watchdog: the CUDA tests hung (a rank waits forever)\n";
    (void)sig;
    if (write(1, m, sizeof m - 1) < 0) _exit(3);
    _exit(3);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#include "cuda_ref.h"
#include "a2av.h"

/* ====================================================================== */
/* 1. Kernels                                                             */
/* ====================================================================== */

#define KMAX ((size_t)1 << 21)          /* largest kernel test, elements  */
#define KPAD 64                         /* elements of slack and guard    */

static unsigned char *kA, *kB, *kO;      /* device */
static unsigned char *hA, *hB, *hO;      /* host   */

typedef struct { int a, b, o, inplace; } align_t;

/* Host -> device, finished before returning. A cudaMemcpy from pageable
   memory may return before its DMA lands, and it is not ordered before
   work on a non-blocking stream: the next kernel could read stale bytes. */
static void upload(void *dst, const void *src, size_t bytes)
{
    CK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());
}

/* out = a (+) b on the device, compared element by element and with the
   bytes around out (guards) untouched. */
static void kernel_case(coll_cuda_ctx *ctx, coll_dtype t, coll_op op, size_t n, align_t al)
{
    size_t es = dt_size(t), i, span = (n + KPAD) * es, bad = (size_t)-1;
    unsigned char *da = kA + al.a * es, *db = kB + al.b * es;
    unsigned char *dout = al.inplace ? da : kO + al.o * es;
    unsigned char *outbase = al.inplace ? kA : kO;
    size_t ooff = (size_t)(al.inplace ? al.a : al.o);
    const unsigned char *ha = hA + al.a * es, *hb = hB + al.b * es;
    int rc, guards_ok = 1;

    if (!al.inplace) CK(cudaMemsetAsync(kO, 0xA5, span + KPAD * es, (cudaStream_t)ctx->stream));
    rc = coll_cuda_reduce(ctx, dout, da, db, n, t, op);
    CK(cudaStreamSynchronize((cudaStream_t)ctx->stream));
    CK(cudaMemcpy(hO, outbase, span + KPAD * es, cudaMemcpyDeviceToHost));
    for (i = 0; i < n && bad == (size_t)-1; i++) {
        uint64_t want = ref_op(t, op, get_bits(t, ha, i), get_bits(t, hb, i));
        if (get_bits(t, hO + ooff * es, i) != want) bad = i;
    }
    /* guards: everything in the window outside [out, out + n) */
    for (i = 0; i < span + KPAD * es; i++) {
        int inside = i >= ooff * es && i < (ooff + n) * es;
        unsigned char want = al.inplace ? hA[i] : 0xA5;
        if (!inside && hO[i] != want) { guards_ok = 0; break; }
    }
    check(rc == COLL_OK && bad == (size_t)-1 && guards_ok,
          "reduce %s %s n=%zu align(a=%d b=%d out=%d%s) blocks=%u: rc=%d first bad=%ld guards=%d",
          dt_name(t), op_name(op), n, al.a, al.b, al.o, al.inplace ? " in-place" : "",
          ctx->max_blocks, rc, bad == (size_t)-1 ? -1L : (long)bad, guards_ok);
    if (al.inplace)   /* restore a for the next case */
        upload(kA, hA, span + KPAD * es);
}

static void scale_case(coll_cuda_ctx *ctx, coll_dtype t, size_t n, int off, size_t d)
{
    size_t es = dt_size(t), i, span = (n + off + KPAD) * es, bad = (size_t)-1;
    int rc, guards_ok = 1;
    upload(kO, hA, span);
    rc = coll_cuda_scale(ctx, kO + off * es, n, t, d);
    CK(cudaStreamSynchronize((cudaStream_t)ctx->stream));
    CK(cudaMemcpy(hO, kO, span, cudaMemcpyDeviceToHost));
    for (i = 0; i < n && bad == (size_t)-1; i++)
        if (get_bits(t, hO + off * es, i) != ref_div(t, get_bits(t, hA + off * es, i), d)) bad = i;
    for (i = 0; i < span; i++) {
        int inside = i >= off * es && i < (off + n) * es;
        if (!inside && hO[i] != hA[i]) { guards_ok = 0; break; }
    }
    check(rc == COLL_OK && bad == (size_t)-1 && guards_ok,
          "scale %s n=%zu off=%d /%zu: rc=%d first bad=%ld guards=%d", dt_name(t), n, off, d,
          rc, bad == (size_t)-1 ? -1L : (long)bad, guards_ok);
}

static void test_kernels(cudaStream_t st)
{
    static const size_t counts[] = { 0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1000, 4099 };
    static const align_t aligns[] = {
        {0, 0, 0, 0}, {1, 1, 1, 0}, {3, 3, 3, 0}, {7, 7, 7, 0},     /* same mod 16: packs */
        {0, 1, 0, 0}, {1, 0, 2, 0}, {0, 0, 1, 0}, {2, 3, 5, 0},     /* differ: scalar     */
        {0, 0, 0, 1}, {1, 1, 1, 1}, {1, 2, 1, 1} };                 /* out == a           */
    static const align_t big_aligns[] = { {0, 0, 0, 0}, {5, 5, 5, 0}, {1, 2, 3, 0}, {3, 3, 3, 1} };
    coll_cuda_ctx full, tiny;
    int dt, op, k = 0;
    size_t c, a, i;

    coll_cuda_ctx_init(&full, -1, (struct CUstream_st *)st);
    coll_cuda_ctx_init(&tiny, -1, (struct CUstream_st *)st);
    tiny.max_blocks = 1;        /* one block: the grid-stride loop must wrap */

    for (dt = 0; dt < 10; dt++) {
        coll_dtype t = (coll_dtype)dt;
        size_t es = dt_size(t);
        for (i = 0; i < KMAX + KPAD; i++) {
            put_bits(t, hA, i, rand_elem(t));
            put_bits(t, hB, i, rand_elem(t));
        }
        upload(kA, hA, (KMAX + KPAD) * es);
        upload(kB, hB, (KMAX + KPAD) * es);
        for (op = 0; op < dt_nops(t); op++) {
            for (c = 0; c < sizeof counts / sizeof counts[0]; c++)
                for (a = 0; a < sizeof aligns / sizeof aligns[0]; a++)
                    kernel_case(k++ % 2 ? &tiny : &full, t, (coll_op)op, counts[c], aligns[a]);
            for (a = 0; a < sizeof big_aligns / sizeof big_aligns[0]; a++)
                kernel_case(a % 2 ? &tiny : &full, t, (coll_op)op, 65536 * 3 + 5, big_aligns[a]);
        }
        /* past one full grid (packs > resident threads), default grid */
        kernel_case(&full, t, COLL_SUM, KMAX - 3, big_aligns[1]);
        kernel_case(&full, t, COLL_MAX, KMAX - 3, big_aligns[2]);

        for (c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            static const size_t divs[] = { 1, 2, 3, 7, 8 };
            for (a = 0; a < 5; a++)
                scale_case(a % 2 ? &tiny : &full, t, counts[c], (int)(a + c) % 4, divs[a]);
        }
        scale_case(&full, t, 65536 * 3 + 5, 1, 3);
        scale_case(&tiny, t, 65536 * 3 + 5, 0, 8);
    }
}

/* ====================================================================== */
/* 2. Enqueue-only, memops table, errors                                  */
/* ====================================================================== */

__global__ void spin_kernel(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}

__global__ void fill_kernel(float *p, size_t n, float v)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = v;
}

__global__ void copy_kernel(float *d, const float *s, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i < n; i += (size_t)gridDim.x * blockDim.x) d[i] = s[i];
}

static long long cycles_for_ms(double ms)
{
    int khz = 0, dev = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
    return (long long)(ms * (double)khz);
}

static void test_async_and_memops(cudaStream_t st)
{
    coll_cuda_ctx ctx;
    coll_memops m;
    size_t n = 1 << 20, i;
    float *dx, *dy, *hx;
    double t0, dt;
    int rc1, rc2, rc3, bad = 0;
    cudaError_t q;

    coll_cuda_ctx_init(&ctx, -1, (struct CUstream_st *)st);
    CK(cudaMalloc((void **)&dx, n * sizeof(float) + 64));
    CK(cudaMalloc((void **)&dy, n * sizeof(float) + 64));
    hx = (float *)malloc(n * sizeof(float));

    /* The stream is busy for 200 ms; the calls must come back at once. */
    fill_kernel<<<64, 256, 0, st>>>(dx, n, 3.0f);
    fill_kernel<<<64, 256, 0, st>>>(dy, n, 4.0f);
    spin_kernel<<<1, 1, 0, st>>>(cycles_for_ms(200));
    t0 = now_s();
    rc1 = coll_cuda_reduce(&ctx, dx, dx, dy, n, COLL_FLOAT32, COLL_PROD);   /* 12 */
    rc2 = coll_cuda_scale(&ctx, dx, n, COLL_FLOAT32, 3);                     /* 4  */
    rc3 = coll_cuda_copy(&ctx, dy, dx, n * sizeof(float));                   /* 4  */
    dt = now_s() - t0;
    q = cudaStreamQuery(st);
    check(rc1 == 0 && rc2 == 0 && rc3 == 0, "reduce/scale/copy enqueued: rc %d %d %d", rc1, rc2, rc3);
    /* compute-sanitizer runs each launch to its end, so only a plain run
       can tell enqueueing from waiting */
    if (getenv("COLL_TEST_SANITIZER"))
        printf("under compute-sanitizer: the 'only enqueue' timing check is NOT made\n");
    else
        check(dt < 0.1 && q == cudaErrorNotReady, "reduce/scale/copy only enqueue: host time %.1f ms, stream %s",
              dt * 1e3, cudaGetErrorString(q));
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpy(hx, dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (i = 0; i < n; i++) if (hx[i] != 4.0f) { bad = 1; break; }
    check(!bad, "enqueued reduce, scale, copy ran in stream order (got %g, want 4)", (double)hx[i < n ? i : 0]);

    /* The table calls the same functions through coll.h's signatures. */
    m = coll_cuda_memops(&ctx);
    check(m.ctx == &ctx && m.copy && m.reduce && m.scale, "coll_cuda_memops fills the table");
    fill_kernel<<<64, 256, 0, st>>>(dx, n, 1.5f);
    fill_kernel<<<64, 256, 0, st>>>(dy, n, 2.0f);
    rc1 = m.reduce(m.ctx, dx, dx, dy, n, COLL_FLOAT32, COLL_SUM);            /* 3.5 */
    rc2 = m.scale(m.ctx, dx, n, COLL_FLOAT32, 2);                            /* 1.75 */
    rc3 = m.copy(m.ctx, (char *)dy + 4, dx, (n - 1) * sizeof(float));        /* shifted */
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpy(hx, dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    bad = hx[0] != 2.0f;
    for (i = 1; i < n; i++) if (hx[i] != 1.75f) { bad = 1; break; }
    check(rc1 == 0 && rc2 == 0 && rc3 == 0 && !bad, "memops reduce, scale, copy through the table");

    check(m.reduce(m.ctx, dx, dx, dy, 8, COLL_FLOAT32, COLL_BAND) == COLL_ERR_INVAL,
          "bitwise op on float32 -> COLL_ERR_INVAL");
    check(m.reduce(m.ctx, dx, dx, dy, 8, COLL_BFLOAT16, COLL_BXOR) == COLL_ERR_INVAL,
          "bitwise op on bfloat16 -> COLL_ERR_INVAL");
    check(m.reduce(m.ctx, dx, dx, dy, 8, COLL_FLOAT32, COLL_USER_OP) == COLL_ERR_NOSYS,
          "user op on the device -> COLL_ERR_NOSYS");
    check(m.reduce(m.ctx, dx, dx, dy, 8, COLL_USER_TYPE, COLL_SUM) == COLL_ERR_NOSYS,
          "user type on the device -> COLL_ERR_NOSYS");
    check(m.reduce(m.ctx, (char *)dx + 1, dx, dy, 8, COLL_FLOAT32, COLL_SUM) == COLL_ERR_INVAL,
          "pointer not aligned to its element -> COLL_ERR_INVAL");
    check(m.scale(m.ctx, dx, 8, COLL_FLOAT32, 0) == COLL_ERR_INVAL, "divisor 0 -> COLL_ERR_INVAL");
    check(m.reduce(m.ctx, dx, dx, dy, 0, COLL_FLOAT32, COLL_SUM) == COLL_OK &&
          m.copy(m.ctx, dx, dy, 0) == COLL_OK, "zero elements / bytes: nothing to do, OK");

    /* A real CUDA failure, mapped: a device that does not exist. */
    {
        coll_cuda_ctx bad_dev;
        int ndev = 0, rc;
        CK(cudaGetDeviceCount(&ndev));
        coll_cuda_ctx_init(&bad_dev, ndev + 7, (struct CUstream_st *)st);
        rc = coll_cuda_reduce(&bad_dev, dx, dx, dy, 8, COLL_FLOAT32, COLL_SUM);
        check(COLL_CUDA_IS_ERR(rc) && COLL_CUDA_ERROR_OF(rc) == (int)cudaErrorInvalidDevice &&
              strcmp(coll_cuda_result_str(rc), cudaGetErrorString(cudaErrorInvalidDevice)) == 0,
              "bad device -> -(1000 + cudaErrorInvalidDevice): rc=%d (%s)", rc, coll_cuda_result_str(rc));
        (void)cudaGetLastError();
        CK(cudaSetDevice(0));
    }
    check(COLL_CUDA_ERR(cudaSuccess) == 0 && COLL_CUDA_ERR(cudaErrorInvalidValue) == -1001 &&
          !COLL_CUDA_IS_ERR(COLL_ERR_TIMEOUT) && COLL_CUDA_ERROR_OF(COLL_ERR_INVAL) == 0,
          "error code mapping stays clear of coll.h's codes");
    CK(cudaFree(dx));
    CK(cudaFree(dy));
    free(hx);
}

/* ====================================================================== */
/* 3. Port stream ordering                                                */
/* ====================================================================== */

typedef struct order_test {
    coll_cuda_port *w;
    pthread_barrier_t bar;
    int late;                   /* which rank posts second (sleeps first) */
    int which;                  /* 0 RAW at the sender, 1 WAR at the receiver, 2 WAR at the sender */
    float got[4];
    int rc[2];
} order_test;

static int order_rank(int rank, void *arg)
{
    order_test *T = (order_test *)arg;
    cudaStream_t st;
    coll_port p;
    size_t n = 1 << 18;
    float *buf, *aux, h[2];
    int rc;

    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    p = coll_cuda_port_port(T->w, rank, (struct CUstream_st *)st);
    CK(cudaMalloc((void **)&buf, n * sizeof(float)));
    CK(cudaMalloc((void **)&aux, n * sizeof(float)));
    fill_kernel<<<64, 256, 0, st>>>(buf, n, rank == 0 ? 1.0f : -1.0f);
    fill_kernel<<<64, 256, 0, st>>>(aux, n, 0.0f);
    CK(cudaStreamSynchronize(st));
    pthread_barrier_wait(&T->bar);

    if (rank == 0) {                                   /* the sender */
        if (T->which == 0) {       /* producer still pending when we send */
            spin_kernel<<<1, 1, 0, st>>>(cycles_for_ms(100));
            fill_kernel<<<64, 256, 0, st>>>(buf, n, 7.0f);
        }
        if (T->late == 0) usleep(20000);
        rc = p.send(p.ctx, 1, buf, n * sizeof(float));
        if (T->which == 2)         /* overwrite the source right away */
            fill_kernel<<<64, 256, 0, st>>>(buf, n, 9.0f);
    } else {                                           /* the receiver */
        if (T->which == 1) {       /* a pending reader of the receive buffer */
            spin_kernel<<<1, 1, 0, st>>>(cycles_for_ms(100));
            copy_kernel<<<64, 256, 0, st>>>(aux, buf, n);
        }
        if (T->which == 2)         /* delay the receiver's side of the copy */
            spin_kernel<<<1, 1, 0, st>>>(cycles_for_ms(100));
        if (T->late == 1) usleep(20000);
        rc = p.recv(p.ctx, 0, buf, n * sizeof(float));
    }
    T->rc[rank] = rc;
    CK(cudaStreamSynchronize(st));
    pthread_barrier_wait(&T->bar);                     /* both streams idle */
    if (rank == 1) {
        CK(cudaMemcpy(&h[0], buf + n - 1, sizeof(float), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(&h[1], aux + n - 1, sizeof(float), cudaMemcpyDeviceToHost));
        T->got[0] = h[0];
        T->got[1] = h[1];
    }
    CK(cudaFree(buf));
    CK(cudaFree(aux));
    CK(cudaStreamDestroy(st));
    return 0;
}

static void test_port_order(const int *devices)
{
    static const char *what[] = {
        "recv gets the data of a kernel still pending on the sender's stream",
        "a pending kernel reading the receive buffer sees the old bytes",
        "a kernel overwriting the source after send does not race the copy" };
    static const float want[3][2] = { { 7.0f, 0.0f }, { 1.0f, -1.0f }, { 1.0f, 0.0f } };
    static coll_cuda_port w;
    order_test T;
    int which, late;
    for (which = 0; which < 3; which++)
        for (late = 0; late < 2; late++) {
            memset(&T, 0, sizeof T);
            T.w = &w;
            T.which = which;
            T.late = late;
            pthread_barrier_init(&T.bar, NULL, 2);
            CK(cudaSetDevice(devices[0]));
            check(coll_cuda_port_init(&w, 2, devices, 5000) == COLL_OK, "port init");
            coll_cuda_port_run(&w, order_rank, &T);
            coll_cuda_port_close(&w);
            pthread_barrier_destroy(&T.bar);
            check(T.rc[0] == 0 && T.rc[1] == 0 && T.got[0] == want[which][0] &&
                  T.got[1] == want[which][1],
                  "port (GPUs %d->%d, %s posts second): %s: rc %d/%d, got %g/%g want %g/%g",
                  devices[0], devices[1], late ? "receiver" : "sender", what[which],
                  T.rc[0], T.rc[1], (double)T.got[0], (double)T.got[1],
                  (double)want[which][0], (double)want[which][1]);
        }
    CK(cudaSetDevice(devices[0]));
}

/* A size mismatch is reported to both sides, and a deadline fires. */
typedef struct { coll_cuda_port *w; int rc[2]; int mode; } misc_test;
static int misc_rank(int rank, void *arg)
{
    misc_test *T = (misc_test *)arg;
    cudaStream_t st;
    coll_port p;
    float *buf;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CK(cudaMalloc((void **)&buf, 1024));
    p = coll_cuda_port_port(T->w, rank, (struct CUstream_st *)st);
    if (T->mode == 0)
        T->rc[rank] = rank == 0 ? p.send(p.ctx, 1, buf, 512) : p.recv(p.ctx, 0, buf, 256);
    else
        T->rc[rank] = rank == 0 ? p.send(p.ctx, 1, buf, 512) : 0;   /* nobody receives */
    CK(cudaStreamSynchronize(st));
    CK(cudaFree(buf));
    CK(cudaStreamDestroy(st));
    return 0;
}

static void test_port_errors(void)
{
    static coll_cuda_port w;
    misc_test T;
    memset(&T, 0, sizeof T);
    T.w = &w;
    coll_cuda_port_init(&w, 2, NULL, 2000);
    coll_cuda_port_run(&w, misc_rank, &T);
    coll_cuda_port_close(&w);
    check(T.rc[0] == COLL_ERR_MISMATCH && T.rc[1] == COLL_ERR_MISMATCH,
          "size mismatch reported on both sides: %d %d", T.rc[0], T.rc[1]);
    memset(&T, 0, sizeof T);
    T.w = &w;
    T.mode = 1;
    coll_cuda_port_init(&w, 2, NULL, 300);
    coll_cuda_port_run(&w, misc_rank, &T);
    coll_cuda_port_close(&w);
    check(T.rc[0] == COLL_ERR_TIMEOUT, "unanswered send times out: %d", T.rc[0]);
}

/* ====================================================================== */
/* 4. Collectives over the port                                           */
/* ====================================================================== */

#define MAXR 8
#define GUARD 256                       /* bytes of 0xA5 around each buffer */
#define BIGN 70001                      /* elements: many segments          */
#define SCRATCH (64 * 1024)             /* per rank: 32 KiB segments        */

typedef struct tcase {
    coll_kind kind;
    coll_algo algo;
    coll_dtype dt;
    coll_op op;
    size_t count;
    int root, inplace, group, resumable;
} tcase;

typedef struct world {
    int n;
    coll_cuda_port port;
    pthread_barrier_t bar;
    tcase *cases;
    int ncases;
    int (*rc)[MAXR];                    /* [case][rank] result of the call */
    int (*ok)[MAXR];                    /* [case][rank] 1: output verified */
    size_t bufbytes;                    /* payload bytes per buffer         */
} world;

/* Input of rank q, element i, for a case: small integers so that every
   sum, product and order of folding is exact in every type; random bits
   for the bitwise ops. */
static uint64_t gen(const tcase *c, int q, size_t i)
{
    uint64_t h = mix(((uint64_t)q << 40) ^ i ^ ((uint64_t)c->dt << 56) ^ ((uint64_t)c->op << 52));
    int64_t v;
    if (c->op >= COLL_BAND) return h & width_mask(c->dt);
    switch (c->op) {
    case COLL_PROD: {
        static const int64_t f[4] = { 1, 2, -1, -2 };
        v = f[h % 4];
        if (!dt_signed(c->dt) && dt_is_int(c->dt)) v = v < 0 ? 3 : v;
        break;
    }
    case COLL_MIN: case COLL_MAX: v = (int64_t)(h % 201) - 100; break;
    default: v = (int64_t)(h % 17) - 8; break;   /* sum, avg, and the copy-only kinds */
    }
    if (dt_is_int(c->dt)) {
        if (!dt_signed(c->dt) && v < 0) v = -v;
        return (uint64_t)v & width_mask(c->dt);
    }
    return fput(c->dt, (double)v);
}

/* The reduction of element i over all ranks, in rank order; avg divides. */
static uint64_t fold(const tcase *c, int n, size_t i)
{
    uint64_t acc = gen(c, 0, i);
    int q;
    for (q = 1; q < n; q++) acc = ref_op(c->dt, c->op, acc, gen(c, q, i));
    return c->op == COLL_AVG ? ref_div(c->dt, acc, (size_t)n) : acc;
}

static int is_reducing(coll_kind k)
{
    return k == COLL_ALLREDUCE || k == COLL_REDUCE || k == COLL_REDUCE_SCATTER ||
           k == COLL_REDUCE_SCATTERV || k == COLL_SCAN || k == COLL_EXSCAN;
}

static void vcounts(const tcase *c, int n, size_t *cnt, size_t *off)
{
    int q;
    size_t o = 0;
    for (q = 0; q < n; q++) {
        cnt[q] = q == 1 ? 0 : c->count + (size_t)q * 3;   /* ragged, one empty */
        off[q] = o;
        o += cnt[q];
    }
}

/* Per rank: the element counts of src and dst, what goes in, what must
   come out (want_out = 0: dst is workspace here and only guards count;
   src_ws = 1: src is workspace here, as binomial scatter's is off root). */
typedef struct layout {
    size_t in_n, out_n;
    int want_out, src_ws;
} layout;

static layout get_layout(const tcase *c, int n, int r)
{
    layout L;
    size_t cnt[MAXR], off[MAXR], mat[MAXR * MAXR];
    int q;
    L.want_out = 1;
    L.src_ws = 0;
    switch (c->kind) {
    case COLL_ALLREDUCE: L.in_n = L.out_n = c->count; break;
    case COLL_REDUCE: L.in_n = L.out_n = c->count; L.want_out = r == c->root; break;
    case COLL_BROADCAST: L.in_n = 0; L.out_n = c->count; break;
    case COLL_REDUCE_SCATTER: L.in_n = c->count * n; L.out_n = c->count; break;
    case COLL_ALLGATHER: L.in_n = c->count; L.out_n = c->count * n; break;
    case COLL_GATHER: L.in_n = c->count; L.out_n = c->count * n; L.want_out = r == c->root; break;
    case COLL_SCATTER: L.in_n = r == c->root ? c->count * n : 0; L.out_n = c->count;
        if (c->algo == COLL_ALGO_BINOMIAL && r != c->root) { L.in_n = c->count * n; L.src_ws = 1; }
        break;
    case COLL_ALLTOALL: L.in_n = L.out_n = c->count * n; break;
    case COLL_ALLGATHERV: vcounts(c, n, cnt, off); L.in_n = cnt[r]; L.out_n = off[n - 1] + cnt[n - 1]; break;
    case COLL_GATHERV: vcounts(c, n, cnt, off); L.in_n = cnt[r]; L.out_n = off[n - 1] + cnt[n - 1];
        L.want_out = r == c->root; break;
    case COLL_SCATTERV: vcounts(c, n, cnt, off); L.in_n = r == c->root ? off[n - 1] + cnt[n - 1] : 0;
        L.out_n = cnt[r];
        if (c->algo == COLL_ALGO_BINOMIAL && r != c->root) { L.in_n = off[n - 1] + cnt[n - 1]; L.src_ws = 1; }
        break;
    case COLL_ALLTOALLV: a2av_matrix(c->count, n, mat); L.in_n = L.out_n = 0;
        for (q = 0; q < n; q++) { L.in_n += mat[r * n + q]; L.out_n += mat[q * n + r]; }
        break;
    case COLL_SCAN: case COLL_EXSCAN: L.in_n = L.out_n = c->count; break;
    case COLL_REDUCE_SCATTERV: vcounts(c, n, cnt, off); L.in_n = off[n - 1] + cnt[n - 1]; L.out_n = cnt[r]; break;
    default: L.in_n = L.out_n = 0; L.want_out = 0; break;
    }
    return L;
}

/* Input element j of rank r's src. */
static uint64_t input_elem(const tcase *c, int n, int r, size_t j)
{
    (void)n;
    return gen(c, r, j);
}

/* Expected element j of rank r's dst. */
static uint64_t expect_elem(const tcase *c, int n, int r, size_t j)
{
    size_t cnt[MAXR], off[MAXR], q;
    switch (c->kind) {
    case COLL_ALLREDUCE: case COLL_REDUCE: return fold(c, n, j);
    case COLL_BROADCAST: return gen(c, c->root, j);
    case COLL_REDUCE_SCATTER: return fold(c, n, (size_t)r * c->count + j);
    case COLL_ALLGATHER: case COLL_GATHER: return gen(c, (int)(j / c->count), j % c->count);
    case COLL_SCATTER: return gen(c, c->root, (size_t)r * c->count + j);
    case COLL_ALLTOALL: return gen(c, (int)(j / c->count), (size_t)r * c->count + j % c->count);
    case COLL_SCAN: return fold(c, r + 1, j);                 /* ranks 0..r   */
    case COLL_EXSCAN: return fold(c, r ? r : 1, j);           /* ranks 0..r-1 */
    case COLL_SCATTERV: vcounts(c, n, cnt, off); return gen(c, c->root, off[r] + j);
    case COLL_ALLGATHERV: case COLL_GATHERV:
        vcounts(c, n, cnt, off);
        for (q = (size_t)n - 1; off[q] > j || cnt[q] == 0; q--) { }
        return gen(c, (int)q, j - off[q]);
    case COLL_REDUCE_SCATTERV: vcounts(c, n, cnt, off); return fold(c, n, off[r] + j);
    case COLL_ALLTOALLV: {
        size_t m[MAXR * MAXR], at;
        int from;
        a2av_matrix(c->count, n, m);
        at = a2av_source(m, n, r, j, &from);
        return gen(c, from, at);
    }
    default: return 0;
    }
}

static void fill_pattern(unsigned char *h, size_t bytes) { memset(h, 0xA5, bytes); }

static int guards_ok(const unsigned char *h, size_t payload)
{
    size_t i;
    for (i = 0; i < GUARD; i++)
        if (h[i] != 0xA5 || h[GUARD + payload + i] != 0xA5) return 0;
    return 1;
}

static int coll_rank(int rank, void *arg)
{
    world *W = (world *)arg;
    int n = W->n, ci;
    cudaStream_t st;
    coll_cuda_ctx cctx;
    coll_memops mem;
    coll_port port;
    coll_comm comm;
    unsigned char *dsrc, *ddst, *dscratch, *hsrc, *hdst;
    size_t alloc = W->bufbytes + 2 * GUARD;

    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CK(cudaMalloc((void **)&dsrc, alloc));
    CK(cudaMalloc((void **)&ddst, alloc));
    CK(cudaMalloc((void **)&dscratch, SCRATCH));
    hsrc = (unsigned char *)malloc(alloc);
    hdst = (unsigned char *)malloc(alloc);
    coll_cuda_ctx_init(&cctx, -1, (struct CUstream_st *)st);
    mem = coll_cuda_memops(&cctx);
    port = coll_cuda_port_port(&W->port, rank, (struct CUstream_st *)st);
    if (coll_init(&comm, rank, n, &port, dscratch, SCRATCH) != COLL_OK ||
        coll_set_memops(&comm, &mem) != COLL_OK) {
        fail_msg("coll_init/coll_set_memops refused rank %d", rank);
        return 1;
    }

    for (ci = 0; ci < W->ncases; ci++) {
        const tcase *c = &W->cases[ci];
        layout L = get_layout(c, n, rank);
        size_t es = dt_size(c->dt), j, bad = (size_t)-1;
        size_t cnt[MAXR], off[MAXR], mat[MAXR * MAXR];
        coll_args a;
        coll_xfer x;
        unsigned char *in_dev, *out_dev;          /* where the call points   */
        unsigned char *in_host_payload;
        int rc, good = 1, pre;

        memset(&a, 0, sizeof a);
        a.kind = c->kind; a.algo = c->algo; a.dtype = c->dt; a.op = c->op;
        a.count = c->count; a.root = c->root; a.group = c->group;
        if (c->kind == COLL_ALLGATHERV || c->kind == COLL_REDUCE_SCATTERV ||
            c->kind == COLL_GATHERV || c->kind == COLL_SCATTERV) {
            vcounts(c, n, cnt, off);
            a.counts = cnt;
            a.count = 0;
        }
        if (c->kind == COLL_ALLTOALLV) {
            a2av_matrix(c->count, n, mat);
            a.counts = mat;
            a.count = 0;
        }
        pre = coll_describe(&comm, &a, 0, &x);
        pthread_barrier_wait(&W->bar);
        if (pre == COLL_ERR_NOSYS) {              /* not offered: the call must agree */
            a.src = dsrc + GUARD; a.dst = ddst + GUARD;
            if (c->kind == COLL_BROADCAST) a.src = a.dst;
            W->rc[ci][rank] = coll_run(&comm, &a);
            W->ok[ci][rank] = W->rc[ci][rank] == COLL_ERR_NOSYS;
            CK(cudaStreamSynchronize(st));
            pthread_barrier_wait(&W->bar);
            continue;
        }

        /* Host images: guards everywhere, inputs in place. In-place forms
           put the input inside dst, where coll.h expects it. */
        fill_pattern(hsrc, L.in_n * es + 2 * GUARD);
        fill_pattern(hdst, L.out_n * es + 2 * GUARD);
        in_dev = dsrc + GUARD;
        out_dev = ddst + GUARD;
        in_host_payload = hsrc + GUARD;
        if (c->inplace) {
            switch (c->kind) {
            case COLL_ALLREDUCE: case COLL_REDUCE:
                in_dev = out_dev; in_host_payload = hdst + GUARD; break;
            case COLL_REDUCE_SCATTER:     /* dst = src + r*count, src is the big one */
                fill_pattern(hdst, L.in_n * es + 2 * GUARD);
                in_dev = ddst + GUARD; in_host_payload = hdst + GUARD;
                out_dev = in_dev + (size_t)rank * c->count * es; break;
            case COLL_ALLGATHER:          /* src = dst + r*count */
                in_dev = out_dev + (size_t)rank * c->count * es;
                in_host_payload = hdst + GUARD + (size_t)rank * c->count * es; break;
            default: break;
            }
        }
        if (c->kind == COLL_BROADCAST && rank == c->root) {
            for (j = 0; j < c->count; j++) put_bits(c->dt, hdst + GUARD, j, gen(c, rank, j));
        }
        for (j = 0; j < L.in_n; j++) put_bits(c->dt, in_host_payload, j, input_elem(c, n, rank, j));
        CK(cudaMemcpyAsync(dsrc, hsrc, L.in_n * es + 2 * GUARD, cudaMemcpyHostToDevice, st));
        CK(cudaMemcpyAsync(ddst, hdst, (c->inplace && c->kind == COLL_REDUCE_SCATTER ? L.in_n : L.out_n) * es + 2 * GUARD,
                           cudaMemcpyHostToDevice, st));
        CK(cudaStreamSynchronize(st));
        pthread_barrier_wait(&W->bar);

        a.src = in_dev;
        a.dst = out_dev;
        if (c->kind == COLL_BROADCAST) a.src = a.dst;
        if (c->resumable) {
            coll_request q;
            rc = coll_start(&q, &comm, &a);
            if (rc == COLL_OK) do { rc = coll_progress(&q); if (rc == COLL_AGAIN) sched_yield(); } while (rc == COLL_AGAIN);
        } else {
            rc = coll_run(&comm, &a);
        }
        CK(cudaStreamSynchronize(st));
        W->rc[ci][rank] = rc;

        /* Read back: the whole dst window, and src when it is separate. */
        {
            size_t dst_payload = (c->inplace && c->kind == COLL_REDUCE_SCATTER ? L.in_n : L.out_n) * es;
            unsigned char *got = (unsigned char *)malloc(dst_payload + 2 * GUARD);
            unsigned char *out_host;
            CK(cudaMemcpy(got, ddst, dst_payload + 2 * GUARD, cudaMemcpyDeviceToHost));
            if (!guards_ok(got, dst_payload)) { good = 0; fail_msg("rank %d: guard bytes around dst overwritten", rank); }
            out_host = got + GUARD + (size_t)(out_dev - (ddst + GUARD));
            if (rc == COLL_OK && L.want_out)
                for (j = 0; j < L.out_n && bad == (size_t)-1; j++)
                    if (get_bits(c->dt, out_host, j) != expect_elem(c, n, rank, j)) bad = j;
            if (bad != (size_t)-1) {
                good = 0;
                fail_msg("rank %d: dst[%zu] = %#llx, want %#llx", rank, bad,
                         (unsigned long long)get_bits(c->dt, out_host, bad),
                         (unsigned long long)expect_elem(c, n, rank, bad));
            }
            free(got);
            if (!c->inplace) {       /* src is const: it must come back unchanged */
                got = (unsigned char *)malloc(L.in_n * es + 2 * GUARD);
                CK(cudaMemcpy(got, dsrc, L.in_n * es + 2 * GUARD, cudaMemcpyDeviceToHost));
                if (L.src_ws ? !guards_ok(got, L.in_n * es)          /* workspace: guards only */
                             : memcmp(got, hsrc, L.in_n * es + 2 * GUARD) != 0) {
                    good = 0;
                    fail_msg("rank %d: src (or its guards) modified", rank);
                }
                free(got);
            }
        }
        W->ok[ci][rank] = good && rc == COLL_OK;
        pthread_barrier_wait(&W->bar);
    }
    CK(cudaFree(dsrc));
    CK(cudaFree(ddst));
    CK(cudaFree(dscratch));
    CK(cudaStreamDestroy(st));
    free(hsrc);
    free(hdst);
    return 0;
}

static int add_case(tcase *v, int k, coll_kind kind, coll_algo algo, coll_dtype dt, coll_op op,
                    size_t count, int root, int inplace, int group, int resumable)
{
    tcase c;
    c.kind = kind; c.algo = algo; c.dt = dt; c.op = op; c.count = count;
    c.root = root; c.inplace = inplace; c.group = group; c.resumable = resumable;
    if (v) v[k] = c;
    return k + 1;
}

static int supports_inplace(coll_kind k)
{
    return k == COLL_ALLREDUCE || k == COLL_REDUCE || k == COLL_REDUCE_SCATTER || k == COLL_ALLGATHER;
}

/* The case list for n ranks (v = NULL: just count). */
static int make_cases(tcase *v, int n, int quick)
{
    static const size_t counts[] = { 1, 37, BIGN };
    int k = 0, kind, algo, dt, op, g;
    size_t ci;
    for (kind = 0; kind < COLL_KIND_COUNT; kind++)
        for (algo = 0; algo < COLL_ALGO_COUNT; algo++)
            for (ci = 0; ci < (quick ? 2u : 3u); ci++) {
                int ip, root = ci == 0 ? 0 : n - 1;
                for (ip = 0; ip <= supports_inplace((coll_kind)kind); ip++)
                    k = add_case(v, k, (coll_kind)kind, (coll_algo)algo, COLL_FLOAT32, COLL_SUM,
                                 counts[ci], root, ip, 0, 0);
            }
    /* every dtype x op through the reducing collectives */
    for (kind = 0; kind < COLL_KIND_COUNT; kind++) {
        if (!is_reducing((coll_kind)kind)) continue;
        for (algo = 0; algo < COLL_ALGO_COUNT; algo++)
            for (dt = 0; dt < 10; dt++)
                for (op = 0; op < dt_nops((coll_dtype)dt); op++) {
                    if (kind != COLL_ALLREDUCE && op != COLL_SUM && op != COLL_AVG && op != COLL_MAX) continue;
                    k = add_case(v, k, (coll_kind)kind, (coll_algo)algo, (coll_dtype)dt, (coll_op)op,
                                 37, n / 2, 0, 0, 0);
                    if (kind == COLL_ALLREDUCE && !quick)
                        k = add_case(v, k, (coll_kind)kind, (coll_algo)algo, (coll_dtype)dt, (coll_op)op,
                                     5003, 0, dt % 2, 0, 0);
                }
    }
    /* element sizes through the copying collectives */
    for (kind = 0; kind < COLL_KIND_COUNT; kind++) {
        if (is_reducing((coll_kind)kind) || kind == COLL_BARRIER) continue;
        for (algo = 0; algo < COLL_ALGO_COUNT; algo++) {
            k = add_case(v, k, (coll_kind)kind, (coll_algo)algo, COLL_INT8, COLL_SUM, 37, n - 1, 0, 0, 0);
            k = add_case(v, k, (coll_kind)kind, (coll_algo)algo, COLL_FLOAT64, COLL_SUM, quick ? 37 : 9001, 0, 0, 0, 0);
        }
    }
    /* hierarchical all-reduce over groups of 2 and 4 (and every rank) */
    for (g = 2; g <= n; g *= 2)
        if (n % g == 0) {
            k = add_case(v, k, COLL_ALLREDUCE, COLL_ALGO_HIERARCHICAL, COLL_FLOAT32, COLL_SUM, BIGN, 0, 0, g, 0);
            k = add_case(v, k, COLL_ALLREDUCE, COLL_ALGO_HIERARCHICAL, COLL_BFLOAT16, COLL_AVG, 37, 0, 1, g, 0);
        }
    /* the non-blocking path of the executor: start + polling progress */
    for (algo = 0; algo < COLL_ALGO_COUNT; algo++) {
        k = add_case(v, k, COLL_ALLREDUCE, (coll_algo)algo, COLL_FLOAT32, COLL_SUM, BIGN, 0, 0, 0, 1);
        k = add_case(v, k, COLL_REDUCE_SCATTER, (coll_algo)algo, COLL_FLOAT16, COLL_AVG, 5003, 0, 0, 0, 1);
    }
    return k;
}

static void run_world(int n, const int *devices, const char *label, int quick)
{
    world *W = (world *)calloc(1, sizeof *W);
    int ci, r, passed = 0, failed = 0, skipped = 0, rc;
    double t0 = now_s();

    W->n = n;
    W->ncases = make_cases(NULL, n, quick);
    W->cases = (tcase *)malloc(sizeof(tcase) * (size_t)W->ncases);
    make_cases(W->cases, n, quick);
    W->rc = (int (*)[MAXR])calloc((size_t)W->ncases, sizeof *W->rc);
    W->ok = (int (*)[MAXR])calloc((size_t)W->ncases, sizeof *W->ok);
    W->bufbytes = (size_t)BIGN * (size_t)n * 8 + 64 * 8;
    pthread_barrier_init(&W->bar, NULL, (unsigned)n);
    rc = coll_cuda_port_init(&W->port, n, devices, 10000);
    check(rc == COLL_OK, "%s: port init: %s", label, coll_cuda_result_str(rc));
    if (rc == COLL_OK) {
        rc = coll_cuda_port_run(&W->port, coll_rank, W);
        check(rc == 0, "%s: rank threads ran to the end: %d", label, rc);
        coll_cuda_port_close(&W->port);
    }
    for (ci = 0; ci < W->ncases; ci++) {
        const tcase *c = &W->cases[ci];
        int all_nosys = 1, all_ok = 1;
        for (r = 0; r < n; r++) {
            if (W->rc[ci][r] != COLL_ERR_NOSYS) all_nosys = 0;
            if (!W->ok[ci][r]) all_ok = 0;
        }
        if (all_nosys && all_ok) { skipped++; continue; }
        if (all_ok) { passed++; g_pass++; continue; }
        failed++;
        g_fail++;
        pthread_mutex_lock(&g_print);
        printf("FAIL: %s: %s/%s %s %s count=%zu root=%d%s%s group=%d: rc per rank",
               label, coll_kind_name(c->kind), coll_algo_name(c->algo), dt_name(c->dt),
               op_name(c->op), c->count, c->root, c->inplace ? " in-place" : "",
               c->resumable ? " resumable" : "", c->group);
        for (r = 0; r < n; r++) printf(" %d%s", W->rc[ci][r], W->ok[ci][r] ? "" : "!");
        printf("\n");
        pthread_mutex_unlock(&g_print);
    }
    g_skip += skipped;
    printf("%s: %d cases passed, %d failed, %d skipped (algorithm not offered by coll.h) in %.1f s\n",
           label, passed, failed, skipped, now_s() - t0);
    fflush(stdout);
    pthread_barrier_destroy(&W->bar);
    free(W->cases); free(W->rc); free(W->ok); free(W);
}

/* ====================================================================== */

int main(void)
{
    int ndev = 0, i, quick = getenv("COLL_TEST_QUICK") != NULL;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    cudaStream_t st;
    static const int nranks[] = { 2, 3, 4, 8 };

    if (e != cudaSuccess || ndev == 0) {
        printf("\n"
               "############################################################\n"
               "##  NO GPU: CUDA tests NOT RUN                            ##\n"
               "##  nothing was checked; this is not a pass               ##\n"
               "############################################################\n"
               "cudaGetDeviceCount: %s\n\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        fprintf(stderr, "NO GPU: CUDA tests NOT RUN\n");
        return NO_GPU_EXIT;
    }
    signal(SIGALRM, on_alarm);
    alarm(600);
    {
        cudaDeviceProp p;
        CK(cudaGetDeviceProperties(&p, 0));
        printf("GPU 0: %s, sm_%d%d, %d SMs; %d GPU(s) visible\n", p.name, p.major, p.minor,
               p.multiProcessorCount, ndev);
    }
    CK(cudaSetDevice(0));
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

    CK(cudaMalloc((void **)&kA, (KMAX + 2 * KPAD) * 8));
    CK(cudaMalloc((void **)&kB, (KMAX + 2 * KPAD) * 8));
    CK(cudaMalloc((void **)&kO, (KMAX + 2 * KPAD) * 8));
    hA = (unsigned char *)malloc((KMAX + 2 * KPAD) * 8);
    hB = (unsigned char *)malloc((KMAX + 2 * KPAD) * 8);
    hO = (unsigned char *)malloc((KMAX + 2 * KPAD) * 8);
    {
        int p0 = g_pass, f0 = g_fail;
        double t0 = now_s();
        test_kernels(st);
        printf("kernels: %d passed, %d failed (%.1f s)\n", g_pass - p0, g_fail - f0, now_s() - t0);
    }
    CK(cudaFree(kA)); CK(cudaFree(kB)); CK(cudaFree(kO));
    free(hA); free(hB); free(hO);

    test_async_and_memops(st);
    CK(cudaStreamDestroy(st));

    {
        int same[2] = { 0, 0 };
        test_port_order(same);
        if (ndev >= 2) {
            int two[2] = { 0, 1 };
            test_port_order(two);
        }
        test_port_errors();
    }

    for (i = 0; i < 4; i++) {
        int dev[MAXR] = { 0 };
        char label[64];
        snprintf(label, sizeof label, "%d ranks on GPU 0", nranks[i]);
        run_world(nranks[i], dev, label, quick);
    }
    if (ndev >= 2) {
        for (i = 2; i < 4; i++) {
            int dev[MAXR], r, n = nranks[i];
            char label[64];
            for (r = 0; r < n; r++) dev[r] = r * (ndev < n ? ndev : n) / n;   /* blocks of ranks per GPU */
            snprintf(label, sizeof label, "%d ranks on %d GPUs", n, ndev < n ? ndev : n);
            run_world(n, dev, label, quick);
        }
    } else {
        printf("only one GPU: the multi-GPU (peer copy) worlds were NOT run\n");
    }

    printf("skipped %d collective cases whose algorithm coll.h does not offer (not counted)\n", g_skip);
    printf("cuda: %d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
