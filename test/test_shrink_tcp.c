/* test_shrink_tcp.c - coll_comm_shrink over the TCP port (ports/coll_tcp.h),
   ranks as fork()ed processes on 127.0.0.1.

   First the port's epochs alone (renew), 3 ranks:
     - after an abort the peers fail at once; after renew every live pair
       exchanges again, in both directions;
     - a message of an older epoch left unread is dropped, whatever its
       length, and so is the rest of a frame a timed-out send left
       mid-way (8 MiB, more than the socket buffers hold);
     - a message from a peer already in a later epoch is kept: a receive
       of the older epoch fails without taking it, and after renew a
       receive of that epoch gets it;
     - after renew a dead peer (its process gone) fails only the calls
       with it: the other pair keeps talking.
   Then the soak: each trial starts 4-16 ranks, all-reduces (float32 sums
   of small integers: exact) of random sizes, 1..4096 floats, and one rank
   fails at a random call and a random point within it: it SIGKILLs
   itself, SIGSTOPs itself (killed at the end of the trial) or falls
   silent (sleeps, never calls again) from inside its port after its k-th
   send of that call, or the parent SIGKILLs it after a random delay.
   Every survivor must then: get an error from the call within the
   deadline, with a coll_last_error that names the victim ("port failed:
   rank V, ..."; the port's wait notices and abort frames carry who waits
   for whom); coll_comm_shrink returns
   COLL_OK, a communicator of the survivors and members equal to the true
   survivor list; and an all-reduce on it equals a plain loop over the
   survivors' inputs. No SIGPIPE is ignored in the ranks: a send to a dead
   peer must not kill a survivor.

   Environment: SHRINK_TRIALS (200), SHRINK_SEED (printed at the start;
   a failing trial prints its own seed, and SHRINK_SEED=that
   SHRINK_TRIALS=1 replays it), SHRINK_DEADLINE_MS (300: the port's
   deadline after init), SHRINK_VERBOSE=1 (a line per trial). Every wait
   of the parent has a timeout, every child has an alarm, every child is
   reaped. Ends with "shrink-tcp: N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#define COLL_IMPLEMENTATION
#include "coll.h"
#define COLL_TCP_IMPLEMENTATION
#include "ports/coll_tcp.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test/coll_test.h"

enum { MAXR = 16, MAXN = 4096 };

static unsigned long long g_seed;
static unsigned g_deadline = 300;
static int g_verbose;

#include "test/soak_victim.h"

static void set_job_token(void)
{
    char hex[33];
    if (getenv("COLL_TCP_TOKEN")) return;
    if (coll_tcp_new_token(hex)) { perror("test_shrink_tcp: token"); exit(2); }
    setenv("COLL_TCP_TOKEN", hex, 1);
}

/* ---- a child's report ------------------------------------------------------ */

typedef struct report {
    unsigned long pass, fail;
    char first[160];           /* the first failed check, for the parent   */
} report;

static report R;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (cond) R.pass++;                                                     \
        else {                                                                  \
            if (!R.fail++) snprintf(R.first, sizeof R.first, __VA_ARGS__);      \
            if (g_verbose) { fprintf(stderr, "  rank %d: ", g_rank);           \
                             fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } \
        }                                                                       \
    } while (0)

static int g_rank = -1;

/* The child's end of its pipe: a ready byte (the soak), then its result. */
static int g_fd = -1;

/* A forked rank's own state, before it runs (soak_spawn). */
static void child_setup(int r, int fd)
{
    memset(&R, 0, sizeof R);
    g_rank = r;
    g_fd = fd;
    alarm(30);                                  /* a backstop, never expected */
}

/* ---- the port's epochs alone, 3 ranks ------------------------------------ */

static int init_rank(coll_tcp *t, int rank, int n, int port)
{
    int rc = coll_tcp_init(t, "127.0.0.1", port, rank, n, 8000);
    CHECK(rc == COLL_OK, "init: %d", rc);
    return rc;
}

/* A ring exchange of `n` bytes over every live pair of `ranks`, checked. */
static void exchange(coll_tcp *t, const int *ranks, int k, size_t n, unsigned salt, const char *what)
{
    unsigned char s[256], r[256];
    int i, me = -1;
    for (i = 0; i < k; i++) if (ranks[i] == t->rank) me = i;
    if (me < 0) return;
    for (i = 1; i < k; i++) {
        int to = ranks[(me + i) % k], from = ranks[(me - i + k) % k], rc;
        size_t j;
        for (j = 0; j < n; j++) s[j] = (unsigned char)(t->rank * 31 + to * 7 + j + salt);
        memset(r, 0, sizeof r);
        rc = coll_tcp_sendrecv(t, to, s, n, from, r, n);
        CHECK(rc == COLL_OK, "%s: sendrecv to %d from %d: %d", what, to, from, rc);
        for (j = 0; j < n; j++)
            if (r[j] != (unsigned char)(from * 31 + t->rank * 7 + j + salt)) break;
        CHECK(rc != COLL_OK || j == n, "%s: byte %lu from rank %d wrong", what, (unsigned long)j, from);
    }
}

static void epochs_rank(int rank, int n, int port, void *arg)
{
    static coll_tcp t;
    static const int all[3] = { 0, 1, 2 }, pair[2] = { 0, 1 };
    coll_port p;
    unsigned char a[100], b[8], got[100];
    unsigned char *big;
    long long t0, ms;
    int rc, i;
    (void)arg;
    if (init_rank(&t, rank, n, port)) return;
    p = coll_tcp_port(&t);
    CHECK(p.renew != NULL, "the TCP port has no renew");
    exchange(&t, all, 3, 64, 1, "epoch 0");

    /* 1. an abort: the peers fail at once, then all renew and talk again */
    if (rank == 0) {
        coll_tcp_abort(&t, COLL_ERR_ABORTED);
        CHECK(coll_tcp_send(&t, 1, a, 4) != COLL_OK, "epoch 0 after abort: a send went");
    } else {
        t0 = coll_tcp__now_ms();
        rc = coll_tcp_recv(&t, 0, got, 4);
        ms = coll_tcp__now_ms() - t0;
        CHECK(rc == COLL_ERR_IO, "recv from a rank that aborted: %d, not IO", rc);
        CHECK(ms < 1000, "noticing the abort took %lld ms", ms);
        CHECK(coll_tcp_send(&t, 3 - rank, a, 4) != COLL_OK, "epoch 0 after a peer's abort: a send went");
    }
    CHECK(p.renew(p.ctx, 1) == COLL_OK, "renew 1");
    CHECK(p.renew(p.ctx, 1) == COLL_ERR_INVAL, "renew to the same epoch accepted");
    exchange(&t, all, 3, 200, 2, "epoch 1, after an abort");

    /* 2. older messages dropped: 100 B in epoch 1 and the rest of an 8 MiB
       send that timed out in epoch 2, both unread by rank 1 */
    big = (unsigned char *)malloc(8u << 20);
    if (!big) { CHECK(0, "out of memory"); return; }
    memset(big, 0xee, 8u << 20);
    if (rank == 0) {
        memset(a, 0xaa, sizeof a);
        CHECK(coll_tcp_send(&t, 1, a, sizeof a) == COLL_OK, "epoch 1: the message left unread");
        CHECK(p.renew(p.ctx, 2) == COLL_OK, "renew 2");
        coll_tcp_set_timeout(&t, 300);
        rc = coll_tcp_send(&t, 1, big, 8u << 20);
        CHECK(rc == COLL_ERR_TIMEOUT, "epoch 2: 8 MiB to a rank not reading: %d, not TIMEOUT", rc);
        CHECK(coll_tcp_send(&t, 2, b, 8) == COLL_OK, "epoch 2: a timeout with rank 1 failed the epoch");
        coll_tcp_set_timeout(&t, 5000);
        CHECK(p.renew(p.ctx, 3) == COLL_OK, "renew 3");
        memset(b, 0xbb, sizeof b);
        CHECK(coll_tcp_send(&t, 1, b, sizeof b) == COLL_OK, "epoch 3: send");
    } else if (rank == 1) {
        CHECK(p.renew(p.ctx, 2) == COLL_OK, "renew 2");
        /* rank 0's 8 MiB times out first: rank 2 says so once it has
           rank 0's next message (a sleep here raced a loaded machine) */
        CHECK(coll_tcp_recv(&t, 2, got, 8) == COLL_OK, "epoch 2: rank 2's word");
        CHECK(p.renew(p.ctx, 3) == COLL_OK, "renew 3");
        memset(got, 0, sizeof got);
        rc = coll_tcp_recv(&t, 0, got, 8);
        CHECK(rc == COLL_OK, "epoch 3: recv: %d", rc);
        for (i = 0; i < 8; i++) if (got[i] != 0xbb) break;
        CHECK(i == 8, "epoch 3: got an older epoch's bytes (%02x at %d)", got[i < 8 ? i : 0], i);
    } else {
        CHECK(p.renew(p.ctx, 2) == COLL_OK, "renew 2");
        CHECK(coll_tcp_recv(&t, 0, got, 8) == COLL_OK, "epoch 2: recv");
        CHECK(coll_tcp_send(&t, 1, got, 8) == COLL_OK, "epoch 2: the word to rank 1");
        CHECK(p.renew(p.ctx, 3) == COLL_OK, "renew 3");
    }
    exchange(&t, all, 3, 256, 3, "epoch 3, after drops");

    /* 3. a newer message held: rank 0 moves to epoch 4 first */
    if (rank == 0) {
        CHECK(p.renew(p.ctx, 4) == COLL_OK, "renew 4");
        memset(a, 0xcc, sizeof a);
        CHECK(coll_tcp_send(&t, 1, a, 16) == COLL_OK, "epoch 4: send");
    } else if (rank == 1) {
        long long until = coll_tcp__now_ms() + 3000;
        coll_tcp_set_timeout(&t, 100);
        do rc = coll_tcp_recv(&t, 0, got, 16);     /* epoch 3: fails, takes nothing */
        while (rc == COLL_ERR_TIMEOUT && coll_tcp__now_ms() < until);
        CHECK(rc == COLL_ERR_IO, "epoch 3 recv of an epoch-4 message: %d, not IO", rc);
        coll_tcp_set_timeout(&t, 5000);
        CHECK(p.renew(p.ctx, 4) == COLL_OK, "renew 4");
        memset(got, 0, sizeof got);
        CHECK(coll_tcp_recv(&t, 0, got, 16) == COLL_OK, "epoch 4: recv");
        for (i = 0; i < 16; i++) if (got[i] != 0xcc) break;
        CHECK(i == 16, "epoch 4: the held message is wrong at %d", i);
    } else {
        CHECK(p.renew(p.ctx, 4) == COLL_OK, "renew 4");
    }
    exchange(&t, all, 3, 32, 4, "epoch 4");

    /* 4. a dead peer fails its calls only: rank 2 leaves */
    CHECK(p.renew(p.ctx, 5) == COLL_OK, "renew 5");
    if (rank == 2) {
        coll_tcp_close(&t);
        free(big);
        return;
    }
    rc = coll_tcp_recv(&t, 2, got, 8);
    CHECK(rc == COLL_ERR_IO, "epoch 5: recv from a rank gone: %d, not IO", rc);
    rc = coll_tcp_send(&t, 2, big, 4u << 20);
    CHECK(rc == COLL_ERR_IO, "epoch 5: send to a rank gone: %d, not IO", rc);
    exchange(&t, pair, 2, 128, 5, "epoch 5, rank 2 gone");
    coll_tcp_close(&t);
    free(big);
}

static void test_epochs(void)
{
    pid_t pid[3];
    int fds[3], status[3], r;
    long long until;
    report rep[3];
    soak_spawn(3, epochs_rank, NULL, &R, sizeof R, pid, fds);
    until = coll_tcp__now_ms() + 20000;
    for (r = 0; r < 3; r++) {
        int ok = soak_collect(fds[r], &rep[r], sizeof rep[r], until);
        close(fds[r]);
        COLL_CHECK_MSG(ok, "epochs: rank %d did not report", r);
        if (!ok) continue;
        coll_test_passed += rep[r].pass;
        coll_test_failed += rep[r].fail;
        if (rep[r].fail) printf("FAIL epochs: rank %d: %lu failed, first: %s\n", r, rep[r].fail, rep[r].first);
    }
    soak_reap_all(pid, 3, status);
    for (r = 0; r < 3; r++)
        COLL_CHECK_MSG(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0,
                       "epochs: rank %d ended with status %d", r, status[r]);
}

/* ---- the soak -------------------------------------------------------------- */


typedef struct trial {
    uint64_t seed;
    int n, victim, mode, call, send;   /* the victim fails in `call`, after `send` sends */
    long delay_ms;                     /* M_PARENT_KILL: after all are ready          */
} trial;

static trial make_trial(uint64_t seed)
{
    trial tr;
    uint64_t x = mix(seed);
    tr.seed = seed;
    /* mostly small worlds (the machine has few cores), now and then 16 */
    tr.n = (x & 3) ? 4 + (int)((x >> 2) % 5) : 9 + (int)((x >> 2) % 8);
    x = mix(x);
    tr.victim = (int)(x % (uint64_t)tr.n);
    tr.mode = (int)((x >> 8) % M_COUNT);
    tr.call = (int)((x >> 16) % 6);
    tr.send = (int)((x >> 24) % 12);
    tr.delay_ms = (long)((x >> 32) % 40);
    return tr;
}



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
    static coll_tcp t;
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
    if (init_rank(&t, rank, n, port)) goto done;
    coll_tcp_set_timeout(&t, g_deadline);
    p = victim_port(&w, coll_tcp_port(&t), rank == tr->victim && tr->mode != M_PARENT_KILL,
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
        t0 = coll_tcp__now_ms();
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
    O.fail_ms = coll_tcp__now_ms() - t0;
    CHECK(rc != COLL_OK, "1000 calls and no failure");
    CHECK(O.fail_ms <= (long long)g_deadline + 1500, "call %d failed after %lld ms (deadline %u)",
          call, O.fail_ms, g_deadline);
    snprintf(O.last_error, sizeof O.last_error, "%s", coll_last_error(&c) ? coll_last_error(&c) : "");
    CHECK(O.last_error[0] != 0, "call %d failed (%d) with coll_last_error empty", call, rc);
    CHECK(named_rank(O.last_error) == tr->victim, "call %d: \"%s\" does not name rank %d, the victim",
          call, O.last_error, tr->victim);

    t0 = coll_tcp__now_ms();
    memset(members, -1, sizeof members);
    rc = coll_comm_shrink(&out, &sp, &c, members, scratch2, sizeof scratch2);
    O.shrink_ms = coll_tcp__now_ms() - t0;
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
    coll_tcp_close(&t);
    O.rep = R;
}

/* One trial: its ranks, the failure, every survivor's outcome checked. */
static void run_trial(int idx, const trial *tr, double *secs)
{
    pid_t pid[MAXR];
    int fds[MAXR], status[MAXR], r, bad = 0;
    soak_out out[MAXR];
    char line[1024];
    size_t at = 0;
    long long t0 = coll_tcp__now_ms(), until;
    unsigned long before = coll_test_failed;
    soak_spawn(tr->n, soak_rank, (void *)tr, &O, sizeof O, pid, fds);
    until = coll_tcp__now_ms() + 10000;        /* the rendezvous and coll_init */
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
    until = coll_tcp__now_ms() + 15000;
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
    *secs = (double)(coll_tcp__now_ms() - t0) / 1000;
    at += (size_t)snprintf(line + at, sizeof line - at,
                           "  trial %d seed %llu: %d ranks, rank %d %s at call %d send %d%s: %.2f s\n",
                           idx, (unsigned long long)tr->seed, tr->n, tr->victim, mode_name[tr->mode],
                           tr->call, tr->send, tr->mode == M_PARENT_KILL ? " (parent, delay)" : "", *secs);
    if (g_verbose || coll_test_failed != before) {
        fputs(line, stdout);
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
    int trials = 200, i;
    double total = 0, worst = 0, per_mode[M_COUNT] = { 0 };
    int n_mode[M_COUNT] = { 0 };
    long long t0;
    g_seed = 20261202;
    if ((e = getenv("SHRINK_SEED")) && *e) g_seed = strtoull(e, NULL, 0);
    if ((e = getenv("SHRINK_TRIALS")) && *e) trials = atoi(e);
    if ((e = getenv("SHRINK_DEADLINE_MS")) && *e) g_deadline = (unsigned)atoi(e);
    if ((e = getenv("SHRINK_VERBOSE")) && *e == '1') g_verbose = 1;
    signal(SIGPIPE, SIG_IGN);                  /* the parent's own pipes only */
    set_job_token();
    printf("coll_comm_shrink over TCP, ranks as processes on 127.0.0.1: seed %llu "
           "(SHRINK_SEED), %d trials (SHRINK_TRIALS), deadline %u ms\n",
           g_seed, trials, g_deadline);
    t0 = coll_tcp__now_ms();
    test_epochs();
    printf("  the port's epochs (renew, drop, hold, dead peer), 3 ranks: %.1f s\n",
           (double)(coll_tcp__now_ms() - t0) / 1000);
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
        printf("\n");
    }
    return coll_test_summary("shrink-tcp");
}
