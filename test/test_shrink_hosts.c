/* test_shrink_hosts.c - coll_comm_shrink over the composite port
   (ports/coll_hosts.h): ranks as fork()ed processes on 127.0.0.1, put on
   emulated hosts by COLL_HOST_ID, so each host's ranks share a shm group
   and the hosts talk TCP.

   First the port's epochs alone (renew, missing), 4 ranks as 2 hosts x 2
   (ranks 0 and 1 on host 0, 2 and 3 on host 1), a shared page as a side
   channel to order the steps without sleeps:
     - renew and missing are set; renew to the same or an earlier epoch is
       COLL_ERR_INVAL, and after close it fails;
     - after an abort the peers fail at once, over shm and over TCP; after
       renew every pair exchanges again, in both directions;
     - a message of an older epoch left unread is dropped (shm and TCP);
     - handles posted in an older epoch end at renew: their wait is
       COLL_ERR_INVAL, and messages sent to them in that epoch land
       nowhere (their buffers stay as they were, a receive of the new
       epoch gets the new message);
     - a message from a peer already in a later epoch is kept: a receive
       of the older epoch fails, after renew the receive gets it;
     - in a renewed epoch, receives from silent peers over both children at
       once fail at the deadline (the composite's own, with the shm
       child's switched off, for the one waited for; the child's for the
       other), but only they: another pair talks on in the same epoch,
       and the messages sent late to the given-up receives never land in
       their buffers;
     - after renew a dead peer (its process gone) fails only the calls
       with it, over shm and over TCP; missing names it through shm.
   Then the soak: each trial starts 4 ranks (2 hosts x 2) or now and then
   6 (2 x 3 or 3 x 2), ranks interleaved (rank r on host r % H) or
   host-major (r / L), and all-reduces float32 sums of small integers
   (exact) of random sizes, 1..4096 floats, while one rank fails at a
   random call and a random point within it: it SIGKILLs itself, SIGSTOPs
   itself (killed at the end of the trial) or falls silent from inside
   its port after its k-th send of that call, or the parent SIGKILLs it
   after a random delay. Every survivor must then get an error from the
   call within the deadline, with coll_last_error non-empty (how many
   name the victim is counted and printed, not checked: the composite's
   missing follows a chain of waits only within one child);
   coll_comm_shrink returns COLL_OK with a communicator of the true
   survivors; and an all-reduce on it equals a plain loop over the
   survivors' inputs.

   Environment: SHRINK_TRIALS (100), SHRINK_SEED (printed at the start; a
   failing trial prints its own seed, and SHRINK_SEED=that
   SHRINK_TRIALS=1 replays it), SHRINK_DEADLINE_MS (300: the port's
   deadline after init), SHRINK_VERBOSE=1 (a line per trial). Every wait
   of the parent has a timeout, every child has an alarm, every child is
   reaped. Ends with "shrink-hosts: N passed, N failed". */
#define _DEFAULT_SOURCE 1
#define COLL_IMPLEMENTATION
#define COLL_HOSTS_IMPLEMENTATION
#include "ports/coll_hosts.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test/coll_test.h"

enum { MAXR = 8, MAXN = 4096 };

static unsigned long long g_seed;
static unsigned g_deadline = 300;
static int g_verbose;

#include "test/soak_victim.h"

static long long now_ms(void) { return coll_hosts__now_ms(); }

static void set_job_token(void)
{
    char hex[33];
    if (getenv("COLL_TCP_TOKEN")) return;
    if (coll_tcp_new_token(hex)) { perror("test_shrink_hosts: token"); exit(2); }
    setenv("COLL_TCP_TOKEN", hex, 1);
}

/* ---- a child's report ------------------------------------------------------ */

typedef struct report {
    unsigned long pass, fail;
    char first[160];           /* the first failed check, for the parent   */
} report;

static report R;
static int g_rank = -1;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (cond) R.pass++;                                                     \
        else {                                                                  \
            if (!R.fail++) snprintf(R.first, sizeof R.first, __VA_ARGS__);      \
            if (g_verbose) { fprintf(stderr, "  rank %d: ", g_rank);           \
                             fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } \
        }                                                                       \
    } while (0)

/* The child's end of its pipe: a ready byte (the soak), then its result. */
static int g_fd = -1;

/* The job's layout: rank r's host, for COLL_HOST_ID. */
static int g_host_of[MAXR];

/* A page shared by the ranks of the epochs test (made before fork): flags
   that order its steps. */
static volatile int *g_board;

static void board_set(int i, int v) { __atomic_store_n(&g_board[i], v, __ATOMIC_SEQ_CST); }

/* Waits (10 s at most) until board[i] >= v. */
static int board_wait(int i, int v)
{
    long long until = now_ms() + 10000;
    while (__atomic_load_n(&g_board[i], __ATOMIC_SEQ_CST) < v) {
        if (now_ms() > until) return 0;
        sleep_ms(1);
    }
    return 1;
}

/* A forked rank's own state, before it runs (soak_spawn): COLL_HOST_ID
   from g_host_of, no LOCAL_* from the caller's environment. */
static void child_setup(int r, int fd)
{
    char id[64];
    snprintf(id, sizeof id, "shrink-hosts-%d-host-%d", (int)getppid(), g_host_of[r]);
    setenv("COLL_HOST_ID", id, 1);
    unsetenv("LOCAL_RANK");
    unsetenv("LOCAL_WORLD_SIZE");
    memset(&R, 0, sizeof R);
    g_rank = r;
    g_fd = fd;
    alarm(40);                                  /* a backstop, never expected */
}

/* ---- the port's epochs alone: 2 hosts x 2 ranks ---------------------------- */

static coll_hosts H;

/* A ring exchange of `n` bytes over every pair of `ranks`, checked. */
static void exchange(const coll_port *p, const int *ranks, int k, size_t n, unsigned salt,
                     const char *what)
{
    unsigned char s[256], r[256];
    int i, me = -1;
    for (i = 0; i < k; i++) if (ranks[i] == H.rank) me = i;
    if (me < 0) return;
    for (i = 1; i < k; i++) {
        int to = ranks[(me + i) % k], from = ranks[(me - i + k) % k], rc;
        size_t j;
        for (j = 0; j < n; j++) s[j] = (unsigned char)(H.rank * 31 + to * 7 + j + salt);
        memset(r, 0, sizeof r);
        rc = p->sendrecv(p->ctx, to, s, n, from, r, n);
        CHECK(rc == COLL_OK, "%s: sendrecv to %d from %d: %d", what, to, from, rc);
        for (j = 0; j < n; j++)
            if (r[j] != (unsigned char)(from * 31 + H.rank * 7 + j + salt)) break;
        CHECK(rc != COLL_OK || j == n, "%s: byte %lu from rank %d wrong", what, (unsigned long)j, from);
    }
}

static int all_are(const unsigned char *b, size_t n, unsigned char v)
{
    size_t i;
    for (i = 0; i < n; i++) if (b[i] != v) return 0;
    return 1;
}

/* board slots of the epochs test */
enum { B_EPOCH0, B_POSTED, B_SENT, B_AHEAD, B_GAVE_UP, B_LATE, B_COUNT };

static void epochs_rank(int rank, int n, int port, void *arg)
{
    static const int all[4] = { 0, 1, 2, 3 }, three[3] = { 0, 1, 2 };
    static unsigned char x0[64], x3[64], y[64], a[64], b[64];
    coll_port p;
    unsigned char m[100];
    long long t0, ms;
    int rc, h0 = -1, h3 = -1, ha = -1, hb = -1;
    (void)arg;
    memset(m, 0, sizeof m);
    rc = coll_hosts_init(&H, "127.0.0.1", port, rank, n, 8000);
    CHECK(rc == COLL_OK, "init: %d (%.100s)", rc, H.why);
    if (rc) return;
    CHECK(coll_hosts_nhosts(&H) == 2 && coll_hosts_local_size(&H) == 2, "layout: %d hosts, %d local",
          coll_hosts_nhosts(&H), coll_hosts_local_size(&H));
    p = coll_hosts_port(&H);
    CHECK(p.renew != NULL && p.missing != NULL, "the composite port has no renew or missing");
    if (!p.renew || !p.missing) { coll_hosts_close(&H); return; }
    CHECK(p.missing(p.ctx, -1) == -1 && p.missing(p.ctx, n) == n && p.missing(p.ctx, rank) == rank,
          "missing of a rank out of range, or of this rank, is not that rank");
    exchange(&p, all, 4, 64, 1, "epoch 0");
    __atomic_add_fetch(&g_board[B_EPOCH0], 1, __ATOMIC_SEQ_CST);

    /* 1. an abort (once every pair has exchanged: in epoch 0 it breaks
       every call): the peers fail at once, then all renew and talk again */
    if (rank == 0) {
        CHECK(board_wait(B_EPOCH0, 4), "epoch 0: the others never finished their exchange");
        coll_hosts_abort(&H, COLL_ERR_ABORTED);
        CHECK(p.send(p.ctx, 1, m, 4) != COLL_OK && p.send(p.ctx, 2, m, 4) != COLL_OK,
              "epoch 0 after abort: a send went");
    } else {
        t0 = now_ms();
        rc = p.recv(p.ctx, 0, m, 4);
        ms = now_ms() - t0;
        CHECK(rc < 0, "recv from a rank that aborted: %d", rc);
        CHECK(ms < 1000, "noticing the abort took %lld ms", ms);
        CHECK(p.send(p.ctx, rank == 1 ? 2 : 1, m, 4) != COLL_OK,
              "epoch 0 after a peer's abort: a send went");
    }
    CHECK(p.renew(p.ctx, 1) == COLL_OK, "renew 1");
    CHECK(p.renew(p.ctx, 1) == COLL_ERR_INVAL, "renew to the same epoch accepted");
    CHECK(p.renew(p.ctx, 0) == COLL_ERR_INVAL, "renew to an earlier epoch accepted");
    exchange(&p, all, 4, 200, 2, "epoch 1, after an abort");

    /* 2. older messages dropped: 100 B in epoch 1 to rank 1 (shm) and
       rank 2 (TCP), never read */
    if (rank == 0) {
        memset(m, 0xaa, sizeof m);
        CHECK(p.send(p.ctx, 1, m, sizeof m) == COLL_OK, "epoch 1: the message left unread (shm)");
        CHECK(p.send(p.ctx, 2, m, sizeof m) == COLL_OK, "epoch 1: the message left unread (TCP)");
    }
    CHECK(p.renew(p.ctx, 2) == COLL_OK, "renew 2");
    if (rank == 0) {
        memset(m, 0xbb, 8);
        CHECK(p.send(p.ctx, 1, m, 8) == COLL_OK && p.send(p.ctx, 2, m, 8) == COLL_OK, "epoch 2: send");
    } else if (rank == 1 || rank == 2) {
        memset(m, 0, sizeof m);
        rc = p.recv(p.ctx, 0, m, 8);
        CHECK(rc == COLL_OK, "epoch 2: recv: %d", rc);
        CHECK(all_are(m, 8, 0xbb), "epoch 2: got an older epoch's bytes (%02x)", m[0]);
    }

    /* 3. handles of an older epoch end at renew: rank 1 posts receives
       from 0 (shm) and 3 (TCP), the two send to them in epoch 2, rank 1
       renews to 3 without another call of the port */
    memset(x0, 0x5a, sizeof x0);
    memset(x3, 0x5a, sizeof x3);
    if (rank == 1) {
        CHECK(p.irecv(p.ctx, 0, x0, 8, &h0) == COLL_OK, "epoch 2: irecv from 0");
        CHECK(p.irecv(p.ctx, 3, x3, 8, &h3) == COLL_OK, "epoch 2: irecv from 3");
        board_set(B_POSTED, 1);
        CHECK(board_wait(B_SENT, 2), "epoch 2: ranks 0 and 3 never sent");
        CHECK(p.renew(p.ctx, 3) == COLL_OK, "renew 3");
        CHECK(p.wait(p.ctx, h0, 0) == COLL_ERR_INVAL && p.wait(p.ctx, h3, 1) == COLL_ERR_INVAL,
              "epoch 3: a handle of epoch 2 still waited for");
    } else if (rank == 0 || rank == 3) {
        CHECK(board_wait(B_POSTED, 1), "epoch 2: rank 1 never posted");
        memset(m, 0x11, 8);
        CHECK(p.send(p.ctx, 1, m, 8) == COLL_OK, "epoch 2: send to the receive renew ends");
        __atomic_add_fetch(&g_board[B_SENT], 1, __ATOMIC_SEQ_CST);
        CHECK(board_wait(B_SENT, 2), "epoch 2: the other sender never sent");
        CHECK(p.renew(p.ctx, 3) == COLL_OK, "renew 3");
        memset(m, 0x22, 8);
        CHECK(p.send(p.ctx, 1, m, 8) == COLL_OK, "epoch 3: send");
    } else
        CHECK(p.renew(p.ctx, 3) == COLL_OK, "renew 3");
    if (rank == 1) {
        int from;
        for (from = 0; from < 4; from += 3) {
            memset(y, 0, sizeof y);
            rc = p.recv(p.ctx, from, y, 8);
            CHECK(rc == COLL_OK && all_are(y, 8, 0x22), "epoch 3: recv from %d: %d, %02x", from, rc, y[0]);
        }
        CHECK(all_are(x0, sizeof x0, 0x5a) && all_are(x3, sizeof x3, 0x5a),
              "a receive voided by renew got bytes");
    }
    exchange(&p, all, 4, 100, 3, "epoch 3");

    /* 4. a newer message held: rank 0 moves to epoch 4 first */
    if (rank == 0) {
        CHECK(p.renew(p.ctx, 4) == COLL_OK, "renew 4");
        memset(m, 0xcc, 16);
        CHECK(p.send(p.ctx, 1, m, 16) == COLL_OK && p.send(p.ctx, 2, m, 16) == COLL_OK, "epoch 4: send");
        board_set(B_AHEAD, 1);
    } else if (rank == 1 || rank == 2) {
        CHECK(board_wait(B_AHEAD, 1), "epoch 3: rank 0 never went ahead");
        coll_hosts_set_timeout(&H, 150);
        rc = p.recv(p.ctx, 0, m, 16);
        CHECK(rc < 0, "epoch 3: a recv took an epoch-4 message: %d", rc);
        coll_hosts_set_timeout(&H, 8000);
        CHECK(p.renew(p.ctx, 4) == COLL_OK, "renew 4");
        memset(m, 0, sizeof m);
        rc = p.recv(p.ctx, 0, m, 16);
        CHECK(rc == COLL_OK && all_are(m, 16, 0xcc), "epoch 4: the held message: %d, %02x", rc, m[0]);
    } else
        CHECK(p.renew(p.ctx, 4) == COLL_OK, "renew 4");
    exchange(&p, all, 4, 32, 4, "epoch 4");

    /* 5. a renewed epoch's deadline fails only what met it: rank 0 waits
       for rank 1 (shm) and rank 2 (TCP) at once, who send nothing - with
       the shm child's own deadline off (s.timeout_ms 0), so that the
       composite's deadline ends the receive waited for, TCP's (a) then
       shm's (b); then rank 3 and rank 0 talk on in the same epoch; the
       late messages of 1 and 2 land nowhere */
    memset(a, 0x5a, sizeof a);
    memset(b, 0x5a, sizeof b);
    if (rank == 0) {
        int k;
        t0 = now_ms();
        for (k = 0; k < 2; k++) {
            unsigned char *ab = k ? a + 32 : a, *bb = k ? b + 32 : b;
            coll_hosts_set_timeout(&H, 200);
            H.s.timeout_ms = 0;
            CHECK(p.irecv(p.ctx, 1, ab, 8, &ha) == COLL_OK && p.irecv(p.ctx, 2, bb, 8, &hb) == COLL_OK,
                  "epoch 4: the receives from silent peers");
            rc = p.wait(p.ctx, k ? ha : hb, 1);
            CHECK(rc < 0, "epoch 4: a receive from a silent peer (%s), both children busy: %d",
                  k ? "shm" : "TCP", rc);
            coll_hosts_set_timeout(&H, 200);          /* the shm deadline back */
            rc = p.wait(p.ctx, k ? hb : ha, 1);
            CHECK(rc < 0, "epoch 4: a receive from a silent peer (%s), alone: %d", k ? "TCP" : "shm", rc);
        }
        ms = now_ms() - t0;
        CHECK(ms < 3000, "epoch 4: four deadlines of 200 ms took %lld ms", ms);
        coll_hosts_set_timeout(&H, 8000);
        board_set(B_GAVE_UP, 1);
        /* the late messages are there: calls of both children now must
           not move them into the receives given up */
        CHECK(board_wait(B_LATE, 2), "epoch 4: the late messages never went");
        memset(m, 0x33, 8);
        CHECK(p.send(p.ctx, 1, m, 8) == COLL_OK, "epoch 4: after a deadline, send to 1 (shm)");
        CHECK(p.send(p.ctx, 3, m, 8) == COLL_OK, "epoch 4: after a deadline, send to 3 (TCP)");
        memset(y, 0, sizeof y);
        rc = p.recv(p.ctx, 3, y, 8);
        CHECK(rc == COLL_OK && all_are(y, 8, 0x44), "epoch 4: after a deadline, recv from 3: %d", rc);
        CHECK(all_are(a, sizeof a, 0x5a) && all_are(b, sizeof b, 0x5a),
              "epoch 4: a receive given up at the deadline got bytes later");
    } else if (rank == 1 || rank == 2) {
        CHECK(board_wait(B_GAVE_UP, 1), "epoch 4: rank 0 never gave up");
        memset(m, 0x66, 8);
        CHECK(p.send(p.ctx, 0, m, 8) == COLL_OK && p.send(p.ctx, 0, m, 8) == COLL_OK,
              "epoch 4: the late messages");
        __atomic_add_fetch(&g_board[B_LATE], 1, __ATOMIC_SEQ_CST);
    } else {
        memset(y, 0, sizeof y);
        rc = p.recv(p.ctx, 0, y, 8);
        CHECK(rc == COLL_OK && all_are(y, 8, 0x33), "epoch 4: recv from 0 after its deadline: %d", rc);
        memset(m, 0x44, 8);
        CHECK(p.send(p.ctx, 0, m, 8) == COLL_OK, "epoch 4: send to 0 after its deadline");
    }
    CHECK(board_wait(B_LATE, 2), "epoch 4: the late messages never went");
    CHECK(p.renew(p.ctx, 5) == COLL_OK, "renew 5");
    exchange(&p, all, 4, 128, 5, "epoch 5, after given-up receives");
    if (rank == 0)
        CHECK(all_are(a, sizeof a, 0x5a) && all_are(b, sizeof b, 0x5a),
              "a receive given up at the deadline got bytes later");

    /* 6. a dead peer fails its calls only: rank 3 leaves */
    CHECK(p.renew(p.ctx, 6) == COLL_OK, "renew 6");
    if (rank == 3) {
        coll_hosts_close(&H);
        CHECK(p.renew(p.ctx, 7) != COLL_OK, "renew after close accepted");
        return;
    }
    if (rank == 0 || rank == 2) {
        rc = p.recv(p.ctx, 3, m, 8);
        CHECK(rc < 0, "epoch 6: recv from a rank gone (%s): %d", rank == 2 ? "shm" : "TCP", rc);
        rc = p.missing(p.ctx, 3);
        CHECK(rank == 0 ? rc >= 0 && rc < n : rc == 3, "epoch 6: missing(3) = %d", rc);
    }
    exchange(&p, three, 3, 64, 6, "epoch 6, rank 3 gone");
    coll_hosts_close(&H);
}

static void test_epochs(void)
{
    pid_t pid[4];
    int fds[4], status[4], r;
    long long until;
    report rep[4];
    for (r = 0; r < 4; r++) g_host_of[r] = r / 2;
    memset((void *)g_board, 0, B_COUNT * sizeof *g_board);
    soak_spawn(4, epochs_rank, NULL, &R, sizeof R, pid, fds);
    until = now_ms() + 30000;
    for (r = 0; r < 4; r++) {
        int ok = soak_collect(fds[r], &rep[r], sizeof rep[r], until);
        close(fds[r]);
        COLL_CHECK_MSG(ok, "epochs: rank %d did not report", r);
        if (!ok) continue;
        coll_test_passed += rep[r].pass;
        coll_test_failed += rep[r].fail;
        if (rep[r].fail) printf("FAIL epochs: rank %d: %lu failed, first: %s\n", r, rep[r].fail, rep[r].first);
    }
    soak_reap_all(pid, 4, status);
    for (r = 0; r < 4; r++)
        COLL_CHECK_MSG(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0,
                       "epochs: rank %d ended with status %d", r, status[r]);
}

/* ---- the soak -------------------------------------------------------------- */


typedef struct trial {
    uint64_t seed;
    int n, hosts, major, victim, mode, call, send;  /* the victim fails in `call`, after `send` sends */
    long delay_ms;                     /* M_PARENT_KILL: after all are ready          */
} trial;

static trial make_trial(uint64_t seed)
{
    trial tr;
    uint64_t x = mix(seed);
    tr.seed = seed;
    /* mostly 2 x 2 (the machine has few cores), now and then 6 ranks */
    if (x & 3) { tr.n = 4; tr.hosts = 2; }
    else { tr.n = 6; tr.hosts = (x & 4) ? 2 : 3; }
    tr.major = (int)((x >> 3) & 1);
    x = mix(x);
    tr.victim = (int)(x % (uint64_t)tr.n);
    tr.mode = (int)((x >> 8) % M_COUNT);
    tr.call = (int)((x >> 16) % 6);
    tr.send = (int)((x >> 24) % 12);
    tr.delay_ms = (long)((x >> 32) % 40);
    return tr;
}


/* Survivors whose coll_last_error names the victim, of all: counted, not
   checked - missing follows a chain of waits only within one child, so a
   survivor whose wait crossed hosts may name the rank it waited for. */
static unsigned long g_named, g_survivors;


/* what a survivor says of its trial, beside its checks */
typedef struct soak_out {
    report rep;
    int failed_call, fail_rc, shrink_rc, out_size, final_rc;
    long long fail_ms, shrink_ms;
    char last_error[96];
} soak_out;

static soak_out O;

static void soak_rank(int rank, int n, int port, void *arg)
{
    const trial *tr = (const trial *)arg;
    static unsigned char scratch[1 << 15], scratch2[1 << 15];
    static float buf[MAXN], want[MAXN];
    coll_comm c, out;
    coll_subport sp;
    coll_port p;
    wrap w;
    int members[2 * MAXR], call, rc = COLL_OK, i, k;
    long long t0 = 0;
    size_t j, cnt = 0;
    memset(&O, 0, sizeof O);
    O.failed_call = -1; O.fail_rc = 1; O.shrink_rc = 1; O.final_rc = 1; O.out_size = -1;
    rc = coll_hosts_init(&H, "127.0.0.1", port, rank, n, 8000);
    CHECK(rc == COLL_OK, "init: %d (%.100s)", rc, H.why);
    if (rc) goto done;
    CHECK(coll_hosts_nhosts(&H) == tr->hosts, "%d hosts, not %d", coll_hosts_nhosts(&H), tr->hosts);
    coll_hosts_set_timeout(&H, g_deadline);
    p = victim_port(&w, coll_hosts_port(&H), rank == tr->victim && tr->mode != M_PARENT_KILL,
                    tr->mode, tr->call, tr->send);
    rc = coll_init(&c, rank, n, &p, scratch, sizeof scratch);
    CHECK(rc == COLL_OK, "coll_init: %d", rc);
    if (rc) goto done;
    {   /* ready: the parent may start its clock (M_PARENT_KILL) */
        char b = 'r';
        if (write(g_fd, &b, 1) != 1) {}
    }
    for (call = 0; call < 1000; call++) {
        if (w.dying && call > tr->call) fail_now(tr->mode);     /* that call sent too little */
        w.call = call; w.sends = 0;
        cnt = call_count(tr->seed, call);
        for (j = 0; j < cnt; j++) buf[j] = input(tr->seed, call, rank, j);
        t0 = now_ms();
        rc = coll_allreduce(&c, buf, buf, cnt, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
        if (rc != COLL_OK) break;
        for (j = 0; j < cnt; j++) {
            float s = 0;
            for (i = 0; i < n; i++) s += input(tr->seed, call, i, j);
            if (buf[j] != s) break;
        }
        CHECK(j == cnt, "call %d (%lu floats, before the failure): wrong at %lu", call,
              (unsigned long)cnt, (unsigned long)j);
    }
    O.failed_call = call;
    O.fail_rc = rc;
    O.fail_ms = now_ms() - t0;
    CHECK(rc != COLL_OK, "1000 calls and no failure");
    CHECK(O.fail_ms <= (long long)g_deadline + 1500, "call %d failed after %lld ms (deadline %u)",
          call, O.fail_ms, g_deadline);
    snprintf(O.last_error, sizeof O.last_error, "%s", coll_last_error(&c) ? coll_last_error(&c) : "");
    CHECK(O.last_error[0] != 0, "call %d failed (%d) with coll_last_error empty", call, rc);

    t0 = now_ms();
    memset(members, -1, sizeof members);
    rc = coll_comm_shrink(&out, &sp, &c, members, scratch2, sizeof scratch2);
    O.shrink_ms = now_ms() - t0;
    O.shrink_rc = rc;
    CHECK(rc == COLL_OK, "coll_comm_shrink: %d (%s)", rc, coll_last_error(&c) ? coll_last_error(&c) : "");
    if (rc) goto done;
    O.out_size = coll_size(&out);
    CHECK(O.out_size == n - 1, "shrink: %d ranks, not %d", O.out_size, n - 1);
    for (i = 0, k = 0; i < n && k < O.out_size; i++) {
        if (i == tr->victim) continue;
        if (members[k] != i) break;
        k++;
    }
    CHECK(O.out_size == n - 1 && k == n - 1, "shrink: members[%d] = %d, not the survivor list", k,
          k < 2 * MAXR ? members[k] : -1);
    if (O.out_size != n - 1 || k != n - 1) goto done;
    CHECK(coll_rank(&out) == rank - (rank > tr->victim), "shrink: rank %d, not %d", coll_rank(&out),
          rank - (rank > tr->victim));
    cnt = call_count(tr->seed, 5000);
    for (j = 0; j < cnt; j++) buf[j] = input(tr->seed, 5000, rank, j);
    for (j = 0; j < cnt; j++) {
        float s = 0;
        for (i = 0; i < n; i++) if (i != tr->victim) s += input(tr->seed, 5000, i, j);
        want[j] = s;
    }
    rc = coll_allreduce(&out, buf, buf, cnt, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
    O.final_rc = rc;
    CHECK(rc == COLL_OK, "all-reduce on the shrunk communicator: %d (%s)", rc,
          coll_last_error(&out) ? coll_last_error(&out) : "");
    for (j = 0; j < cnt && rc == COLL_OK; j++) if (buf[j] != want[j]) break;
    CHECK(rc != COLL_OK || j == cnt, "all-reduce on the shrunk communicator: %lu floats, wrong at %lu",
          (unsigned long)cnt, (unsigned long)j);
done:
    coll_hosts_close(&H);
    O.rep = R;
}

/* One trial: its ranks, the failure, every survivor's outcome checked. */
static void run_trial(int idx, const trial *tr, double *secs)
{
    pid_t pid[MAXR];
    int fds[MAXR], status[MAXR], r, bad = 0, per = tr->n / tr->hosts;
    soak_out out[MAXR];
    long long t0 = now_ms(), until;
    unsigned long before = coll_test_failed;
    for (r = 0; r < tr->n; r++) g_host_of[r] = tr->major ? r / per : r % tr->hosts;
    soak_spawn(tr->n, soak_rank, (void *)tr, &O, sizeof O, pid, fds);
    until = now_ms() + 10000;                  /* the rendezvous and coll_init */
    for (r = 0; r < tr->n; r++) {
        char b;
        if (!soak_collect(fds[r], &b, 1, until)) { bad = 1; break; }
    }
    COLL_CHECK_MSG(!bad, "trial %d (seed %llu): rank %d never got ready", idx,
                   (unsigned long long)tr->seed, r);
    if (!bad && tr->mode == M_PARENT_KILL) {
        sleep_ms(tr->delay_ms);
        kill(pid[tr->victim], SIGKILL);
    }
    until = now_ms() + 15000;
    for (r = 0; r < tr->n; r++) {
        memset(&out[r], 0, sizeof out[r]);
        if (r == tr->victim || bad) continue;
        if (!soak_collect(fds[r], &out[r], sizeof out[r], until)) {
            COLL_CHECK_MSG(0, "trial %d (seed %llu): survivor %d did not report", idx,
                           (unsigned long long)tr->seed, r);
            out[r].rep.fail = 1;
            snprintf(out[r].rep.first, sizeof out[r].rep.first, "no report (died or hung)");
            continue;
        }
        coll_test_passed += out[r].rep.pass;
        coll_test_failed += out[r].rep.fail;
        g_survivors++;
        g_named += named_rank(out[r].last_error) == tr->victim;
    }
    kill(pid[tr->victim], SIGKILL);            /* a stopped or silent one: now */
    for (r = 0; r < tr->n; r++) close(fds[r]);
    soak_reap_all(pid, tr->n, status);
    for (r = 0; r < tr->n; r++) {
        if (r == tr->victim) {
            COLL_CHECK_MSG(WIFSIGNALED(status[r]) && WTERMSIG(status[r]) == SIGKILL,
                           "trial %d (seed %llu): the victim %d ended with status %d", idx,
                           (unsigned long long)tr->seed, r, status[r]);
        } else {
            COLL_CHECK_MSG(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0,
                           "trial %d (seed %llu): survivor %d ended with status %d%s", idx,
                           (unsigned long long)tr->seed, r, status[r],
                           WIFSIGNALED(status[r]) && WTERMSIG(status[r]) == SIGPIPE ? " (SIGPIPE)" : "");
        }
    }
    *secs = (double)(now_ms() - t0) / 1000;
    if (g_verbose || coll_test_failed != before) {
        printf("  trial %d seed %llu: %d ranks on %d hosts (%s), rank %d %s at call %d send %d%s: %.2f s\n",
               idx, (unsigned long long)tr->seed, tr->n, tr->hosts, tr->major ? "host-major" : "interleaved",
               tr->victim, mode_name[tr->mode], tr->call, tr->send,
               tr->mode == M_PARENT_KILL ? " (parent, delay)" : "", *secs);
        for (r = 0; r < tr->n; r++) {
            if (r == tr->victim) continue;
            printf("    rank %d: call %d -> %d in %lld ms [%s]; shrink %d in %lld ms, size %d; all-reduce %d%s%s\n",
                   r, out[r].failed_call, out[r].fail_rc, out[r].fail_ms, out[r].last_error,
                   out[r].shrink_rc, out[r].shrink_ms, out[r].out_size, out[r].final_rc,
                   out[r].rep.fail ? "; FIRST FAILURE: " : "", out[r].rep.fail ? out[r].rep.first : "");
        }
    }
}

int main(void)
{
    const char *e;
    int trials = 100, i;
    double total = 0, worst = 0, per_mode[M_COUNT] = { 0 };
    int n_mode[M_COUNT] = { 0 };
    long long t0;
    void *page;
    g_seed = 20261202;
    if ((e = getenv("SHRINK_SEED")) && *e) g_seed = strtoull(e, NULL, 0);
    if ((e = getenv("SHRINK_TRIALS")) && *e) trials = atoi(e);
    if ((e = getenv("SHRINK_DEADLINE_MS")) && *e) g_deadline = (unsigned)atoi(e);
    if ((e = getenv("SHRINK_VERBOSE")) && *e == '1') g_verbose = 1;
    signal(SIGPIPE, SIG_IGN);                  /* the parent's own pipes only */
    set_job_token();
    page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) { perror("test_shrink_hosts: mmap"); return 2; }
    g_board = (volatile int *)page;
    printf("coll_comm_shrink over the composite port (shm on a host, TCP between; hosts by "
           "COLL_HOST_ID on 127.0.0.1): seed %llu (SHRINK_SEED), %d trials (SHRINK_TRIALS), "
           "deadline %u ms\n", g_seed, trials, g_deadline);
    t0 = now_ms();
    test_epochs();
    printf("  the port's epochs (renew, drop, void, hold, deadline, dead peer, missing), 2 x 2: %.1f s\n",
           (double)(now_ms() - t0) / 1000);
    fflush(stdout);
    for (i = 0; i < trials; i++) {
        /* trial i's seed: SHRINK_SEED=that SHRINK_TRIALS=1 replays it alone */
        trial tr = make_trial(i == 0 ? g_seed : mix(g_seed + (uint64_t)i));
        double s;
        run_trial(i, &tr, &s);
        total += s;
        if (s > worst) worst = s;
        per_mode[tr.mode] += s;
        n_mode[tr.mode]++;
        fflush(stdout);
    }
    if (trials > 0) {
        printf("  %d trials in %.1f s: %.2f s a trial on average, %.2f s at most;", trials, total,
               total / trials, worst);
        for (i = 0; i < M_COUNT; i++)
            if (n_mode[i]) printf(" %s %d x %.2f s", mode_name[i], n_mode[i], per_mode[i] / n_mode[i]);
        printf("\n  coll_last_error named the victim on %lu of %lu survivors\n", g_named, g_survivors);
    }
    return coll_test_summary("shrink-hosts");
}
