/* test_shrink_shm.c - the shared-memory port (ports/coll_shm.h) goes on
   after a failure: its renew, then coll_comm_shrink over it, soaked.

   1. The port alone (processes joined by name, 3 ranks): after an abort
      and renew the live pairs exchange again; a message of an earlier
      epoch left unread (fast box and ring) is dropped, one of a later
      epoch is held until the receiver gets there; renew's sweep frees
      the rings an earlier epoch filled; in a renewed epoch a deadline or
      a dead peer fails that operation alone, an abort that epoch alone;
      handles of an earlier epoch are void; a forged epoch is an error,
      never a crash or a wrong delivery.
   2. The soak: each trial draws P ranks (4..16, forked, joined by name),
      a victim, a way to fail - "kill" (SIGKILL), "stop" (SIGSTOP; killed
      at the trial's end) or "silence" (it stops calling and sleeps until
      killed), each inside the victim's k-th port call from the start of
      call F, or "shot" (the parent's SIGKILL 0-4.7 ms after the victim
      began call F: anywhere in its code, the port's copies and stores
      included) - in a loop of all-reduces of drawn sizes (1..128 or
      1..65536 floats: the fast box and the ring) and algorithms over
      integer-valued floats (exact sums), each checked against a plain
      loop while they succeed. Every survivor must then
        - end a call in an error (the victim's call, or the one before or
          after) within two deadlines of the failure,
          with a non-empty coll_last_error that, where it names a rank,
          names the victim;
        - coll_comm_shrink: COLL_OK, P - 1 ranks, members = every rank
          but the victim, in order;
        - run two all-reduces (small and large) on the new communicator,
          right against a plain loop over the survivors' inputs.
      The parent bounds every trial, reaps every child (the victim is
      killed once the survivors are back) and checks that the segment's
      name is gone from /dev/shm.
   SHRINK_TRIALS (200), SHRINK_SEED (printed; fixed by default) and
   SHRINK_MS (the port's deadline, 300) change the run.
   RUN  make test-shrink-shm */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define COLL_IMPLEMENTATION
#include "coll.h"
#define COLL_SHM_IMPLEMENTATION
#include "ports/coll_shm.h"
#include "test/coll_test.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define SHM_ALIGNED __attribute__((aligned(16)))

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void nap_ms(unsigned ms)
{
    struct timespec t;
    t.tv_sec = (time_t)(ms / 1000u);
    t.tv_nsec = (long)(ms % 1000u) * 1000000L;
    nanosleep(&t, NULL);
}

static void *shared_new(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); exit(2); }
    memset(p, 0, bytes);
    return p;
}

/* Wait (at most ms) until *flag >= v. */
static int await_flag(const int *flag, int v, unsigned ms)
{
    double t0 = now_ms();
    while (__atomic_load_n(flag, __ATOMIC_SEQ_CST) < v)
        if (now_ms() - t0 > ms) return 0;
        else nap_ms(1);
    return 1;
}

static void set_flag(int *flag, int v) { __atomic_store_n(flag, v, __ATOMIC_SEQ_CST); }

/* Is the name still in /dev/shm? (removes it if so) */
static int name_left(const char *name)
{
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd < 0) return 0;
    close(fd);
    shm_unlink(name);
    return 1;
}

/* ---- 1. the port alone ------------------------------------------------------ */

#define UNIT_CHECKS 64
typedef struct unit_shared {
    int step[3];                        /* each rank's progress, for the others   */
    int ok[3][UNIT_CHECKS];             /* 1 pass, -1 fail, 0 not reached         */
    char what[3][UNIT_CHECKS][112];
    int n[3];
} unit_shared;
static unit_shared *U;

static void unote(int r, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void unote(int r, int ok, const char *fmt, ...)
{
    va_list ap;
    int i = U->n[r]++;
    if (i >= UNIT_CHECKS) return;
    U->ok[r][i] = ok ? 1 : -1;
    va_start(ap, fmt);
    vsnprintf(U->what[r][i], sizeof U->what[r][i], fmt, ap);
    va_end(ap);
}

static void fill(unsigned char *b, size_t n, int tag) { size_t i; for (i = 0; i < n; i++) b[i] = (unsigned char)(i * 7u + (unsigned)tag * 31u); }
static int same(const unsigned char *b, size_t n, int tag) { size_t i; for (i = 0; i < n; i++) if (b[i] != (unsigned char)(i * 7u + (unsigned)tag * 31u)) return 0; return 1; }

enum { BIGMSG = 20000, SMALL = 100 };

/* Rank 0 sends the old and the new; rank 1 receives; rank 2 exchanges
   with rank 1 in epoch 1, then dies. U->step[r]: how far rank r is. The
   port's deadline is 300 ms after the join. */
static int unit_rank(int r, coll_shm *s, coll_port *pt)
{
    static unsigned char a[BIGMSG], b[BIGMSG];
    const size_t two = 2 * COLL_SHM_SLOT_BYTES;
    int rc, h, i, *s0 = &U->step[0], *s1 = &U->step[1];
    double t0;
    s->timeout_ms = 300;
    if (r == 0) {
        /* epoch 0: a small and a large message that rank 1 never reads */
        fill(a, SMALL + 1, 1);
        unote(r, coll_shm_send(s, 1, a, SMALL + 1) == 0, "epoch 0: small send");
        fill(a, BIGMSG, 2);
        unote(r, coll_shm_send(s, 1, a, BIGMSG) == 0, "epoch 0: large send");
        set_flag(s0, 1);
        await_flag(s1, 1, 3000);
        coll_shm_abort(s, COLL_ERR_IO);
        rc = coll_shm_send(s, 1, a, 8);
        unote(r, rc == COLL_ERR_IO, "epoch 0 after its abort: send -> %d", rc);
        rc = pt->renew(pt->ctx, 0);
        unote(r, rc == COLL_ERR_INVAL, "renew(0) in epoch 0 -> %d", rc);
        rc = pt->renew(pt->ctx, 1);
        unote(r, rc == 0, "renew(1) -> %d", rc);
        /* epoch 1: what rank 1 must get instead of the old two */
        fill(a, SMALL, 3);
        unote(r, coll_shm_send(s, 1, a, SMALL) == 0, "epoch 1: small send");
        fill(a, BIGMSG, 4);
        unote(r, coll_shm_send(s, 1, a, BIGMSG) == 0, "epoch 1: large send");
        set_flag(s0, 2);
        await_flag(s1, 2, 5000);
        /* epoch 2 while rank 1 is in epoch 1: these are held */
        rc = pt->renew(pt->ctx, 2);
        unote(r, rc == 0, "renew(2) -> %d", rc);
        fill(a, SMALL, 6);
        rc = coll_shm_send(s, 1, a, SMALL);
        unote(r, rc == 0, "epoch 2: small send (rank 1 in epoch 1) -> %d", rc);
        fill(b, BIGMSG, 7);
        rc = coll_shm_send(s, 1, b, BIGMSG);
        unote(r, rc == 0, "epoch 2: large send (rank 1 in epoch 1) -> %d", rc);
        set_flag(s0, 3);
        await_flag(s1, 4, 5000);                /* sent (after its own deadline) */
        rc = coll_shm_recv(s, 1, a, 64);
        unote(r, rc == 0 && same(a, 64, 8), "epoch 2: receive from rank 1 -> %d", rc);
        /* an abort in epoch 2 fails epoch 2, not epoch 3 */
        await_flag(s1, 5, 5000);
        coll_shm_abort(s, COLL_ERR_IO);
        set_flag(s0, 4);
        rc = pt->renew(pt->ctx, 3);
        unote(r, rc == 0, "renew(3) -> %d", rc);
        fill(a, SMALL, 9);
        rc = coll_shm_send(s, 1, a, SMALL);
        unote(r, rc == 0, "epoch 3: send after epoch 2's abort -> %d", rc);
        /* epoch 3: rank 1's box and ring filled, and never read */
        await_flag(s1, 6, 5000);
        fill(a, 40, 5);
        for (i = 0, rc = 0; i < COLL_SHM_FBOX && rc == 0; i++) rc = coll_shm_send(s, 1, a, 40);
        for (i = 0; i < COLL_SHM_SLOTS / 2 && rc == 0; i++) rc = coll_shm_send(s, 1, b, two);
        unote(r, rc == 0, "epoch 3: rank 1's box and ring filled -> %d", rc);
        set_flag(s0, 5);
        /* epoch 4: renew(4) at rank 1 swept them: a ring's worth goes at once */
        await_flag(s1, 7, 5000);
        rc = pt->renew(pt->ctx, 4);
        t0 = now_ms();
        for (i = 0; i < COLL_SHM_SLOTS / 2 && rc == 0; i++) rc = coll_shm_send(s, 1, b, two);
        unote(r, rc == 0 && now_ms() - t0 < 200, "epoch 4: a ring's worth sent into the swept ring"
              " -> %d in %.0f ms", rc, now_ms() - t0);
        set_flag(s0, 6);
        await_flag(s1, 8, 5000);
        /* a handle of an earlier epoch is void */
        rc = coll_shm_irecv(s, 1, a, 8, &h);
        if (rc == 0) rc = pt->renew(pt->ctx, 5);
        if (rc == 0) rc = coll_shm_wait(s, h, 1);
        unote(r, rc == COLL_ERR_INVAL, "a handle posted before renew(5): wait -> %d", rc);
        /* a forged epoch towards rank 1, written as a rogue would */
        {
            coll_shm__chan *c = coll_shm__chan_of(s, 0, 1);
#if COLL_SHM_FBOX > 0
            uint32_t bh = s->bhead[1];
            fill(c->box[bh].data, sizeof c->box[bh].data, 3);
            c->box[bh].len = SMALL;
            c->box[bh].epoch = 77;                 /* our record says 5 */
            __atomic_store_n(&c->box[bh].stamp, COLL_SHM__TOP | 0u, __ATOMIC_SEQ_CST);
#else
            coll_shm__slot *sl = &c->slot[s->head[1] % COLL_SHM_SLOTS];
            fill(sl->data, SMALL, 3);
            sl->kind = COLL_SHM__DATA | COLL_SHM__LAST;
            sl->bytes = sl->total = SMALL;
            sl->seq = 0;
            sl->epoch = 77;                        /* our record says 5 */
            __atomic_store_n(&c->head, s->head[1] + 1u, __ATOMIC_SEQ_CST);
#endif
            coll_shm__ring(s, 1);
        }
        set_flag(s0, 7);
        await_flag(s1, 9, 5000);
        return 0;
    }
    if (r == 1) {
        await_flag(s0, 1, 3000);
        set_flag(s1, 1);
        t0 = now_ms();
        rc = coll_shm_recv(s, 2, a, 8);            /* rank 2 sends nothing in epoch 0 */
        unote(r, rc == COLL_ERR_IO && now_ms() - t0 < 1000, "epoch 0: its abort ends a wait -> %d", rc);
        rc = pt->renew(pt->ctx, 1);
        unote(r, rc == 0, "renew(1) -> %d", rc);
        /* epoch 0's 101 B and 20000 B are dropped: 100 B get epoch 1's */
        memset(a, 0, sizeof a);
        rc = coll_shm_recv(s, 0, a, SMALL);
        unote(r, rc == 0 && same(a, SMALL, 3), "epoch 1: small receive -> %d (%s)", rc,
              same(a, SMALL, 3) ? "its own epoch's message" : "WRONG bytes");
        rc = coll_shm_recv(s, 0, a, BIGMSG);
        unote(r, rc == 0 && same(a, BIGMSG, 4), "epoch 1: large receive -> %d (%s)", rc,
              same(a, BIGMSG, 4) ? "its own epoch's message" : "WRONG bytes");
        fill(b, 64, 10);
        rc = coll_shm_sendrecv(s, 2, b, 64, 2, a, 64);
        unote(r, rc == 0 && same(a, 64, 11), "epoch 1: exchange with rank 2 -> %d", rc);
        set_flag(s1, 2);
        /* rank 0 is in epoch 2: its messages are held, not taken by this
           epoch-1 receive, which ends at the deadline, alone */
        await_flag(s0, 3, 5000);
        t0 = now_ms();
        rc = coll_shm_recv(s, 0, a, SMALL);
        unote(r, rc == COLL_ERR_TIMEOUT && now_ms() - t0 >= 250 && now_ms() - t0 < 1500,
              "epoch 1: receive from a rank in epoch 2 -> %d after %.0f ms (held; the deadline)",
              rc, now_ms() - t0);
        unote(r, coll_shm__failed(s) == 0, "epoch 1: the deadline failed that operation alone (%d)",
              coll_shm__failed(s));
        set_flag(s1, 3);
        fill(b, 64, 10);
        rc = coll_shm_sendrecv(s, 2, b, 64, 2, a, 64);
        unote(r, rc == 0 && same(a, 64, 11), "epoch 1: exchange with rank 2 after it -> %d", rc);
        rc = pt->renew(pt->ctx, 2);
        unote(r, rc == 0, "renew(2) -> %d", rc);
        memset(a, 0, sizeof a);
        rc = coll_shm_recv(s, 0, a, SMALL);
        unote(r, rc == 0 && same(a, SMALL, 6), "epoch 2: the held small message -> %d", rc);
        rc = coll_shm_recv(s, 0, a, BIGMSG);
        unote(r, rc == 0 && same(a, BIGMSG, 7), "epoch 2: the held large message -> %d", rc);
        fill(b, 64, 8);
        rc = coll_shm_send(s, 0, b, 64);
        unote(r, rc == 0, "epoch 2: send to rank 0 -> %d", rc);
        /* rank 2 dies (it is in epoch 1): this receive fails, alone */
        set_flag(s1, 4);
        t0 = now_ms();
        rc = coll_shm_recv(s, 2, a, 64);
        unote(r, rc == COLL_ERR_IO && now_ms() - t0 < 250, "epoch 2: receive from a peer that dies"
              " -> %d after %.0f ms", rc, now_ms() - t0);
        unote(r, coll_shm__failed(s) == 0, "epoch 2: the dead peer failed that operation alone (%d)",
              coll_shm__failed(s));
        set_flag(s1, 5);
        /* rank 0 aborts epoch 2 */
        await_flag(s0, 4, 5000);
        rc = coll_shm_recv(s, 0, a, SMALL);
        unote(r, rc == COLL_ERR_IO, "epoch 2 after its abort: receive -> %d", rc);
        rc = pt->renew(pt->ctx, 3);
        unote(r, rc == 0, "renew(3) -> %d", rc);
        rc = coll_shm_recv(s, 0, a, SMALL);
        unote(r, rc == 0 && same(a, SMALL, 9), "epoch 3: receive after epoch 2's abort -> %d", rc);
        set_flag(s1, 6);
        /* renew(4) sweeps the box and ring rank 0 filled in epoch 3 */
        await_flag(s0, 5, 5000);
        rc = pt->renew(pt->ctx, 4);
        unote(r, rc == 0, "renew(4) -> %d", rc);
        set_flag(s1, 7);
        await_flag(s0, 6, 5000);
        for (i = 0; i < COLL_SHM_SLOTS / 2 && rc == 0; i++) {
            memset(a, 0, two);
            rc = coll_shm_recv(s, 0, a, two);
            if (rc == 0 && !same(a, two, 7)) rc = -9999;
        }
        unote(r, rc == 0, "epoch 4: the ring's worth received, epoch 3's dropped -> %d", rc);
        rc = pt->renew(pt->ctx, 5);
        unote(r, rc == 0, "renew(5) -> %d", rc);
        set_flag(s1, 8);
        await_flag(s0, 7, 5000);
        t0 = now_ms();
        memset(a, 0, sizeof a);
        rc = coll_shm_recv(s, 0, a, SMALL);
        unote(r, rc == COLL_ERR_IO && now_ms() - t0 < 250 && !same(a, SMALL, 3),
              "a message of epoch 77 from a rank whose record says 5 -> %d, nothing taken", rc);
        set_flag(s1, 9);
        return 0;
    }
    /* rank 2 */
    await_flag(s1, 1, 3000);
    nap_ms(50);
    rc = pt->renew(pt->ctx, 1);
    unote(r, rc == 0, "renew(1) -> %d", rc);
    fill(b, 64, 11);
    rc = coll_shm_sendrecv(s, 1, b, 64, 1, a, 64);
    unote(r, rc == 0 && same(a, 64, 10), "epoch 1: exchange with rank 1 -> %d", rc);
    await_flag(s1, 3, 5000);
    fill(b, 64, 11);
    rc = coll_shm_sendrecv(s, 1, b, 64, 1, a, 64);
    unote(r, rc == 0 && same(a, 64, 10), "epoch 1: exchange with rank 1 after its deadline -> %d", rc);
    await_flag(s1, 4, 5000);
    nap_ms(50);
    return 3;                                   /* exits: dead to rank 1's epoch-2 receive */
}

static void unit_suite(void)
{
    pid_t pid[3];
    char name[64];
    int r, st, i;
    U = (unit_shared *)shared_new(sizeof *U);
    snprintf(name, sizeof name, "/coll-shrink-shm-unit-%d", (int)getpid());
    shm_unlink(name);
    fflush(NULL);
    for (r = 0; r < 3; r++) {
        pid[r] = fork();
        if (pid[r] == 0) {
            coll_shm s;
            coll_port port;
            int rc;
            alarm(30);                             /* a backstop, never expected */
            rc = coll_shm_open(&s, name, r, 3, 5000, &port);
            if (rc) { fprintf(stderr, "unit: coll_shm_open rank %d: %d\n", r, rc); _exit(9); }
            rc = unit_rank(r, &s, &port);
            coll_shm_close(&s);
            _exit(rc);
        }
    }
    for (r = 0; r < 3; r++) {
        waitpid(pid[r], &st, 0);
        COLL_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == (r == 2 ? 3 : 0),
                       "unit: rank %d ended with status %#x", r, st);
    }
    for (r = 0; r < 3; r++)
        for (i = 0; i < U->n[r] && i < UNIT_CHECKS; i++) {
            COLL_CHECK_MSG(U->ok[r][i] == 1, "unit: rank %d: %s", r, U->what[r][i]);
            printf("  rank %d: %-4s %s\n", r, U->ok[r][i] == 1 ? "ok" : "FAIL", U->what[r][i]);
        }
    COLL_CHECK_MSG(U->n[1] >= 20, "unit: rank 1 made %d checks only", U->n[1]);
    COLL_CHECK_MSG(!name_left(name), "unit: %s left in /dev/shm", name);
    munmap(U, sizeof *U);
}

/* ---- 2. the soak --------------------------------------------------------------- */

enum { PMAX = 16, NMAX = 65536, CALLS = 48, KMAX = 1 << 20, KILL = 0, STOP = 1, SILENCE = 2, SHOT = 3,
       MODES = 4 };
static const char *const mode_name[] = {"kill", "stop", "silence", "shot"};

typedef struct trial {
    int p, victim, mode, fail_call, fail_op;
    unsigned deadline_ms;
    size_t count[CALLS], after[2];
    coll_algo algo[CALLS];
} trial;

typedef struct rank_out {
    int finished;              /* the survivor reached its end             */
    int calls_ok, calls_bad;   /* calls that succeeded: right / wrong data */
    int fail_rc, fail_call;
    double fail_at;            /* ms, CLOCK_MONOTONIC                      */
    char why[96];              /* coll_last_error of the failed call       */
    int shrink_rc, size, rank, members[PMAX];
    char shrink_why[96];
    int after_rc[2], after_bad[2];
} rank_out;

typedef struct soak_shared {
    double victim_at;          /* when the victim failed (ms)              */
    int victim_call, victim_hit, victim_lived;
    int victim_now;            /* the call the victim is in (1 + k, 0 none)  */
    rank_out r[PMAX];
} soak_shared;

static soak_shared *S;
static trial T;

typedef struct rank_state { coll_port inner; int rank, call, ops; } rank_state;

/* The victim's port calls: at op fail_op counted from the start of call
   fail_call it dies, stops or falls silent inside that port call. */
static void maybe_fail(rank_state *w)
{
    if (w->rank != T.victim || T.mode == SHOT || w->call < T.fail_call) return;
    if (w->ops++ != T.fail_op) return;
    S->victim_at = now_ms();
    S->victim_call = w->call;
    __atomic_store_n(&S->victim_hit, 1, __ATOMIC_SEQ_CST);
    if (T.mode == KILL) raise(SIGKILL);
    if (T.mode == STOP) raise(SIGSTOP);
    for (;;) pause();                        /* silent (and a stopped one, continued) */
}
static int w_send(void *ctx, int peer, const void *buf, size_t n)
{ rank_state *w = (rank_state *)ctx; maybe_fail(w); return w->inner.send(w->inner.ctx, peer, buf, n); }
static int w_recv(void *ctx, int peer, void *buf, size_t n)
{ rank_state *w = (rank_state *)ctx; maybe_fail(w); return w->inner.recv(w->inner.ctx, peer, buf, n); }
static int w_sendrecv(void *ctx, int to, const void *sb, size_t sn, int from, void *rb, size_t rn)
{ rank_state *w = (rank_state *)ctx; maybe_fail(w); return w->inner.sendrecv(w->inner.ctx, to, sb, sn, from, rb, rn); }
static int w_isend(void *ctx, int peer, const void *buf, size_t n, int *h)
{ rank_state *w = (rank_state *)ctx; maybe_fail(w); return w->inner.isend(w->inner.ctx, peer, buf, n, h); }
static int w_irecv(void *ctx, int peer, void *buf, size_t n, int *h)
{ rank_state *w = (rank_state *)ctx; maybe_fail(w); return w->inner.irecv(w->inner.ctx, peer, buf, n, h); }
static int w_irecv_fold(void *ctx, int peer, void *buf, size_t n, coll_fold_fn f, void *arg, int *h)
{ rank_state *w = (rank_state *)ctx; maybe_fail(w); return w->inner.irecv_fold(w->inner.ctx, peer, buf, n, f, arg, h); }
static int w_wait(void *ctx, int h, int block)
{ rank_state *w = (rank_state *)ctx; if (block) maybe_fail(w); return w->inner.wait(w->inner.ctx, h, block); }
static void w_abort(void *ctx, int code)
{ rank_state *w = (rank_state *)ctx; w->inner.abort(w->inner.ctx, code); }
static int w_attach(void *ctx)
{ rank_state *w = (rank_state *)ctx; return w->inner.attach(w->inner.ctx); }
static int w_missing(void *ctx, int peer)
{ rank_state *w = (rank_state *)ctx; return w->inner.missing(w->inner.ctx, peer); }
static int w_renew(void *ctx, uint32_t e)
{ rank_state *w = (rank_state *)ctx; return w->inner.renew(w->inner.ctx, e); }

static float value(int r, size_t i, int call) { return (float)((r + 1) * (int)(i % 7 + 1) + call % 5); }

static float src[NMAX], dst[NMAX];
static unsigned char scratch[64 * 1024] SHM_ALIGNED, scratch2[64 * 1024] SHM_ALIGNED;

/* An all-reduce of n floats (call `tag`), checked against a plain loop over
   the ranks in who[0..p) (world ranks). rc; *bad: the result was wrong. */
static int reduce_checked(coll_comm *c, int me, const int *who, int p, size_t n, coll_algo algo,
                          int tag, int *bad)
{
    size_t i;
    int rc, j;
    for (i = 0; i < n; i++) src[i] = value(me, i, tag);
    rc = coll_allreduce(c, src, dst, n, COLL_FLOAT32, COLL_SUM, algo);
    *bad = 0;
    if (rc == COLL_OK)
        for (i = 0; i < n && !*bad; i++) {
            float want = 0;
            for (j = 0; j < p; j++) want += value(who[j], i, tag);
            if (dst[i] != want) *bad = 1;
        }
    return rc;
}

static int soak_rank(int r, coll_shm *s, coll_port *raw)
{
    static rank_state w;
    static coll_comm c, out;
    static coll_subport sp;
    static int members[2 * PMAX];
    rank_out *o = &S->r[r];
    coll_port port;
    int world[PMAX], k, rc = COLL_OK, bad, j;
    s->timeout_ms = T.deadline_ms;              /* the join had its own, longer */
    for (j = 0; j < T.p; j++) world[j] = j;
    w.inner = *raw;
    w.rank = r;
    w.call = -1;
    w.ops = 0;
    memset(&port, 0, sizeof port);
    port.ctx = &w;
    port.send = w_send; port.recv = w_recv; port.sendrecv = w_sendrecv;
    port.isend = w_isend; port.irecv = w_irecv; port.wait = w_wait;
    port.irecv_fold = w_irecv_fold; port.abort = w_abort; port.attach = w_attach;
    port.missing = w_missing; port.renew = w_renew;
    if ((rc = coll_init(&c, r, T.p, &port, scratch, sizeof scratch)) != COLL_OK) {
        o->fail_rc = rc;
        o->fail_call = -1;
        return 1;
    }
    for (k = 0; k < (T.mode == SHOT ? KMAX : CALLS); k++) {
        w.call = k;
        if (r == T.victim) __atomic_store_n(&S->victim_now, 1 + k, __ATOMIC_SEQ_CST);
        rc = reduce_checked(&c, r, world, T.p, T.count[k % CALLS], T.algo[k % CALLS], k, &bad);
        if (rc != COLL_OK) break;
        if (bad) o->calls_bad++; else o->calls_ok++;
    }
    o->fail_at = now_ms();
    o->fail_rc = rc;
    o->fail_call = k;
    snprintf(o->why, sizeof o->why, "%s", coll_last_error(&c));
    if (r == T.victim) {                        /* it should have failed in there */
        S->victim_lived = 1;
        return 2;
    }
    rc = coll_comm_shrink(&out, &sp, &c, members, scratch2, sizeof scratch2);
    o->shrink_rc = rc;
    snprintf(o->shrink_why, sizeof o->shrink_why, "%s", coll_last_error(&c));
    if (rc == COLL_OK) {
        o->size = coll_size(&out);
        o->rank = coll_rank(&out);
        for (j = 0; j < o->size && j < PMAX; j++) o->members[j] = members[j];
        for (j = 0; j < 2; j++) {
            o->after_rc[j] = reduce_checked(&out, r, members, o->size, T.after[j], COLL_ALGO_AUTO,
                                            100 + j, &o->after_bad[j]);
            if (o->after_rc[j] != COLL_OK)
                snprintf(o->shrink_why, sizeof o->shrink_why, "after: %s", coll_last_error(&out));
        }
    }
    __atomic_store_n(&o->finished, 1, __ATOMIC_SEQ_CST);
    return 0;
}

static unsigned long long rng;
static unsigned draw(unsigned n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng >> 33) % n;
}

/* The rank an error text names ("port failed: rank M, ..."), -1 none. */
static int named_rank(const char *why)
{
    const char *p = strstr(why, "rank ");
    return p ? atoi(p + 5) : -1;
}

typedef struct tally { int trials, named, unnamed; double sum_s, worst_s, worst_detect_ms; } tally;

/* One trial: fork, supervise, reap, check. */
static void soak_trial(int t, const char *prefix, tally *by_mode)
{
    pid_t pid[PMAX];
    char name[96];
    double t0 = now_ms(), limit = 8000.0 + 20.0 * T.deadline_ms, detect = 0;
    unsigned long before = coll_test_failed;
    int r, st, alive, k, bad_status = 0;
    int gone[PMAX];
    double shot_at = 0;              /* SHOT: when the parent kills the victim */
    snprintf(name, sizeof name, "%s-%d", prefix, t);
    shm_unlink(name);
    memset(S, 0, sizeof *S);
    fflush(NULL);
    for (r = 0; r < T.p; r++) {
        gone[r] = 0;
        pid[r] = fork();
        if (pid[r] < 0) { perror("fork"); exit(2); }
        if (pid[r] == 0) {
            coll_shm s;
            coll_port port;
            int rc;
            rc = coll_shm_open(&s, name, r, T.p, 10000, &port);
            if (rc) { fprintf(stderr, "trial %d: coll_shm_open rank %d: %d (%s)\n", t, r, rc, s.why ? s.why : ""); _exit(9); }
            rc = soak_rank(r, &s, &port);
            coll_shm_close(&s);
            _exit(rc);
        }
    }
    /* the survivors come back, or the trial is a hang: everyone is killed */
    for (alive = T.p; alive > 0;) {
        int survivors_left = 0;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p > 0) {
            for (r = 0; r < T.p; r++)
                if (pid[r] == p && !gone[r]) {
                    gone[r] = 1;
                    alive--;
                    if (r != T.victim && (!WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
                        bad_status = 1;
                        COLL_CHECK_MSG(0, "trial %d: rank %d ended with status %#x", t, r, st);
                    }
                    if (r == T.victim && (T.mode == KILL || T.mode == SHOT) && S->victim_hit)
                        COLL_CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
                                       "trial %d: the victim ended with status %#x", t, st);
                }
            continue;
        }
        /* SHOT: the parent's SIGKILL, at a moment that falls anywhere in
           the victim's code, the port's copies and stores included */
        if (T.mode == SHOT && !S->victim_hit && !gone[T.victim]) {
            int now_in = __atomic_load_n(&S->victim_now, __ATOMIC_SEQ_CST);
            if (!shot_at && now_in > T.fail_call)
                shot_at = now_ms() + T.fail_op * 0.1;     /* 0 .. 4.7 ms after call F began */
            if (shot_at && now_ms() >= shot_at) {
                S->victim_call = __atomic_load_n(&S->victim_now, __ATOMIC_SEQ_CST) - 1;
                S->victim_at = now_ms();
                kill(pid[T.victim], SIGKILL);
                __atomic_store_n(&S->victim_hit, 1, __ATOMIC_SEQ_CST);
            }
            if (!gone[T.victim] && now_ms() - t0 < limit) {
                struct timespec nap = {0, 50000};
                nanosleep(&nap, NULL);
                continue;
            }
        }
        for (r = 0; r < T.p; r++) survivors_left += r != T.victim && !gone[r];
        if (!survivors_left || now_ms() - t0 > limit) {
            if (survivors_left)
                COLL_CHECK_MSG(0, "trial %d: %d survivors still running after %.0f ms: killed", t,
                               survivors_left, now_ms() - t0);
            for (r = 0; r < T.p; r++)
                if (!gone[r]) kill(pid[r], SIGKILL);
            for (r = 0; r < T.p; r++)
                if (!gone[r]) { waitpid(pid[r], &st, 0); gone[r] = 1; alive--; }
            break;
        }
        nap_ms(2);
    }
    (void)bad_status;
    COLL_CHECK_MSG(!name_left(name), "trial %d: %s left in /dev/shm", t, name);
    COLL_CHECK_MSG(S->victim_hit && !S->victim_lived, "trial %d: the victim never failed (op %d of call %d)",
                   t, T.fail_op, T.fail_call);
    for (r = 0; r < T.p; r++) {
        rank_out *o = &S->r[r];
        int m, j;
        if (r == T.victim) continue;
        COLL_CHECK_MSG(o->calls_bad == 0, "trial %d: rank %d: %d calls gave wrong sums", t, r, o->calls_bad);
        COLL_CHECK_MSG(o->finished, "trial %d: rank %d did not finish (failed call %d: %d)", t, r,
                       o->fail_call, o->fail_rc);
        if (!o->finished) continue;
        COLL_CHECK_MSG(o->fail_rc < 0, "trial %d: rank %d: no call failed (%d)", t, r,
                       o->fail_rc);
        /* the call the victim was in, the next (this rank went on without
           it), or the one before (the abort of whoever noticed first ends a
           call this rank had not finished, though it had the victim's part) */
        COLL_CHECK_MSG(o->fail_call >= S->victim_call - 1 && o->fail_call <= S->victim_call + 1,
                       "trial %d: rank %d failed in call %d, the victim in %d", t, r, o->fail_call,
                       S->victim_call);
        if (S->victim_hit && o->fail_at - S->victim_at > detect) detect = o->fail_at - S->victim_at;
        COLL_CHECK_MSG(o->fail_at - S->victim_at < 2.0 * T.deadline_ms + 250.0,
                       "trial %d: rank %d: the error came %.0f ms after the failure (deadline %u ms)", t, r,
                       o->fail_at - S->victim_at, T.deadline_ms);
        m = named_rank(o->why);
        if (m < 0) by_mode[T.mode].unnamed++; else by_mode[T.mode].named++;
        COLL_CHECK_MSG(o->why[0] != 0, "trial %d: rank %d: an empty coll_last_error", t, r);
        COLL_CHECK_MSG(m < 0 || m == T.victim, "trial %d: rank %d: \"%s\" names rank %d, the victim is %d",
                       t, r, o->why, m, T.victim);
        COLL_CHECK_MSG(o->shrink_rc == COLL_OK, "trial %d: rank %d: shrink -> %d (%s)", t, r, o->shrink_rc,
                       o->shrink_why);
        if (o->shrink_rc != COLL_OK) continue;
        COLL_CHECK_MSG(o->size == T.p - 1, "trial %d: rank %d: %d ranks after shrink, not %d", t, r, o->size,
                       T.p - 1);
        for (j = 0; j < o->size && j < T.p - 1; j++)
            COLL_CHECK_MSG(o->members[j] == (j < T.victim ? j : j + 1), "trial %d: rank %d: member %d is %d",
                           t, r, j, o->members[j]);
        COLL_CHECK_MSG(o->rank == (r < T.victim ? r : r - 1), "trial %d: rank %d: new rank %d", t, r, o->rank);
        for (k = 0; k < 2; k++)
            COLL_CHECK_MSG(o->after_rc[k] == COLL_OK && !o->after_bad[k],
                           "trial %d: rank %d: all-reduce %d (%zu floats) after shrink -> %d%s (%s)", t, r, k,
                           T.after[k], o->after_rc[k], o->after_bad[k] ? ", wrong sums" : "", o->shrink_why);
    }
    {
        tally *ty = &by_mode[T.mode];
        double s = (now_ms() - t0) / 1e3;
        ty->trials++;
        ty->sum_s += s;
        if (s > ty->worst_s) ty->worst_s = s;
        if (detect > ty->worst_detect_ms) ty->worst_detect_ms = detect;
    }
    if (coll_test_failed != before) {
        printf("  trial %d FAILED: %d ranks, victim %d, %s at call %d op %d (hit in call %d)\n", t, T.p,
               T.victim, mode_name[T.mode], T.fail_call, T.fail_op, S->victim_call);
        for (r = 0; r < T.p; r++)
            if (r != T.victim)
                printf("    rank %d: call %d -> %d \"%s\"; shrink %d size %d \"%s\"\n", r, S->r[r].fail_call,
                       S->r[r].fail_rc, S->r[r].why, S->r[r].shrink_rc, S->r[r].size, S->r[r].shrink_why);
    }
}

/* Names under /dev/shm that start with `prefix` (without its '/'). */
static int leftovers(const char *prefix)
{
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    int n = 0;
    if (!d) return 0;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix + 1, strlen(prefix) - 1) == 0) n++;
    closedir(d);
    return n;
}

int main(void)
{
    static const coll_algo algos[] = {COLL_ALGO_AUTO, COLL_ALGO_RING, COLL_ALGO_RECURSIVE_DOUBLING,
                                      COLL_ALGO_TREE, COLL_ALGO_RABENSEIFNER};
    const char *e;
    char prefix[64];
    int trials = 200, t, k;
    unsigned long long seed = 20261202ull;
    unsigned ms = 300;
    double t0, total;
    tally by_mode[MODES];
    if ((e = getenv("SHRINK_TRIALS")) != NULL) trials = atoi(e);
    if ((e = getenv("SHRINK_SEED")) != NULL) seed = strtoull(e, NULL, 0);
    if ((e = getenv("SHRINK_MS")) != NULL) ms = (unsigned)atoi(e);
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("shrink-shm: %d trials, SHRINK_SEED=%llu, deadline SHRINK_MS=%u ms\n", trials, seed, ms);

    t0 = now_ms();
    unit_suite();
    printf("  the port alone: %.1f s\n", (now_ms() - t0) / 1e3);

    S = (soak_shared *)shared_new(sizeof *S);
    snprintf(prefix, sizeof prefix, "/coll-shrink-shm-%d", (int)getpid());
    memset(by_mode, 0, sizeof by_mode);
    rng = seed;
    t0 = now_ms();
    for (t = 0; t < trials; t++) {
        memset(&T, 0, sizeof T);
        T.p = 4 + (int)draw(PMAX - 3);
        T.victim = (int)draw((unsigned)T.p);
        T.mode = (int)draw(MODES);
        T.fail_call = (int)draw(3);
        T.fail_op = (int)draw(48);          /* SHOT: a delay of fail_op / 10 ms */
        T.deadline_ms = ms;
        for (k = 0; k < CALLS; k++) {
            T.count[k] = 1 + draw(draw(2) ? 128 : NMAX);
            T.algo[k] = algos[draw(sizeof algos / sizeof algos[0])];
        }
        T.after[0] = 1 + draw(128);
        T.after[1] = 1 + draw(NMAX);
        soak_trial(t, prefix, by_mode);
    }
    total = (now_ms() - t0) / 1e3;
    for (k = 0; k < MODES; k++)
        if (by_mode[k].trials)
            printf("  %-7s %3d trials: %.2f s a trial (worst %.2f s), errors within %.0f ms of the failure;"
                   " %d survivors' errors named the victim, %d no rank\n",
                   mode_name[k], by_mode[k].trials, by_mode[k].sum_s / by_mode[k].trials, by_mode[k].worst_s,
                   by_mode[k].worst_detect_ms, by_mode[k].named, by_mode[k].unnamed);
    printf("  %d trials in %.1f s (%.2f s a trial)\n", trials, total, trials ? total / trials : 0.0);
    k = leftovers(prefix);
    COLL_CHECK_MSG(k == 0, "%d segments of this run left in /dev/shm", k);
    return coll_test_summary("shrink-shm");
}
