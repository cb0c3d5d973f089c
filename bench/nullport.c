/* nullport.c - what coll.h itself costs per call: an 8-byte all-reduce on
   rank 0 of a 2-rank communicator whose port does no communication

       build/bench/nullport [-N calls]

   The port's send keeps a copy of its message (up to 256 bytes) and its
   recv hands back the last message sent of that size, at once; its
   sendrecv does both: rank 0 "hears" its own frames and data, which agree
   with it, so the call check
   passes and every step of the call runs as it would over a real port -
   argument checks, AUTO's choice, the schedule, the executor, the
   reduction, the check frames - with no peer to wait for. The copies are a
   few dozen bytes.

   Five rows (bench table columns; time_us is the median of 5 runs of N
   calls):
     coll-null-c0          coll_set_checks(c, 0)
     coll-null             the default checks (COLL_CHECK_CALLS)
     coll-null-crc         COLL_CHECK_CALLS | COLL_CHECK_CRC
     coll-null-persist     the default checks, a persistent call: prepared
                           once (coll_prepare), then coll_restart +
                           coll_waitall each time
     coll-null-persist-c0  the same with the checks off */
#define _POSIX_C_SOURCE 200809L
#define COLL_IMPLEMENTATION
#include "../coll.h"
#include "bench_common.h"

typedef struct nullport {
    unsigned char last[256];
    size_t bytes;
} nullport;

static int null_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    nullport *n = (nullport *)ctx;
    (void)peer;
    if (bytes <= sizeof n->last) { memcpy(n->last, buf, bytes); n->bytes = bytes; }
    return COLL_OK;
}

static int null_recv(void *ctx, int peer, void *buf, size_t bytes)
{
    nullport *n = (nullport *)ctx;
    (void)peer;
    if (bytes == n->bytes) memcpy(buf, n->last, bytes);
    return COLL_OK;
}

/* An exchange hears its own message back: the frames of the call check
   travel as exchanges, so rank 0 sees a frame that agrees with its own. */
static int null_sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes,
                         int from, void *rbuf, size_t rbytes)
{
    (void)to; (void)from;
    null_send(ctx, to, sbuf, sbytes);
    return null_recv(ctx, from, rbuf, rbytes);
}

#define REPS 5

int main(int argc, char **argv)
{
    static const struct { const char *impl; int set; unsigned flags; int persist; } modes[] = {
        {"coll-null-c0", 1, 0, 0}, {"coll-null", 0, 0, 0}, {"coll-null-crc", 1, COLL_CHECK_CALLS | COLL_CHECK_CRC, 0},
        {"coll-null-persist", 0, 0, 1}, {"coll-null-persist-c0", 1, 0, 1}
    };
    static coll_request req;
    coll_args a;
    static unsigned char scratch[4096];
    nullport np;
    coll_port port;
    coll_comm c;
    long calls = 1000000, i;
    int m, r, rc;

    if (argc == 3 && strcmp(argv[1], "-N") == 0) calls = atol(argv[2]);
    else if (argc != 1) { fprintf(stderr, "usage: nullport [-N calls]\n"); return 2; }
    if (calls < 1) calls = 1;
    memset(&port, 0, sizeof port);
    port.ctx = &np;
    port.send = null_send;
    port.recv = null_recv;
    port.sendrecv = null_sendrecv;
    for (m = 0; m < (int)(sizeof modes / sizeof modes[0]); m++) {
        float src[2] = {1, 2}, dst[2] = {0, 0};
        double rep[REPS];
        memset(&np, 0, sizeof np);
        rc = coll_init(&c, 0, 2, &port, scratch, sizeof scratch);
        if (rc == COLL_OK && modes[m].set) rc = coll_set_checks(&c, modes[m].flags);
        /* one checked call first: rank 0's own data twice */
        if (rc == COLL_OK) rc = coll_allreduce(&c, src, dst, 2, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
        if (rc != COLL_OK || dst[0] != 2 || dst[1] != 4) {
            fprintf(stderr, "nullport: %s: the first call gave %d (%s), %g %g\n", modes[m].impl, rc,
                    coll_last_error(&c), dst[0], dst[1]);
            bench_row(modes[m].impl, "allreduce", "auto", 2, 8, 0, 1, 0);
            continue;
        }
        memset(&a, 0, sizeof a);
        a.kind = COLL_ALLREDUCE; a.src = src; a.dst = dst; a.count = 2;
        a.dtype = COLL_FLOAT32; a.op = COLL_SUM; a.algo = COLL_ALGO_AUTO;
        if (modes[m].persist) rc = coll_prepare(&req, &c, &a);
        for (r = 0; r < REPS; r++) {
            double t0 = bench_now();
            if (modes[m].persist) {
                for (i = 0; i < calls && rc == COLL_OK; i++) {
                    rc = coll_restart(&req);
                    if (rc == COLL_OK) rc = coll_waitall(&req, 1);
                }
            } else {
                for (i = 0; i < calls && rc == COLL_OK; i++)
                    rc = coll_allreduce(&c, src, dst, 2, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
            }
            rep[r] = (bench_now() - t0) / (double)calls;
        }
        bench_row(modes[m].impl, "allreduce", "auto", 2, 8, bench_median(rep, REPS),
                  bench_busbw_factor(BK_ALLREDUCE, 2), rc == COLL_OK && dst[0] == 2 && dst[1] == 4);
    }
    return 0;
}
