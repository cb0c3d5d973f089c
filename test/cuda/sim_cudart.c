/* sim_cudart.c - the CUDA runtime calls the CUDA port makes, simulated on the CPU

   Linked instead of libcudart into test/cuda/test_port_sim.c, so the port's
   protocol and its event ordering can be tested on any machine. The
   declarations come from the real <cuda_runtime_api.h>, so the signatures
   are the real ones.

   THE MODEL: a stream is a queue of operations (copy, event record, event
   wait, host function) that run *late*: nothing runs when it is enqueued.
   Operations run when someone synchronises a stream, and a few at random
   on every other call, each time taking the head of a random stream among
   those whose head may run (a wait may run once its event has completed
   the generation it was recorded at when the wait was enqueued). Work that
   is not ordered by stream order or events therefore runs in an
   unpredictable order, as on a GPU - usually the wrong one - and a missing
   dependency shows up as a wrong result. A synchronise that finds nothing
   runnable while work is left reports a deadlock (cudaErrorLaunchFailure).

   "Device memory" is host memory from this cudaMalloc; sim_ndev devices,
   all with peer access. Stricter than CUDA in two ways that the port
   promises anyway: work goes only to streams of the current device, and
   an event is recorded only on a stream of its own device. sim_skip_waits = 1 makes cudaStreamWaitEvent do
   nothing: the test's negative control. sim_register(p, n, dev) makes
   host memory the caller owns count as device memory of GPU dev (a test
   that hands out slices of one arena, rank by rank), until
   sim_unregister(p).
*/
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sim_ndev = 2;
int sim_skip_waits = 0;
unsigned long sim_peer_copies = 0;
unsigned long sim_deadlocks = 0;

enum { SIM_COPY, SIM_RECORD, SIM_WAIT, SIM_HOST };

typedef struct sim_op {
    int kind;
    void *dst;
    const void *src;
    size_t n;
    cudaHostFn_t fn;
    void *arg;
    struct CUevent_st *ev;
    unsigned long long gen;
    struct sim_op *next;
} sim_op;

struct CUstream_st { sim_op *head, *tail; int device, slot; };
struct CUevent_st { unsigned long long recorded, completed; int device; };

#define SIM_MAX_STREAMS 256
#define SIM_MAX_ALLOCS 4096
static pthread_mutex_t sim_m = PTHREAD_MUTEX_INITIALIZER;
static struct CUstream_st *sim_streams[SIM_MAX_STREAMS];
static struct { char *p; size_t n; int dev, borrowed; } sim_allocs[SIM_MAX_ALLOCS];
static int sim_nstreams, sim_nallocs;     /* high-water marks: scans stop there */
static int sim_peer_enabled[64][64];
static uint64_t sim_rng = 88172645463325252ull;
static __thread int sim_cur_dev;
static __thread cudaError_t sim_last;

void sim_seed(uint64_t s) { sim_rng = s ? s : 1; }

static uint64_t sim_rand(void)
{
    sim_rng ^= sim_rng << 13; sim_rng ^= sim_rng >> 7; sim_rng ^= sim_rng << 17;
    return sim_rng;
}

static cudaError_t sim_err(cudaError_t e) { if (e != cudaSuccess) sim_last = e; return e; }

static int sim_runnable(const struct CUstream_st *s)
{
    const sim_op *o = s->head;
    if (!o) return 0;
    return o->kind != SIM_WAIT || o->ev->completed >= o->gen;
}

/* Run the head of one random runnable stream; 0 if none may run. */
static int sim_step(void)
{
    struct CUstream_st *cand[SIM_MAX_STREAMS], *s;
    int i, k = 0;
    sim_op *o;
    for (i = 0; i < sim_nstreams; i++)
        if (sim_streams[i] && sim_runnable(sim_streams[i])) cand[k++] = sim_streams[i];
    if (!k) return 0;
    s = cand[sim_rand() % (uint64_t)k];
    o = s->head;
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    switch (o->kind) {
    case SIM_COPY: memmove(o->dst, o->src, o->n); break;
    case SIM_RECORD: if (o->ev->completed < o->gen) o->ev->completed = o->gen; break;
    case SIM_HOST: o->fn(o->arg); break;
    default: break;
    }
    free(o);
    return 1;
}

/* A little progress on every call, so some work runs early too. */
static void sim_jiggle(void)
{
    int k = (int)(sim_rand() % 4);
    while (k-- > 0 && sim_step()) { }
}

static cudaError_t sim_drain(struct CUstream_st *s)
{
    int i, left;
    for (;;) {
        if (s) left = s->head != NULL;
        else for (left = 0, i = 0; i < sim_nstreams; i++) left |= sim_streams[i] && sim_streams[i]->head;
        if (!left) return cudaSuccess;
        if (!sim_step()) { sim_deadlocks++; return cudaErrorLaunchFailure; }
    }
}

static cudaError_t sim_push(cudaStream_t st, sim_op o)
{
    sim_op *p;
    if (!st) return sim_err(cudaErrorInvalidResourceHandle);   /* the port names its streams */
    /* stricter than CUDA needs: the port keeps each rank's GPU current */
    if (st->device != sim_cur_dev) return sim_err(cudaErrorInvalidResourceHandle);
    p = (sim_op *)malloc(sizeof *p);
    *p = o;
    p->next = NULL;
    if (st->tail) st->tail->next = p; else st->head = p;
    st->tail = p;
    sim_jiggle();
    return cudaSuccess;
}

/* ---- the API ------------------------------------------------------------- */

cudaError_t cudaGetDeviceCount(int *n) { *n = sim_ndev; return cudaSuccess; }
cudaError_t cudaGetDevice(int *d) { *d = sim_cur_dev; return cudaSuccess; }
cudaError_t cudaSetDevice(int d)
{
    if (d < 0 || d >= sim_ndev) return sim_err(cudaErrorInvalidDevice);
    sim_cur_dev = d;
    return cudaSuccess;
}
cudaError_t cudaGetLastError(void) { cudaError_t e = sim_last; sim_last = cudaSuccess; return e; }
const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "simulated CUDA error"; }

cudaError_t cudaMalloc(void **p, size_t n)
{
    int i;
    pthread_mutex_lock(&sim_m);
    for (i = 0; i < SIM_MAX_ALLOCS && sim_allocs[i].p; i++) { }
    if (i == SIM_MAX_ALLOCS) { pthread_mutex_unlock(&sim_m); return sim_err(cudaErrorMemoryAllocation); }
    sim_allocs[i].p = (char *)malloc(n ? n : 1);
    sim_allocs[i].n = n;
    sim_allocs[i].dev = sim_cur_dev;
    sim_allocs[i].borrowed = 0;
    if (i >= sim_nallocs) sim_nallocs = i + 1;
    *p = sim_allocs[i].p;
    pthread_mutex_unlock(&sim_m);
    return cudaSuccess;
}
cudaError_t cudaFree(void *p)
{
    int i;
    pthread_mutex_lock(&sim_m);
    for (i = 0; i < sim_nallocs; i++)
        if (sim_allocs[i].p == p && !sim_allocs[i].borrowed) { free(p); sim_allocs[i].p = NULL; break; }
    pthread_mutex_unlock(&sim_m);
    return cudaSuccess;
}

/* Host memory of the caller's, device memory of GPU dev from now on. */
int sim_register(void *p, size_t n, int dev)
{
    int i;
    pthread_mutex_lock(&sim_m);
    for (i = 0; i < SIM_MAX_ALLOCS && sim_allocs[i].p; i++) { }
    if (i == SIM_MAX_ALLOCS || dev < 0 || dev >= sim_ndev) { pthread_mutex_unlock(&sim_m); return -1; }
    sim_allocs[i].p = (char *)p;
    sim_allocs[i].n = n;
    sim_allocs[i].dev = dev;
    sim_allocs[i].borrowed = 1;
    if (i >= sim_nallocs) sim_nallocs = i + 1;
    pthread_mutex_unlock(&sim_m);
    return 0;
}

void sim_unregister(void *p)
{
    int i;
    pthread_mutex_lock(&sim_m);
    for (i = 0; i < sim_nallocs; i++)
        if (sim_allocs[i].p == p && sim_allocs[i].borrowed) { sim_allocs[i].p = NULL; break; }
    pthread_mutex_unlock(&sim_m);
}
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
    int i;
    memset(a, 0, sizeof *a);
    a->type = cudaMemoryTypeUnregistered;
    a->device = -2;
    pthread_mutex_lock(&sim_m);
    for (i = 0; i < sim_nallocs; i++)
        if (sim_allocs[i].p && (const char *)p >= sim_allocs[i].p &&
            (const char *)p < sim_allocs[i].p + sim_allocs[i].n) {
            a->type = cudaMemoryTypeDevice;
            a->device = sim_allocs[i].dev;
            a->devicePointer = (void *)(uintptr_t)p;
            break;
        }
    pthread_mutex_unlock(&sim_m);
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    int i;
    (void)flags;
    pthread_mutex_lock(&sim_m);
    for (i = 0; i < SIM_MAX_STREAMS && sim_streams[i]; i++) { }
    if (i == SIM_MAX_STREAMS) { pthread_mutex_unlock(&sim_m); return sim_err(cudaErrorMemoryAllocation); }
    sim_streams[i] = (struct CUstream_st *)calloc(1, sizeof(struct CUstream_st));
    sim_streams[i]->device = sim_cur_dev;
    sim_streams[i]->slot = i;
    if (i >= sim_nstreams) sim_nstreams = i + 1;
    *s = sim_streams[i];
    pthread_mutex_unlock(&sim_m);
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    cudaError_t e;
    pthread_mutex_lock(&sim_m);
    e = sim_drain(s);
    sim_streams[s->slot] = NULL;
    free(s);
    pthread_mutex_unlock(&sim_m);
    return sim_err(e);
}
cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    cudaError_t e;
    pthread_mutex_lock(&sim_m);
    e = sim_drain(s);
    pthread_mutex_unlock(&sim_m);
    return sim_err(e);
}
cudaError_t cudaDeviceSynchronize(void)
{
    cudaError_t e;
    pthread_mutex_lock(&sim_m);
    e = sim_drain(NULL);
    pthread_mutex_unlock(&sim_m);
    return sim_err(e);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *ev, unsigned int flags)
{
    (void)flags;
    *ev = (cudaEvent_t)calloc(1, sizeof(struct CUevent_st));
    (*ev)->device = sim_cur_dev;
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t ev) { free(ev); return cudaSuccess; }

cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t s)
{
    sim_op o;
    cudaError_t e;
    memset(&o, 0, sizeof o);
    pthread_mutex_lock(&sim_m);
    if (s && s->device != ev->device) e = sim_err(cudaErrorInvalidResourceHandle);
    else {
        o.kind = SIM_RECORD; o.ev = ev; o.gen = ++ev->recorded;
        e = sim_push(s, o);
    }
    pthread_mutex_unlock(&sim_m);
    return e;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t ev, unsigned int flags)
{
    sim_op o;
    cudaError_t e = cudaSuccess;
    (void)flags;
    memset(&o, 0, sizeof o);
    pthread_mutex_lock(&sim_m);
    if (!sim_skip_waits && ev->recorded) {  /* never recorded: nothing to wait for */
        o.kind = SIM_WAIT; o.ev = ev; o.gen = ev->recorded;
        e = sim_push(s, o);
    }
    pthread_mutex_unlock(&sim_m);
    return e;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s)
{
    sim_op o;
    cudaError_t e;
    (void)kind;
    memset(&o, 0, sizeof o);
    o.kind = SIM_COPY; o.dst = dst; o.src = src; o.n = n;
    pthread_mutex_lock(&sim_m);
    e = sim_push(s, o);
    pthread_mutex_unlock(&sim_m);
    return e;
}
cudaError_t cudaMemcpyPeerAsync(void *dst, int dd, const void *src, int sd, size_t n, cudaStream_t s)
{
    pthread_mutex_lock(&sim_m);
    sim_peer_copies++;
    pthread_mutex_unlock(&sim_m);
    if (dd < 0 || dd >= sim_ndev || sd < 0 || sd >= sim_ndev) return sim_err(cudaErrorInvalidDevice);
    return cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s);
}
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *arg)
{
    sim_op o;
    cudaError_t e;
    memset(&o, 0, sizeof o);
    o.kind = SIM_HOST; o.fn = fn; o.arg = arg;
    pthread_mutex_lock(&sim_m);
    e = sim_push(s, o);
    pthread_mutex_unlock(&sim_m);
    return e;
}

cudaError_t cudaDeviceCanAccessPeer(int *can, int a, int b)
{
    if (a < 0 || a >= sim_ndev || b < 0 || b >= sim_ndev) return sim_err(cudaErrorInvalidDevice);
    *can = 1;
    return cudaSuccess;
}
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags)
{
    (void)flags;
    if (peer < 0 || peer >= sim_ndev || peer == sim_cur_dev) return sim_err(cudaErrorInvalidDevice);
    if (sim_peer_enabled[sim_cur_dev][peer]) return sim_err(cudaErrorPeerAccessAlreadyEnabled);
    sim_peer_enabled[sim_cur_dev][peer] = 1;
    return cudaSuccess;
}
