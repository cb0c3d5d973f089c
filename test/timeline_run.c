/* timeline_run.c - a real run for a timeline: p ranks over the threads, shm
   or TCP port make a few calls of one collective with one algorithm, each
   rank's flight recorder (coll_set_recorder, stamped in nanoseconds of
   CLOCK_MONOTONIC, which the ranks of one host share) written by coll_dump
   to OUT/rank<r>.txt under a header line naming the rank and the port;
   its observer's events (coll_set_observer: each call's turn and end,
   each message posted to the port and done, stamped by the same clock
   into a fixed array per rank) to OUT/rank<r>.events, in the line format
   tools/timeline.c's header describes; and what coll_describe says each
   step of the schedule does on the rank (a pure function of the call, the
   tests' reference) to OUT/rank<r>.schedule, one line a step:
       step K send_to S send_bytes B recv_from F recv_bytes B

       timeline_run coll=allreduce algo=ring p=4 port=threads n=1000 \
                    calls=4 out=build/timeline [fail=R] [deadline=MS]

   n: elements (float32) per rank's block (the whole vector of all-reduce,
   broadcast, reduce, scan; one rank's block of the block-wise ones).
   fail=R: rank R makes all calls but the last and the others wait for it
   (deadline MS, 400 by default): their last call fails. Exit status 0
   when every call ended as asked (all COLL_OK; with fail=R, rank R's
   calls COLL_OK and every other rank's last one an error, the rest
   COLL_OK), 1 when not, 2 for a bad command line (bad names are answered
   with the good ones). make timeline runs it, then tools/timeline. */
#define _GNU_SOURCE
#include "../ports/coll_threads.h"
#include "../ports/coll_shm.h"
#include "../ports/coll_tcp.h"
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#define COLL_SHM_IMPLEMENTATION
#include "../ports/coll_shm.h"
#define COLL_TCP_IMPLEMENTATION
#include "../ports/coll_tcp.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MAX_P = 64, MAX_CALLS = 64, SCRATCH = 1 << 20 };

static struct {
    coll_kind kind;
    coll_algo algo;
    int p, calls, fail, tcp_port;
    size_t n;
    unsigned deadline;
    const char *port, *out;
} G;

static uint64_t now_ns(void *ctx)
{
    struct timespec t;
    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* One rank's observer: every event, stamped, into an array sized before
   the calls; past its end they are counted as lost. */
typedef struct stamped { uint64_t t; coll_event e; } stamped;
typedef struct obs_log { stamped *ev; size_t n, cap, lost; } obs_log;

static void observe(void *ctx, const coll_event *e)
{
    obs_log *l = (obs_log *)ctx;
    uint64_t t = now_ns(NULL);
    if (l->n == l->cap) { l->lost++; return; }
    l->ev[l->n].t = t;
    l->ev[l->n].e = *e;
    l->n++;
}

static int write_events(const obs_log *l, int r, const char *path)
{
    FILE *f = fopen(path, "w");
    size_t i;
    if (!f) return -1;
    fprintf(f, "# timeline_run events: rank %d of %d, %s port; t: CLOCK_MONOTONIC ns\n", r, G.p, G.port);
    for (i = 0; i < l->n; i++) {
        const coll_event *e = &l->ev[i].e;
        unsigned long long t = (unsigned long long)l->ev[i].t;
        switch (e->what) {
        case COLL_EV_CALL:
            fprintf(f, "call t %llu seq %u %s %s bytes %zu\n", t, (unsigned)e->seq, coll_kind_name(e->kind),
                    coll_algo_name(e->algo), e->bytes);
            break;
        case COLL_EV_END:
            fprintf(f, "end t %llu seq %u result %d\n", t, (unsigned)e->seq, e->result);
            break;
        case COLL_EV_POST:
            fprintf(f, "post t %llu seq %u step %d %s peer %d bytes %zu handle %d\n", t, (unsigned)e->seq, e->step,
                    e->send ? "send" : "recv", e->peer, e->bytes, e->handle);
            break;
        case COLL_EV_DONE:
            fprintf(f, "done t %llu seq %u step %d %s peer %d handle %d result %d\n", t, (unsigned)e->seq, e->step,
                    e->send ? "send" : "recv", e->peer, e->handle, e->result);
            break;
        default:
            fprintf(f, "# an event of kind %d\n", e->what);
        }
    }
    if (l->lost) fprintf(f, "lost %zu\n", l->lost);
    return fclose(f) != 0 ? -1 : 0;
}

/* coll_describe's steps of the call on this rank: the reference */
static int write_schedule(const coll_comm *c, const coll_args *a, const char *path)
{
    FILE *f = fopen(path, "w");
    coll_xfer x;
    int k;
    if (!f) return -1;
    for (k = 0; coll_describe(c, a, k, &x) == 1; k++)
        fprintf(f, "step %d send_to %d send_bytes %zu recv_from %d recv_bytes %zu\n", k + 1, x.send_to, x.send_bytes,
                x.recv_from, x.recv_bytes);
    return fclose(f) != 0 ? -1 : 0;
}

static int write_file(void *ctx, const char *text, size_t n)
{
    return fwrite(text, 1, n, (FILE *)ctx) == n ? 0 : -1;
}

static int is_blockwise(coll_kind k)
{
    return k == COLL_REDUCE_SCATTER || k == COLL_REDUCE_SCATTERV || k == COLL_ALLGATHER ||
           k == COLL_ALLGATHERV || k == COLL_GATHER || k == COLL_GATHERV || k == COLL_SCATTER ||
           k == COLL_SCATTERV || k == COLL_ALLTOALL || k == COLL_ALLTOALLV;
}

/* One rank: the calls, then its recorder into OUT/rank<r>.txt. 0 when
   every call ended as asked. */
static int rank_body(int r, coll_port *port)
{
    coll_comm c;
    coll_record ring[MAX_CALLS];
    size_t big = (size_t)G.p * G.n, i;
    size_t counts[MAX_P * MAX_P];
    unsigned char *scratch = malloc(SCRATCH);
    float *src = malloc((big + 1) * sizeof *src), *dst = malloc((big + 1) * sizeof *dst);
    const coll__entry *e = coll__entry_of(G.kind, G.algo);
    int inplace = e && (e->needs & COLL__IN_PLACE), k, rc = COLL_OK, bad = 0;
    char path[4096];
    FILE *f;
    coll_args a;
    obs_log log;
    log.n = log.lost = 0;
    log.cap = (size_t)G.calls * (256 + 64 * (size_t)G.p);   /* 2 events a message, a few messages a step */
    log.ev = malloc(log.cap * sizeof *log.ev);
    if (!scratch || !src || !dst || !log.ev) { fprintf(stderr, "timeline_run: rank %d: out of memory\n", r); return 1; }
    for (i = 0; i < (size_t)G.p * (size_t)G.p; i++) counts[i] = G.n;
    if ((rc = coll_init(&c, r, G.p, port, scratch, SCRATCH)) != COLL_OK) {
        fprintf(stderr, "timeline_run: rank %d: coll_init: %s\n", r, coll_result_str(rc));
        return 1;
    }
    coll_set_recorder(&c, ring, (unsigned)G.calls, now_ns, NULL);
    if ((rc = coll_set_observer(&c, observe, &log)) != COLL_OK) {
        fprintf(stderr, "timeline_run: rank %d: coll_set_observer: %s\n", r, coll_result_str(rc));
        return 1;
    }
    memset(&a, 0, sizeof a);
    a.kind = G.kind; a.algo = G.algo; a.dtype = COLL_FLOAT32; a.op = COLL_SUM; a.root = 0;
    a.count = G.n; a.group = 2;
    if (G.kind == COLL_REDUCE_SCATTERV || G.kind == COLL_ALLGATHERV || G.kind == COLL_GATHERV ||
        G.kind == COLL_SCATTERV || G.kind == COLL_ALLTOALLV) a.counts = counts;
    a.src = src; a.dst = dst;
    if (inplace) {                        /* the layouts coll reads as in place */
        if (G.kind == COLL_REDUCE_SCATTER || G.kind == COLL_REDUCE_SCATTERV || G.kind == COLL_SCATTER ||
            G.kind == COLL_SCATTERV) a.dst = src + (size_t)r * G.n;
        else if (G.kind == COLL_ALLGATHER || G.kind == COLL_ALLGATHERV || G.kind == COLL_GATHER ||
                 G.kind == COLL_GATHERV) a.src = dst + (size_t)r * G.n;
        else a.src = dst;
    }
    if (G.kind == COLL_BROADCAST) a.src = dst;
    for (k = 0; k < G.calls; k++) {
        for (i = 0; i < big; i++) { src[i] = (float)((r + (int)i + k) % 5); dst[i] = src[i]; }
        if (r == G.fail && k == G.calls - 1) break;      /* the rank that never makes its last call */
        rc = coll_run(&c, &a);
        if (rc != COLL_OK && !(G.fail >= 0 && k == G.calls - 1)) {
            fprintf(stderr, "timeline_run: %s port, rank %d, call %d: %s (%s)\n", G.port, r, k + 1,
                    coll_result_str(rc), coll_last_error(&c));
            bad = 1;
        }
        if (rc == COLL_OK && G.fail >= 0 && k == G.calls - 1) {
            fprintf(stderr, "timeline_run: rank %d's last call ended well without rank %d\n", r, G.fail);
            bad = 1;
        }
    }
    snprintf(path, sizeof path, "%s/rank%d.txt", G.out, r);
    if (!(f = fopen(path, "w"))) { fprintf(stderr, "timeline_run: cannot write %s\n", path); return 1; }
    fprintf(f, "# timeline_run: rank %d of %d, %s port, %s %s n %zu%s; start, end: CLOCK_MONOTONIC ns\n", r, G.p,
            G.port, coll_kind_name(G.kind), coll_algo_name(G.algo), G.n, r == G.fail ? ", skips its last call" : "");
    if (coll_dump(&c, write_file, f) != COLL_OK) bad = 1;
    if (fclose(f) != 0) { fprintf(stderr, "timeline_run: cannot write %s\n", path); bad = 1; }
    snprintf(path, sizeof path, "%s/rank%d.events", G.out, r);
    if (write_events(&log, r, path) != 0) { fprintf(stderr, "timeline_run: cannot write %s\n", path); bad = 1; }
    if (log.lost) fprintf(stderr, "timeline_run: rank %d: %zu events past the array's %zu lost\n", r, log.lost, log.cap);
    snprintf(path, sizeof path, "%s/rank%d.schedule", G.out, r);
    if (write_schedule(&c, &a, path) != 0) { fprintf(stderr, "timeline_run: cannot write %s\n", path); bad = 1; }
    if (G.fail >= 0 && r != G.fail && k == G.calls)
        printf("  rank %d: last call %s: %s\n", r, coll_result_str(rc), coll_last_error(&c));
    free(scratch); free(src); free(dst); free(log.ev);
    return bad;
}

static int threads_rank(int r, void *arg)
{
    coll_port port = coll_threads_port((coll_threads *)arg, r);
    return rank_body(r, &port);
}

static int shm_rank(int r, coll_port *port, void *arg)
{
    (void)arg;
    return rank_body(r, port);
}

static int tcp_rank(int r)
{
    static coll_tcp t;
    coll_port port;
    int rc = coll_tcp_init(&t, "127.0.0.1", G.tcp_port, r, G.p, 10000), bad;
    if (rc != COLL_OK) { fprintf(stderr, "timeline_run: rank %d: coll_tcp_init: %d\n", r, rc); return 1; }
    coll_tcp_set_timeout(&t, G.deadline);
    port = coll_tcp_port(&t);
    bad = rank_body(r, &port);
    coll_tcp_close(&t);
    return bad;
}

static int run(void)
{
    int r, failed = 0;
    if (strcmp(G.port, "threads") == 0) {
        static coll_threads w;
        if (coll_threads_init(&w, G.p, G.deadline) != 0) { fprintf(stderr, "timeline_run: coll_threads_init failed\n"); return 1; }
        failed = coll_threads_run(&w, threads_rank, &w) != 0;
        coll_threads_destroy(&w);
        return failed;
    }
    fflush(stdout);
    if (strcmp(G.port, "shm") == 0) return coll_shm_spawn(G.p, shm_rank, NULL, G.deadline) != 0;
    /* tcp: forked ranks on the loopback, a fresh token and port */
    {
        pid_t pid[MAX_P];
        if (coll_tcp_token_env() != 0 || (G.tcp_port = coll_tcp_free_port()) < 0) {
            fprintf(stderr, "timeline_run: no token or free port for TCP\n");
            return 1;
        }
        for (r = 0; r < G.p; r++) {
            pid[r] = fork();
            if (pid[r] < 0) { perror("timeline_run: fork"); return 1; }
            if (pid[r] == 0) {
                int bad;
                alarm(60);                 /* a backstop, never expected */
                bad = tcp_rank(r);
                fflush(stdout);
                _exit(bad);
            }
        }
        for (r = 0; r < G.p; r++) {
            int st = 0;
            if (waitpid(pid[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                fprintf(stderr, "timeline_run: tcp rank %d ended with status %d\n", r, st);
                failed = 1;
            }
        }
    }
    return failed;
}

static void list_kinds(void)
{
    int k;
    fprintf(stderr, "  collectives:");
    for (k = 0; k < COLL_KIND_COUNT; k++) fprintf(stderr, " %s", coll_kind_name((coll_kind)k));
    fprintf(stderr, "\n");
}

static void list_algos(coll_kind kind)
{
    size_t e;
    fprintf(stderr, "  algorithms for %s: auto", coll_kind_name(kind));
    for (e = 0; coll__row_at(e); e++)
        if (coll__row_at(e)->kind == kind && coll__row_at(e)->f)
            fprintf(stderr, " %s", coll_algo_name((coll_algo)coll__row_at(e)->algo));
    fprintf(stderr, "\n");
}

static long num(const char *key, const char *v, long lo, long hi)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < lo || x > hi) {
        fprintf(stderr, "timeline_run: %s=%s: a number from %ld to %ld, please\n", key, v, lo, hi);
        exit(2);
    }
    return x;
}

int main(int argc, char **argv)
{
    const char *coll = "allreduce", *algo = "ring";
    int i, k, a, found;
    G.p = 4; G.calls = 4; G.n = 1000; G.fail = -1; G.deadline = 0; G.port = "threads"; G.out = "build/timeline";
    for (i = 1; i < argc; i++) {
        const char *s = argv[i], *v = strchr(s, '=');
        if (!v) { fprintf(stderr, "timeline_run: %s: key=value wanted (coll algo p port n calls out fail deadline)\n", s); return 2; }
        v++;
        if (!strncmp(s, "coll=", 5)) coll = v;
        else if (!strncmp(s, "algo=", 5)) algo = v;
        else if (!strncmp(s, "p=", 2)) G.p = (int)num("p", v, 1, MAX_P);
        else if (!strncmp(s, "port=", 5)) G.port = v;
        else if (!strncmp(s, "n=", 2)) G.n = (size_t)num("n", v, 1, 1 << 22);
        else if (!strncmp(s, "calls=", 6)) G.calls = (int)num("calls", v, 1, MAX_CALLS);
        else if (!strncmp(s, "out=", 4)) G.out = v;
        else if (!strncmp(s, "fail=", 5)) G.fail = (int)num("fail", v, -1, MAX_P - 1);
        else if (!strncmp(s, "deadline=", 9)) G.deadline = (unsigned)num("deadline", v, 1, 600000);
        else { fprintf(stderr, "timeline_run: unknown %s (coll algo p port n calls out fail deadline)\n", s); return 2; }
    }
    for (k = 0, found = 0; k < COLL_KIND_COUNT && !found; k++)
        if (!strcmp(coll, coll_kind_name((coll_kind)k))) { G.kind = (coll_kind)k; found = 1; }
    if (!found) { fprintf(stderr, "timeline_run: no collective '%s'\n", coll); list_kinds(); return 2; }
    for (a = 0, found = 0; a < COLL_ALGO_COUNT && !found; a++)
        if (!strcmp(algo, coll_algo_name((coll_algo)a)) &&
            (a == COLL_ALGO_AUTO || (coll__entry_of(G.kind, (coll_algo)a) && coll__entry_of(G.kind, (coll_algo)a)->f))) {
            G.algo = (coll_algo)a; found = 1;
        }
    if (!found) { fprintf(stderr, "timeline_run: no algorithm '%s' for %s\n", algo, coll); list_algos(G.kind); return 2; }
    if (strcmp(G.port, "threads") && strcmp(G.port, "shm") && strcmp(G.port, "tcp")) {
        fprintf(stderr, "timeline_run: no port '%s'\n  ports: threads shm tcp\n", G.port);
        return 2;
    }
    if (G.fail >= G.p) { fprintf(stderr, "timeline_run: fail=%d: a rank from 0 to %d, please\n", G.fail, G.p - 1); return 2; }
    if (G.fail >= 0 && G.p < 2) { fprintf(stderr, "timeline_run: fail= needs p=2 or more\n"); return 2; }
    if (!G.deadline) G.deadline = G.fail >= 0 ? 400 : 10000;
    if (is_blockwise(G.kind) && (size_t)G.p * G.n > (1u << 22)) { fprintf(stderr, "timeline_run: p x n over 4Mi elements\n"); return 2; }
    signal(SIGPIPE, SIG_IGN);
    printf("timeline_run: %s/%s, p = %d over the %s port, n = %zu, %d calls%s\n", coll_kind_name(G.kind),
           coll_algo_name(G.algo), G.p, G.port, G.n, G.calls, G.fail >= 0 ? ", one rank skipping its last" : "");
    i = run();
    if (i) fprintf(stderr, "timeline_run: the calls did not end as asked\n");
    return i ? 1 : 0;
}
