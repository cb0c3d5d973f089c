/* fuzz_coll.c - libFuzzer target over the public API and over the bytes a
   port delivers.

   The input is read as a little script: a communicator (rank, size,
   scratch, check flags, blocking or non-blocking port), then up to four
   calls with fuzzed kind, algorithm, dtype, op, root, group, counts and
   buffer layouts (in place or not, NULL where a rank may pass NULL), each
   also described step by step. Every byte the port "receives" comes from
   the rest of the input: check frames, CRCs and payloads are all fuzzed,
   so the executor meets whatever a hostile peer could send. The port never
   blocks: when the input runs out it fails, as a dead link would.

   Buffers are sized for what the arguments say, so any access outside
   them is the library's fault (ASan reports it).

       clang -g -O1 -fsanitize=fuzzer,address,undefined test/fuzz_coll.c
       ./a.out -max_total_time=60 corpus/                                  */
#define COLL_AGAIN_LIMIT 64ul
#define COLL_IMPLEMENTATION
#include "../coll.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct cursor { const uint8_t *p; size_t n; } cursor;

static unsigned take(cursor *c)
{
    if (!c->n) return 0;
    c->n--;
    return *c->p++;
}

/* The port: sends vanish (or fail on request), receives read the input. */
typedef struct fuzz_port { cursor *in; int pending_fail; } fuzz_port;

static int f_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    fuzz_port *f = (fuzz_port *)ctx;
    (void)peer; (void)buf; (void)bytes;
    if (f->in->n && (f->in->p[0] == 0xEE)) { take(f->in); return COLL_ERR_IO; }
    return COLL_OK;
}

static int f_recv(void *ctx, int peer, void *buf, size_t bytes)
{
    fuzz_port *f = (fuzz_port *)ctx;
    (void)peer;
    if (f->in->n < bytes) { f->in->n = 0; return COLL_ERR_IO; }
    memcpy(buf, f->in->p, bytes);
    f->in->p += bytes; f->in->n -= bytes;
    return COLL_OK;
}

/* non-blocking: complete at once, or say "later" when the input says so */
static int f_isend(void *ctx, int peer, const void *buf, size_t bytes, int *h)
{
    *h = 0;
    return f_send(ctx, peer, buf, bytes);
}
static int f_irecv(void *ctx, int peer, void *buf, size_t bytes, int *h)
{
    fuzz_port *f = (fuzz_port *)ctx;
    *h = 1;
    if (f->in->n && f->in->p[0] == 0xAA) { take(f->in); return COLL_AGAIN; }
    return f_recv(ctx, peer, buf, bytes);
}
static int f_wait(void *ctx, int h, int block)
{
    fuzz_port *f = (fuzz_port *)ctx;
    (void)h; (void)block;
    if (f->in->n && f->in->p[0] == 0xAB) { take(f->in); return COLL_AGAIN; }
    if (f->in->n && f->in->p[0] == 0xAC) { take(f->in); return 3; }   /* nonsense */
    return COLL_OK;
}

static void user_fn(void *out, const void *a, const void *b, size_t n, void *u)
{
    unsigned char *o = (unsigned char *)out;
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    size_t i;
    (void)u;
    for (i = 0; i < n; i++) o[i] = (unsigned char)(x[i] ^ y[i]);   /* n bytes: every element is at least one */
}

static double scratch[1024];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cursor in = { data, size };
    fuzz_port fp = { &in, 0 };
    coll_port port;
    coll_comm c;
    coll_user_op uop;
    static const size_t scratch_sizes[] = { 0, 16, 40, 64, 128, 256, 4096, 8192 };
    int p = 1 + (int)(take(&in) % 9), rank = (int)(take(&in) % (unsigned)p), call;
    unsigned cfg = take(&in);
    memset(&port, 0, sizeof port);
    port.ctx = &fp; port.send = f_send; port.recv = f_recv;
    if (cfg & 8) { port.isend = f_isend; port.irecv = f_irecv; port.wait = f_wait; }
    if (coll_init(&c, rank, p, &port, scratch, scratch_sizes[cfg % 8]) != COLL_OK) return 0;
    coll_set_checks(&c, (cfg >> 4) & 3);
    uop.fn = user_fn; uop.elem_size = 3; uop.commutative = (cfg >> 6) & 1; uop.user = NULL;
    if (cfg & 128) coll_set_user_op(&c, &uop);
    if (size & 1) coll_set_cores(&c, 1 + (int)(size / 2 % 3));   /* AUTO's crowded walk (by the input's
                                                                   length: the bytes read are as before) */
    for (call = 0; call < 4 && in.n; call++) {
        coll_args a;
        coll_xfer x;
        size_t counts[81], total = 0, es, big, i;     /* p x p for alltoallv */
        unsigned char *src = NULL, *dst = NULL;
        unsigned lay;
        int s;
        memset(&a, 0, sizeof a);
        a.kind = (coll_kind)(take(&in) % (COLL_KIND_COUNT + 1));
        a.algo = (coll_algo)(take(&in) % (COLL_ALGO_COUNT + 1));
        a.dtype = (coll_dtype)(take(&in) % (COLL_DTYPE_COUNT + 1));
        a.op = (coll_op)(take(&in) % (COLL_OP_COUNT + 1));
        a.root = (int)(signed char)take(&in) % 12;
        a.group = (int)(take(&in) % 6);
        a.count = take(&in) % 41;
        for (i = 0; i < (size_t)(a.kind == COLL_ALLTOALLV ? p * p : p); i++) { counts[i] = take(&in) % 23; total += counts[i]; }
        a.counts = (take(&in) & 7) ? counts : NULL;
        lay = take(&in);
        es = a.dtype == COLL_USER_TYPE ? 3 : (coll_dtype_size(a.dtype) ? coll_dtype_size(a.dtype) : 8);
        /* room for whatever the call may read or write: p blocks of count
           (also when the buffer starts at my block of the other one), or
           all the v counts */
        big = (2 * a.count * (size_t)p + total + 1) * es;
        if (!(lay & 1)) src = (unsigned char *)calloc(1, big);
        if (!(lay & 2)) dst = (unsigned char *)calloc(1, big);
        a.src = src; a.dst = dst;
        if ((lay & 12) == 4 && dst) a.src = dst;                              /* same buffer */
        if ((lay & 12) == 8 && dst) a.src = dst + (size_t)rank * a.count * es; /* my block of dst */
        if ((lay & 12) == 12 && src) a.dst = src + (size_t)rank * a.count * es;
        if (lay & 16) {
            if (lay & 32) a.count = (size_t)-1 / (1 + take(&in));             /* huge: must be refused */
            a.src = NULL; a.dst = NULL;
        }
        (void)coll_scratch_bytes(&c, &a);
        (void)coll_choose(&c, &a);
        for (s = 0; s < 200 && coll_describe(&c, &a, s, &x) == 1; s++) {}
        (void)coll_describe(&c, &a, (int)(take(&in) << 20), &x);
        if (!(lay & 16)) {
            if (lay & 64) {
                coll_request q;
                int rc = coll_start(&q, &c, &a), k;
                for (k = 0; rc == COLL_AGAIN || (rc == COLL_OK && k == 0); k++) {
                    rc = coll_progress(&q);
                    if (k > 10000) break;
                }
            } else {
                (void)coll_run(&c, &a);
            }
        }
        (void)coll_last_error(&c);
        free(src); free(dst);
    }
    return 0;
}

#ifdef COLL_FUZZ_MAIN
/* Without libFuzzer: run each file named on the command line once. */
#include <stdio.h>
int main(int argc, char **argv)
{
    int i;
    for (i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        static uint8_t buf[1 << 16];
        size_t n;
        if (!f) continue;
        n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
    }
    printf("fuzz-replay: %d passed, 0 failed\n", argc - 1);
    return 0;
}
#endif
