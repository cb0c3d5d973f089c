/* test_shm_rogue.c - the shared-memory port (ports/coll_shm.h) against a
   segment it cannot trust: a member that forges slots, ring counters, the
   `failed` word, its pid or the CMA agreement; a name squatted by another
   owner or left open to others; a rank 0 killed during the join; a join
   that nobody else comes to, with timeout 0.

   Each case asserts something the port could get wrong (a crash, a hang,
   a positive result, a read of the wrong process), and each runs in a
   process group of its own under a wall-clock limit, so a hang is a
   counted failure, not a stuck test. The last line is
   "shm-rogue: N passed, N failed". */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define COLL_IMPLEMENTATION
#include "coll.h"
#define COLL_SHM_JOIN_MS 400          /* a timeout-0 join gives up after 0.4 s here */
#define COLL_SHM_IMPLEMENTATION
#include "ports/coll_shm.h"

/* coll_init wants scratch aligned for 8-byte elements */
#define SHM_ALIGNED __attribute__((aligned(16)))

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* ---- counts shared by every process of the test ------------------------- */

typedef struct shared {
    long passed, failed;
    int rc[8];                /* per rank: what the call under test returned */
    double ms[8];             /* and how long it took                        */
    int done[8];              /* rank finished its part                      */
    int victim_pid;
} shared;
static shared *g;

static void *shared_new(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); exit(2); }
    memset(p, 0, bytes);
    return p;
}

static void check(int ok, const char *fmt, ...)
{
    va_list ap;
    if (ok) { __atomic_fetch_add(&g->passed, 1, __ATOMIC_SEQ_CST); return; }
    __atomic_fetch_add(&g->failed, 1, __ATOMIC_SEQ_CST);
    fprintf(stderr, "FAIL ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void nap(unsigned ms) { coll_shm__nap_ms(ms); }

static void reset(void)
{
    memset(g->rc, 0, sizeof g->rc);
    memset(g->ms, 0, sizeof g->ms);
    memset(g->done, 0, sizeof g->done);
}

/* Run fn(arg) in a child that leads a process group of its own; after
   limit_ms the whole group is killed. Returns fn's exit status, or -1 if
   it had to be killed, -2 if it died of a signal (a crash). */
static int bounded(const char *what, int (*fn)(void *), void *arg, unsigned limit_ms)
{
    double t0 = now_ms();
    int st;
    pid_t p, w;
    fflush(NULL);
    p = fork();
    if (p == 0) {
        setpgid(0, 0);
        st = fn(arg);
        fflush(NULL);
        _exit(st);
    }
    setpgid(p, p);
    for (;;) {
        w = waitpid(p, &st, WNOHANG);
        if (w == p)
            break;
        if (now_ms() - t0 > limit_ms) {
            kill(-p, SIGKILL);
            kill(p, SIGKILL);
            waitpid(p, &st, 0);
            check(0, "%s: still running after %u ms (hang): killed", what, limit_ms);
            return -1;
        }
        nap(5);
    }
    kill(-p, SIGKILL);                  /* leftovers of the group, if any */
    if (WIFSIGNALED(st)) {
        check(0, "%s: died of signal %d", what, WTERMSIG(st));
        return -2;
    }
    return WEXITSTATUS(st);
}

/* Wait (at most ms) until *flag becomes nonzero. */
static void await_flag(const int *flag, unsigned ms)
{
    double t0 = now_ms();
    while (!__atomic_load_n(flag, __ATOMIC_SEQ_CST) && now_ms() - t0 < ms)
        nap(1);
}

static int group_failed(coll_shm *s)
{
    return __atomic_load_n(&coll_shm__grp(s)->failed, __ATOMIC_SEQ_CST) != 0;
}

/* ---- 1. forged slots and ring counters ------------------------------------ */

enum {
    F_HUGE,         /* DATA|LAST claiming 16 MiB                            */
    F_MAX,          /* DATA|LAST claiming UINT64_MAX                        */
    F_SLOT_PLUS1,   /* one byte more than a slot holds, into a big buffer   */
    F_ZERO,         /* DATA of 0 bytes                                      */
    F_KIND,         /* a kind no sender writes                              */
    F_HEAD,         /* the sender's head 1000 slots ahead of our tail       */
    F_TAIL,         /* the receiver's tail ahead of our head (send side)    */
    F_SEQ,          /* a ring slot numbered far beyond anything sent        */
    F_SHORT,        /* a slot short of full without LAST, into 16 KiB       */
    F_SECOND,       /* a good full slot, then one claiming 16 MiB           */
    F_TOTAL,        /* a good slot, but its message of 1000 B, not 100      */
    F_GOOD,         /* control: a well-formed 100-byte message arrives      */
    /* the fast box: the receive is 100 bytes unless said otherwise */
    F_BOX_NOTOP,    /* a stamp without its top bit                          */
    F_BOX_SEQ,      /* a stamp numbered far beyond anything sent            */
    F_BOX_SEQ_OLD,  /* a stamp numbered before every receive of ours        */
    F_BOX_LEN0,     /* length 0                                             */
    F_BOX_LONG,     /* length COLL_SHM_FBOX_MAX + 1, into a 16 MiB receive  */
    F_BOX_HUGE,     /* length UINT32_MAX, into a 16 MiB receive             */
    F_BOX_GOOD,     /* control: a well-formed 100-byte message arrives      */
    F_COUNT
};
static const char *const f_name[F_COUNT] = {
    "slot bytes = 16 MiB", "slot bytes = UINT64_MAX", "slot bytes = slot size + 1",
    "slot bytes = 0", "slot kind = 77", "head 1000 slots ahead",
    "tail ahead of the sender's head", "slot seq = 1000000",
    "slot of 100 B, not the last", "full slot, then 16 MiB", "slot total = 1000 (of 100)",
    "control: well-formed slot",
    "box stamp without top bit", "box seq = 1000000", "box seq = -100",
    "box len = 0", "box len = max + 1", "box len = UINT32_MAX",
    "control: well-formed box message"
};
#define BIG (16u << 20)

/* The receive under test copies (coll_shm_recv) or folds (irecv_fold,
   what coll.h's zero-copy reduce posts): then guard_fold stands in for
   coll.h's fold and checks every piece the port hands it - inside the
   rogue's channel (but a whole fast-box message, which the port gathers
   first), inside the receive, in order - before it copies it. */
typedef struct forge_arg { int f, fold; } forge_arg;
typedef struct guard {
    const unsigned char *lo, *hi;     /* the channel rank 1 -> 0         */
    unsigned char *buf;
    size_t bytes, done;
    int pieces, bad;
} guard;

static void guard_fold(void *arg, void *piece, const void *in, size_t n)
{
    guard *gd = (guard *)arg;
    const unsigned char *p = (const unsigned char *)in;
    int gathered = n == gd->bytes && n <= COLL_SHM_FBOX_MAX;   /* a box message, copied out */
    gd->pieces++;
    if ((!gathered && (p < gd->lo || p > gd->hi || n > (size_t)(gd->hi - p))) ||
        (unsigned char *)piece != gd->buf + gd->done || n > gd->bytes - gd->done) {
        gd->bad++;                       /* outside: never read it */
        return;
    }
    memcpy(piece, in, n);
    gd->done += n;
}

static int forge_recv(coll_shm *s, unsigned char *buf, size_t want, int fold)
{
    coll_shm__chan *c = coll_shm__chan_of(s, 1, 0);
    guard gd;
    int h, rc;
    if (!fold)
        return coll_shm_recv(s, 1, buf, want);
    memset(&gd, 0, sizeof gd);
    gd.lo = (const unsigned char *)c;
    gd.hi = (const unsigned char *)(c + 1);
    gd.buf = buf;
    gd.bytes = want;
    rc = coll_shm_irecv_fold(s, 1, buf, want, guard_fold, &gd, &h);
    if (rc == 0)
        rc = coll_shm_wait(s, h, 1);
    g->rc[2] = gd.bad;
    g->rc[3] = gd.pieces;
    return rc;
}

/* The size of the receive under test: what the forged message says,
   unless a huge length is the forgery. */
static size_t forge_want(int f)
{
    return f == F_GOOD || f == F_SEQ || f == F_TOTAL || (f >= F_BOX_NOTOP && f != F_BOX_LONG &&
           f != F_BOX_HUGE) ? 100u :
           f == F_SLOT_PLUS1 ? COLL_SHM_SLOT_BYTES + 1u :
           f == F_SHORT ? 2u * COLL_SHM_SLOT_BYTES :
           f == F_SECOND ? 3u * COLL_SHM_SLOT_BYTES : BIG;
}

static int forge_body(int rank, coll_port *pt, void *arg)
{
    int f = ((forge_arg *)arg)->f;
    coll_shm *s = (coll_shm *)pt->ctx;
    if (rank == 1) {                    /* the rogue: writes, never calls the port */
        coll_shm__chan *c = coll_shm__chan_of(s, 1, 0);
        coll_shm__slot *sl = &c->slot[0];
        if (f >= F_BOX_NOTOP) {
            coll_shm__box *b = &c->box[0];
            b->len = f == F_BOX_LEN0 ? 0u : f == F_BOX_LONG ? COLL_SHM_FBOX_MAX + 1u :
                     f == F_BOX_HUGE ? UINT32_MAX : 100u;
            memset(b->data, 0x3c, sizeof b->data);
            memset(c->box[1].data, 0x3c, sizeof c->box[1].data);
            __atomic_store_n(&b->stamp, f == F_BOX_NOTOP ? 5u :
                             COLL_SHM__TOP | (f == F_BOX_SEQ ? 1000000u :
                                              f == F_BOX_SEQ_OLD ? COLL_SHM__SEQ - 99u : 0u),
                             __ATOMIC_SEQ_CST);
        } else if (f == F_TAIL) {
            __atomic_store_n(&coll_shm__chan_of(s, 0, 1)->tail, 5u, __ATOMIC_RELEASE);
        } else if (f == F_SECOND) {
            c->slot[0].kind = COLL_SHM__DATA;
            c->slot[0].bytes = COLL_SHM_SLOT_BYTES;
            c->slot[0].total = c->slot[1].total = forge_want(f);
            memset(c->slot[0].data, 0x3c, COLL_SHM_SLOT_BYTES);
            c->slot[1].kind = COLL_SHM__DATA | COLL_SHM__LAST;
            c->slot[1].bytes = BIG;
            __atomic_store_n(&c->head, 2u, __ATOMIC_RELEASE);
        } else {
            sl->kind = COLL_SHM__DATA | COLL_SHM__LAST;
            sl->bytes = f == F_HUGE ? BIG : f == F_MAX ? UINT64_MAX :
                        f == F_SLOT_PLUS1 ? COLL_SHM_SLOT_BYTES + 1u : f == F_ZERO ? 0u : 100u;
            sl->total = f == F_TOTAL ? 1000u : forge_want(f);
            if (f == F_KIND) sl->kind = 77;
            if (f == F_SHORT) sl->kind = COLL_SHM__DATA;
            if (f == F_SEQ) sl->seq = 1000000u;
            memset(sl->data, 0x3c, 100);
            __atomic_store_n(&c->head, f == F_HEAD ? 1000u : 1u, __ATOMIC_RELEASE);
        }
        coll_shm__ring(s, 0);
        g->done[1] = 1;
        /* stay until rank 0 has answered, so it is not our death it sees */
        await_flag(&g->done[0], 3000);
        return 0;
    } else {
        size_t want = forge_want(f);
        unsigned char *buf = (unsigned char *)malloc(BIG);
        size_t i, touched = 0;
        double t0;
        if (!buf) return 2;
        memset(buf, 0x5a, BIG);
        await_flag(&g->done[1], 3000);
        t0 = now_ms();
        /* F_TAIL: too large for the fast box, so the ring's tail counts */
        g->rc[0] = f == F_TAIL ? coll_shm_send(s, 1, buf, COLL_SHM_FBOX_MAX + 1u)
                               : forge_recv(s, buf, want, ((forge_arg *)arg)->fold);
        g->ms[0] = now_ms() - t0;
        if (f == F_GOOD || f == F_BOX_GOOD) {
            for (i = 0; i < 100; i++) touched += buf[i] != 0x3c;
        } else if (f != F_TAIL) {
            for (i = 0; i < BIG; i++) touched += buf[i] != 0x5a;
        }
        g->rc[1] = (int)touched;        /* bytes written that should not be */
        g->done[0] = 1;
        free(buf);
        return 0;
    }
}

static int forge_case(void *arg)
{
    return coll_shm_spawn(2, forge_body, arg, 2000) == 0 ? 0 : 1;
}

/* Every forgery, received by a copy and by irecv_fold: the same error,
   nothing written (F_SECOND: its good first slot only), and a fold that
   is handed no piece it should not read - none at all for a forgery,
   but the good slot of F_SECOND. */
static void test_forged_slots(void)
{
    forge_arg fa;
    for (fa.fold = 0; fa.fold < 2; fa.fold++)
        for (fa.f = 0; fa.f < F_COUNT; fa.f++) {
            int f = fa.f, st, expect = f == F_GOOD || f == F_BOX_GOOD ? 0 :
                                       f == F_TOTAL ? COLL_ERR_MISMATCH : COLL_ERR_IO;
            int written = f == F_SECOND ? COLL_SHM_SLOT_BYTES : 0;
            int pieces = f == F_SECOND || f == F_GOOD || f == F_BOX_GOOD ? 1 : 0;
            const char *how = fa.fold ? "folded" : "copied";
            if (fa.fold && f == F_TAIL) continue;          /* a send: nothing to fold */
            reset();
            st = bounded(f_name[f], forge_case, &fa, 8000);
            check(st == 0, "%s, %s: a rank failed or crashed (status %d)", f_name[f], how, st);
            check(g->rc[0] == expect, "%s, %s: returned %d, expected %d", f_name[f], how,
                  g->rc[0], expect);
            check(g->rc[1] == written, "%s, %s: %d bytes of the receive buffer written, expected"
                  " %d", f_name[f], how, g->rc[1], written);
            if (fa.fold)
                check(g->rc[2] == 0 && g->rc[3] == pieces, "%s, folded: %d pieces handed to the"
                      " fold (expected %d), %d of them outside", f_name[f], g->rc[3], pieces,
                      g->rc[2]);
            check(g->ms[0] < 1500.0, "%s, %s: took %.0f ms", f_name[f], how, g->ms[0]);
            printf("  forged %-32s %s -> %d (%.1f ms)\n", f_name[f], how, g->rc[0], g->ms[0]);
        }
}

/* ---- 1b. nothing folded after a failed wait ------------------------------ */

/* Rank 0 posts two fold receives; the rogue forges the first one's slot,
   rank 0's wait for it fails; only then does the second message arrive,
   well-formed, in the fast box. coll.h does not wait for a receive it
   still has posted after an error, and a fold's arg lives in its
   request: the port must never call that fold again. */
static int late_fold_body(int rank, coll_port *pt, void *arg)
{
    coll_shm *s = (coll_shm *)pt->ctx;
    coll_shm__chan *c = coll_shm__chan_of(s, 1, 0);
    (void)arg;
    if (rank == 1) {                    /* the rogue */
        await_flag(&g->done[2], 3000);  /* both receives posted */
        c->slot[0].kind = 77;
        c->slot[0].bytes = 100;
        c->slot[0].total = 100;
        __atomic_store_n(&c->head, 1u, __ATOMIC_RELEASE);
        coll_shm__ring(s, 0);
        await_flag(&g->done[3], 3000);  /* the first wait has failed */
        memset(c->box[0].data, 0x3c, sizeof c->box[0].data);
        memset(c->box[1].data, 0x3c, sizeof c->box[1].data);
        c->box[0].len = 100;
        __atomic_store_n(&c->box[0].stamp, COLL_SHM__TOP | 1u, __ATOMIC_SEQ_CST);
        coll_shm__ring(s, 0);
        g->done[1] = 1;
        await_flag(&g->done[0], 3000);
        return 0;
    } else {
        static unsigned char a[100], b[100];
        guard ga, gb;
        int ha, hb;
        memset(&ga, 0, sizeof ga);
        ga.lo = (const unsigned char *)c; ga.hi = (const unsigned char *)(c + 1);
        gb = ga;
        ga.buf = a; gb.buf = b; ga.bytes = gb.bytes = 100;
        g->rc[0] = coll_shm_irecv_fold(s, 1, a, 100, guard_fold, &ga, &ha);
        if (g->rc[0] == 0) g->rc[0] = coll_shm_irecv_fold(s, 1, b, 100, guard_fold, &gb, &hb);
        g->done[2] = 1;
        if (g->rc[0] == 0) g->rc[0] = coll_shm_wait(s, ha, 1);
        g->done[3] = 1;
        await_flag(&g->done[1], 3000);  /* the second message is there */
        g->rc[1] = coll_shm_wait(s, hb, 1);
        g->rc[2] = ga.pieces + gb.pieces;
        g->done[0] = 1;
        return 0;
    }
}

static int late_fold_case(void *arg)
{
    return coll_shm_spawn(2, late_fold_body, arg, 2000) == 0 ? 0 : 1;
}

static void test_late_fold(void)
{
    int st;
    reset();
    st = bounded("late fold", late_fold_case, NULL, 8000);
    check(st == 0 || st == 1, "late fold: a rank crashed or hung (status %d)", st);
    check(g->rc[0] == COLL_ERR_IO, "late fold: the forged receive returned %d, expected %d",
          g->rc[0], COLL_ERR_IO);
    check(g->rc[1] < 0 && g->rc[2] == 0, "late fold: the receive still posted returned %d"
          " after the failed wait, and %d pieces were folded (expected an error, none)",
          g->rc[1], g->rc[2]);
    printf("  fold receive still posted when another's wait failed -> %d, %d pieces folded\n",
           g->rc[1], g->rc[2]);
}

/* ---- 2. the `failed` word: every value but 0 is a negative result -------- */

typedef struct fail_arg { int32_t value; int strip; } fail_arg;

static int failed_body(int rank, coll_port *pt, void *arg)
{
    fail_arg *fa = (fail_arg *)arg;
    coll_shm *s = (coll_shm *)pt->ctx;
    static unsigned char scratch[8192] SHM_ALIGNED;
    static float buf[1000];
    coll_port p = *pt;
    coll_comm c;
    double t0;
    int i;
    if (fa->strip) { p.isend = 0; p.irecv = 0; p.wait = 0; p.sendrecv = 0; }
    if (coll_init(&c, rank, 2, &p, scratch, sizeof scratch) != 0) return 2;
    for (i = 0; i < 1000; i++) buf[i] = 1.0f;
    if (rank == 0)
        __atomic_store_n(&coll_shm__grp(s)->failed, fa->value, __ATOMIC_SEQ_CST);
    else
        while (!group_failed(s)) nap(1);
    t0 = now_ms();
    g->rc[rank] = coll_allreduce(&c, buf, buf, 1000, COLL_FLOAT32, COLL_SUM, COLL_ALGO_RING);
    g->ms[rank] = now_ms() - t0;
    return 0;
}

static int failed_case(void *arg)
{
    /* timeout 0: no deadline could rescue a rank that spins */
    coll_shm_spawn(2, failed_body, arg, 0);
    return 0;
}

static void test_failed_word(void)
{
    static const int32_t values[] = { 1, 2, 7, INT32_MAX, -5000, INT32_MIN, COLL_ERR_TIMEOUT, -77 };
    size_t i;
    int strip, r;
    for (strip = 0; strip < 2; strip++)
        for (i = 0; i < sizeof values / sizeof values[0]; i++) {
            fail_arg fa;
            int32_t v = values[i];
            int expect = (v < 0 && v >= -4095) ? (int)v : COLL_ERR_ABORTED, st;
            fa.value = v; fa.strip = strip;
            reset();
            g->rc[0] = g->rc[1] = 12345;
            st = bounded("failed word", failed_case, &fa, 5000);
            for (r = 0; r < 2; r++)
                check(st == 0 && g->rc[r] == expect,
                      "failed = %ld (%s): rank %d returned %d, expected %d", (long)v,
                      strip ? "send/recv only" : "full port", r, g->rc[r], expect);
            printf("  failed = %-11ld %-15s -> %d, %d\n", (long)v,
                   strip ? "send/recv only" : "full port", g->rc[0], g->rc[1]);
        }
}

/* ---- 3. squatted names --------------------------------------------------- */

/* Makes `name` as a squatter would: mode `mode`, owner uid (or ours if
   -1), the right size for 2 ranks and a header that looks live. */
static int squat(const char *name, mode_t mode, int uid)
{
    size_t size = coll_shm__bytes(2);
    coll_shm v;
    int fd;
    shm_unlink(name);
    fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) return -1;
    if (ftruncate(fd, (off_t)size) != 0 || fchmod(fd, mode) != 0) { close(fd); return -1; }
    v.base = (unsigned char *)mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (v.base == (unsigned char *)MAP_FAILED) { close(fd); return -1; }
    coll_shm__stamp(coll_shm__grp(&v), 2);
    munmap(v.base, size);
    if (uid >= 0 && fchown(fd, (uid_t)uid, (gid_t)uid) != 0) { close(fd); return -1; }
    close(fd);
    return 0;
}

/* The squatted object's `joined` count: nonzero if somebody joined it. */
static long squat_joined(const char *name)
{
    size_t size = coll_shm__bytes(2);
    coll_shm v;
    long j;
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd < 0) return -1;
    v.base = (unsigned char *)mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (v.base == (unsigned char *)MAP_FAILED) return -1;
    j = (long)coll_shm__grp(&v)->joined;
    munmap(v.base, size);
    return j;
}

typedef struct squat_arg { const char *name; int rank; } squat_arg;
static int squat_open(void *arg)
{
    squat_arg *sa = (squat_arg *)arg;
    coll_shm s;
    coll_port port;
    double t0 = now_ms();
    g->rc[0] = coll_shm_open(&s, sa->name, sa->rank, 2, 2000, &port);
    g->ms[0] = now_ms() - t0;
    if (g->rc[0] == 0) coll_shm_close(&s);
    else printf("    rank %d: %s\n", sa->rank, s.why ? s.why : "(no reason given)");
    return 0;
}

static void test_squat(void)
{
    static const struct { mode_t mode; int other_owner; const char *what; } cases[] = {
        { 0666, 0, "mode 0666" }, { 0620, 0, "mode 0620" }, { 0640, 0, "mode 0640" },
        { 0600, 1, "mode 0600, another owner" },
    };
    char name[64];
    size_t i;
    int rank;
    snprintf(name, sizeof name, "/coll-rogue-squat-%d", (int)getpid());
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].other_owner && geteuid() != 0) {
            printf("  squatted %s: not run (needs root to give the object away)\n", cases[i].what);
            continue;
        }
        for (rank = 0; rank < 2; rank++) {
            squat_arg sa;
            int ok = squat(name, cases[i].mode, cases[i].other_owner ? 4242 : -1);
            check(ok == 0, "could not make the squatted object (%s)", cases[i].what);
            if (ok) continue;
            sa.name = name; sa.rank = rank;
            reset();
            bounded("squat", squat_open, &sa, 5000);
            check(g->rc[0] == COLL_SHM_ERR_ACCESS, "squatted %s, rank %d: open returned %d,"
                  " expected COLL_SHM_ERR_ACCESS", cases[i].what, rank, g->rc[0]);
            check(g->ms[0] < 500.0, "squatted %s, rank %d: refusal took %.0f ms",
                  cases[i].what, rank, g->ms[0]);
            check(squat_joined(name) == 0, "squatted %s, rank %d: the object was joined",
                  cases[i].what, rank);
            printf("  squatted %s, rank %d -> %d (%.1f ms)\n", cases[i].what, rank,
                   g->rc[0], g->ms[0]);
            shm_unlink(name);
        }
    }
}

/* ---- 4. a rogue member that plays the join by hand ------------------------ */

static char g_secret[64];      /* same address in every forked process */
#define ROGUE_TEXT  "the rogue's own buffer ........................................."
#define VICTIM_TEXT "a bystander's private memory, not for the group ................"

static void victim_main(void)
{
    memcpy(g_secret, VICTIM_TEXT, sizeof g_secret);
    for (;;) pause();
}

typedef struct rogue_arg { const char *name; int mode; } rogue_arg;
enum { R_NO_CMA, R_FORGED_PID, R_JOINED };

/* The rogue, rank 1 of 2: maps the segment and writes its record itself.
   R_NO_CMA: a bogus probe address, so the probe fails and CMA is not
   agreed - then publishes a CMA slot anyway. R_FORGED_PID: a correct
   probe (CMA agreed), then its pid in the segment changed to a bystander's
   before a CMA slot is published; then it dies with the pid still forged.
   R_JOINED (3 ranks): counts itself twice in `joined` and writes no
   record for rank 2. */
static int rogue_main(rogue_arg *ra)
{
    int n = ra->mode == R_JOINED ? 3 : 2, fd = -1;
    size_t size = coll_shm__bytes(n);
    coll_shm v;
    coll_shm__group *grp;
    coll_shm__rankrec *me;
    double t0 = now_ms();
    static uint64_t probe = 0x70726f6265ull;
    memcpy(g_secret, ROGUE_TEXT, sizeof g_secret);
    memset(&v, 0, sizeof v);
    while (now_ms() - t0 < 3000) {
        struct stat st;
        fd = shm_open(ra->name, O_RDWR, 0);
        if (fd >= 0 && fstat(fd, &st) == 0 && (size_t)st.st_size == size) break;
        if (fd >= 0) close(fd);
        fd = -1;
        nap(1);
    }
    if (fd < 0) return 3;
    v.base = (unsigned char *)mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (v.base == (unsigned char *)MAP_FAILED) return 3;
    v.nranks = n; v.rank = 1; v.size = size;
    grp = coll_shm__grp(&v);
    while (__atomic_load_n(&grp->magic, __ATOMIC_SEQ_CST) != COLL_SHM__MAGIC) nap(1);
    me = coll_shm__rec(&v, 1);
    me->pid = (int32_t)getpid();
    me->probe_addr = ra->mode == R_NO_CMA ? 8u : (uint64_t)(uintptr_t)&probe;
    me->nonce = grp->nonce;
    __atomic_fetch_add(&grp->joined, ra->mode == R_JOINED ? 2u : 1u, __ATOMIC_SEQ_CST);
    coll_shm__ring(&v, 0);
    if (ra->mode == R_JOINED) {
        await_flag(&g->done[0], 3000);
        return 0;
    }
    while (__atomic_load_n(&grp->joined, __ATOMIC_SEQ_CST) < 2) nap(1);
    __atomic_fetch_add(&grp->probed, 1u, __ATOMIC_SEQ_CST);
    coll_shm__ring(&v, 0);
    await_flag(&g->done[2], 3000);           /* rank 0 has joined */
    if (ra->mode == R_FORGED_PID)
        me->pid = g->victim_pid;
    {
        coll_shm__chan *c = coll_shm__chan_of(&v, 1, 0);
        c->slot[0].kind = COLL_SHM__CMA;
        c->slot[0].bytes = sizeof g_secret;
        c->slot[0].addr = (uint64_t)(uintptr_t)g_secret;
        __atomic_store_n(&c->head, 1u, __ATOMIC_RELEASE);
        coll_shm__ring(&v, 0);
    }
    if (ra->mode == R_FORGED_PID) {
        await_flag(&g->done[3], 3000);       /* rank 0 took the message */
        me->pid = 1;                         /* "alive" forever - then die */
    } else
        await_flag(&g->done[0], 3000);
    return 0;
}

static int rogue_case(void *arg)
{
    rogue_arg *ra = (rogue_arg *)arg;
    pid_t victim = -1, rogue;
    coll_shm s;
    coll_port port;
    unsigned char buf[sizeof g_secret];
    double t0;
    int rc, n = ra->mode == R_JOINED ? 3 : 2;
    if (ra->mode == R_FORGED_PID) {
        victim = fork();
        if (victim == 0) victim_main();
        g->victim_pid = (int)victim;
    }
    rogue = fork();
    if (rogue == 0) _exit(rogue_main(ra));
    /* rank 0, honest; after the join no deadline (timeout_ms 0), so only
       the port's checks can end its waits */
    rc = coll_shm_open(&s, ra->name, 0, n, 3000, &port);
    s.timeout_ms = 0;
    g->rc[0] = rc;
    if (rc) {
        printf("    rank 0: %s\n", s.why ? s.why : "(no reason)");
        g->done[0] = 1;
        waitpid(rogue, NULL, 0);
        if (victim > 0) { kill(victim, SIGKILL); waitpid(victim, NULL, 0); }
        return 0;
    }
    g->rc[4] = s.cma;
    g->done[2] = 1;
    memset(buf, 0, sizeof buf);
    t0 = now_ms();
    g->rc[1] = coll_shm_recv(&s, 1, buf, sizeof buf);
    g->ms[1] = now_ms() - t0;
    g->rc[2] = memcmp(buf, VICTIM_TEXT, sizeof buf) == 0 ? 2 :
               memcmp(buf, ROGUE_TEXT, sizeof buf) == 0 ? 1 : 0;
    g->done[3] = 1;
    if (ra->mode == R_FORGED_PID) {
        /* the rogue now dies with pid 1 in its record; nobody reaps it
           while we wait, so it stays a zombie */
        t0 = now_ms();
        g->rc[3] = coll_shm_recv(&s, 1, buf, sizeof buf);
        g->ms[3] = now_ms() - t0;
    }
    g->done[0] = 1;
    coll_shm_close(&s);
    waitpid(rogue, NULL, 0);
    if (victim > 0) { kill(victim, SIGKILL); waitpid(victim, NULL, 0); }
    return 0;
}

static void test_rogue_member(void)
{
    char name[64];
    rogue_arg ra;
    snprintf(name, sizeof name, "/coll-rogue-member-%d", (int)getpid());
    ra.name = name;

    /* CMA never agreed, CMA slot published anyway */
    shm_unlink(name);
    reset();
    ra.mode = R_NO_CMA;
    bounded("CMA slot without agreement", rogue_case, &ra, 8000);
    check(g->rc[0] == 0, "no-CMA rogue: rank 0 could not join (%d)", g->rc[0]);
    check(g->rc[4] == 0, "no-CMA rogue: the probe failed but rank 0 agreed to CMA");
    check(g->rc[1] == COLL_ERR_IO, "no-CMA rogue: a forged CMA slot gave %d, expected %d",
          g->rc[1], COLL_ERR_IO);
    check(g->rc[2] == 0, "no-CMA rogue: the receiver read the sender's memory by CMA");
    printf("  CMA slot when CMA was not agreed -> %d, buffer %s\n", g->rc[1],
           g->rc[2] ? "READ" : "untouched");

    /* CMA agreed; the rogue's pid in the segment rewritten to a bystander's */
    shm_unlink(name);
    reset();
    ra.mode = R_FORGED_PID;
    bounded("forged pid", rogue_case, &ra, 8000);
    check(g->rc[0] == 0, "forged pid: rank 0 could not join (%d)", g->rc[0]);
    if (g->rc[0] == 0 && !g->rc[4]) {
        printf("  forged pid: CMA refused by this kernel: the CMA read is not run\n");
    } else if (g->rc[0] == 0) {
        check(g->rc[1] == 0, "forged pid: the CMA receive returned %d", g->rc[1]);
        check(g->rc[2] != 2, "forged pid: the receiver read the bystander's memory");
        check(g->rc[2] == 1, "forged pid: the message is not the sender's own buffer");
        printf("  CMA with the sender's pid forged in the segment -> %d, read %s\n", g->rc[1],
               g->rc[2] == 2 ? "THE BYSTANDER" : g->rc[2] == 1 ? "the sender" : "garbage");
    }
    check(g->rc[3] < 0 && g->ms[3] < 2000.0,
          "forged pid: the sender died with pid 1 in its record: returned %d after %.0f ms",
          g->rc[3], g->ms[3]);
    printf("  sender died, its record says pid 1 -> %d (%.0f ms)\n", g->rc[3], g->ms[3]);

    /* `joined` counted up by the rogue: the missing record is noticed */
    shm_unlink(name);
    reset();
    ra.mode = R_JOINED;
    bounded("forged joined count", rogue_case, &ra, 8000);
    check(g->rc[0] == COLL_ERR_IO, "forged joined count: open returned %d, expected %d",
          g->rc[0], COLL_ERR_IO);
    printf("  joined counted up without a record -> %d\n", g->rc[0]);
    shm_unlink(name);
}

/* ---- 5. rank 0 killed during the join; the next run ----------------------- */

typedef struct join_arg { const char *name; int rank, n; unsigned timeout; } join_arg;

/* Join, then one all-reduce whose answer is known: sum of rank + 1. */
static int join_main(join_arg *ja)
{
    coll_shm s;
    coll_port port;
    coll_comm c;
    static unsigned char scratch[8192] SHM_ALIGNED;
    static float buf[1000];
    double t0 = now_ms();
    int rc = coll_shm_open(&s, ja->name, ja->rank, ja->n, ja->timeout, &port), i;
    g->ms[ja->rank] = now_ms() - t0;
    if (rc) {
        g->rc[ja->rank] = rc;
        printf("    rank %d: %d, %s\n", ja->rank, rc, s.why ? s.why : "(no reason)");
        return 1;
    }
    coll_init(&c, ja->rank, ja->n, &port, scratch, sizeof scratch);
    for (i = 0; i < 1000; i++) buf[i] = (float)(ja->rank + 1);
    rc = coll_allreduce(&c, buf, buf, 1000, COLL_FLOAT32, COLL_SUM, COLL_ALGO_RING);
    for (i = 0; i < 1000 && rc == 0; i++)
        if (buf[i] != (float)(ja->n * (ja->n + 1) / 2)) rc = COLL_ERR_MISMATCH;
    g->rc[ja->rank] = rc;
    coll_shm_close(&s);
    return rc ? 1 : 0;
}

static pid_t start_rank(const char *name, int rank, int n, unsigned timeout)
{
    pid_t p;
    fflush(NULL);
    p = fork();
    if (p == 0) {
        join_arg ja;
        int rc;
        ja.name = name; ja.rank = rank; ja.n = n; ja.timeout = timeout;
        rc = join_main(&ja);
        fflush(NULL);
        _exit(rc);
    }
    return p;
}

static int exists(const char *name)
{
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd < 0) return 0;
    close(fd);
    return 1;
}

static int killed_rank0_case(void *arg)
{
    const char *name = (const char *)arg;
    pid_t r0, r1, r2, n0;
    int st, ok = 1, left;
    /* run 1: ranks 0 and 1 of 3; rank 2 never comes; rank 0 is killed */
    r0 = start_rank(name, 0, 3, 5000);
    nap(100);
    r1 = start_rank(name, 1, 3, 5000);
    nap(200);
    kill(r0, SIGKILL);
    waitpid(r0, &st, 0);
    left = exists(name);
    check(left, "killed rank 0: no name was left behind - the case tests nothing");
    printf("  rank 0 killed during the join: name left behind: %s\n", left ? "yes" : "no");
    nap(100);
    /* run 2: rank 2 first (finds the dead run's segment), then a new rank 0;
       run 1's rank 1 joins the new segment too */
    r2 = start_rank(name, 2, 3, 5000);
    nap(150);
    n0 = start_rank(name, 0, 3, 5000);
    waitpid(r1, &st, 0);
    ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
    waitpid(r2, &st, 0);
    ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
    waitpid(n0, &st, 0);
    ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
    return ok ? 0 : 1;
}

static void test_killed_rank0(void)
{
    char name[64];
    int st;
    snprintf(name, sizeof name, "/coll-rogue-kill-%d", (int)getpid());
    shm_unlink(name);
    reset();
    st = bounded("rank 0 killed during the join", killed_rank0_case, name, 15000);
    check(st == 0, "the run after a killed rank 0 failed: ranks returned %d %d %d",
          g->rc[0], g->rc[1], g->rc[2]);
    check(g->rc[0] == 0 && g->rc[1] == 0 && g->rc[2] == 0,
          "next run: ranks returned %d %d %d", g->rc[0], g->rc[1], g->rc[2]);
    check(!exists(name), "next run: the name was left behind");
    printf("  next run (old rank 1, new rank 0, rank 2) -> %d %d %d\n",
           g->rc[0], g->rc[1], g->rc[2]);
    shm_unlink(name);
}

/* ---- 6. timeout 0 joins are bounded --------------------------------------- */

static int lonely_case(void *arg)
{
    join_arg *ja = (join_arg *)arg;
    return join_main(ja);
}

static void test_timeout0(void)
{
    char name[64];
    int rank;
    snprintf(name, sizeof name, "/coll-rogue-lonely-%d", (int)getpid());
    for (rank = 0; rank < 2; rank++) {
        join_arg ja;
        shm_unlink(name);
        reset();
        ja.name = name; ja.rank = rank; ja.n = 2; ja.timeout = 0;
        bounded("timeout 0 join", lonely_case, &ja, 5000);
        check(g->rc[rank] == COLL_ERR_TIMEOUT, "timeout 0, rank %d alone: returned %d",
              rank, g->rc[rank]);
        check(g->ms[rank] >= 300.0 && g->ms[rank] < 3000.0,
              "timeout 0, rank %d alone: gave up after %.0f ms (COLL_SHM_JOIN_MS %d)",
              rank, g->ms[rank], COLL_SHM_JOIN_MS);
        check(!exists(name), "timeout 0, rank %d alone: the name was left behind", rank);
        printf("  timeout 0, rank %d of 2 alone -> %d after %.0f ms\n", rank, g->rc[rank],
               g->ms[rank]);
    }
    shm_unlink(name);
}

/* ---- 7. a name that is not a coll segment, and a live group's ------------ */

static void test_not_ours(void)
{
    char name[64];
    coll_shm s;
    coll_port port;
    int fd, rc;
    snprintf(name, sizeof name, "/coll-rogue-other-%d", (int)getpid());
    shm_unlink(name);
    fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    check(fd >= 0, "could not make an unrelated object");
    if (fd < 0) return;
    check(ftruncate(fd, 4096) == 0, "ftruncate");
    close(fd);
    rc = coll_shm_open(&s, name, 0, 2, 300, &port);
    check(rc == COLL_ERR_IO && exists(name),
          "an unrelated object of our own: rank 0 returned %d (expected %d, object kept)",
          rc, COLL_ERR_IO);
    printf("  unrelated object under the name -> %d (%s)\n", rc, s.why ? s.why : "");
    shm_unlink(name);
    /* a group whose creator lives (us): not replaced */
    check(squat(name, 0600, -1) == 0, "could not make a live-looking group");
    rc = coll_shm_open(&s, name, 0, 2, 300, &port);
    check(rc == COLL_ERR_IO && squat_joined(name) == 0,
          "a live group's name: rank 0 returned %d (expected %d, untouched)", rc, COLL_ERR_IO);
    printf("  a live group's name -> %d (%s)\n", rc, s.why ? s.why : "");
    shm_unlink(name);
}

int main(void)
{
    g = (shared *)shared_new(sizeof *g);
    signal(SIGPIPE, SIG_IGN);
    test_forged_slots();
    test_late_fold();
    test_failed_word();
    test_squat();
    test_rogue_member();
    test_killed_rank0();
    test_timeout0();
    test_not_ours();
    printf("shm-rogue: %ld passed, %ld failed\n", g->passed, g->failed);
    return g->failed != 0;
}
