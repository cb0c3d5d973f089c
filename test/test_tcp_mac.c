/* test_tcp_mac.c - the TCP port's keyed mode (ports/coll_tcp.h, "THE KEYED
   MODE"): a SipHash-2-4 tag under a key from the job token on every
   message, so that someone on the path without the token cannot make a
   rank return COLL_OK with data the ranks did not send.

   Every rank and relay is a fork()ed process on 127.0.0.1. What is tested:
     - SipHash-2-4 fed in pieces of every size equals the one-shot hash
       (the tags are computed as messages stream);
     - the mode is agreed at the rendezvous: a rank with it and one without
       refuse each other (COLL_ERR_MISMATCH, the line names the keyed
       mode) at once, at 2 and 3 ranks; COLL_TCP_MAC=1 in the environment
       agrees with the flag; COLL_TCP_MAC=yes is refused;
     - with the keyed mode and no relay: all-reduce (int32, float64),
       broadcast, all-gather, reduce-scatter and all-to-all at 8 B, 64 KiB
       and 8 MiB, 2, 3 and 4 ranks, every rank against a plain loop;
     - with the keyed mode, a relay between rank 1 and the master that
       (a) XORs a CRC-32C codeword into the stream - the bytes change and
       every CRC-32C over them stays the same, whatever its seed: a forger
       who recomputes the CRC could do no better -, (b) replays the
       previous call's bytes in place of this call's, (c) drops bytes in
       the middle of a message, or swaps two blocks: the rank that receives
       the damage returns COLL_ERR_CORRUPT and says its MAC failed, every
       rank returns an error by the next call at the latest, within its
       deadline (with COLL_CHECK_CRC's closing round, in the same call),
       and no rank ever returns COLL_OK with wrong data;
     - what the keyed mode adds: the same codeword with the mode off and
       COLL_CHECK_CRC on gives COLL_OK with wrong data (deterministic: the
       offset lands inside a payload), and a replay with the CRC on is
       caught by coll.h's call-seeded CRC.
   Ends with "tcp-mac: N passed, N failed"; TCP_MAC_VERBOSE=1 shows the
   port's log lines. Every wait is bounded: each child has an alarm, each
   loop a deadline. */
#define _POSIX_C_SOURCE 200809L
#define COLL_IMPLEMENTATION
#include "coll.h"

static void test_log(const char *line);
#define COLL_TCP_LOG(t, line) ((void)(t), test_log(line))
#define COLL_TCP_IMPLEMENTATION
#include "ports/coll_tcp.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test_tally.h"

static const char *const TOKEN = "0d5e8a7c61f94b2e9a3c7d1f0b6e4a28";

enum { SAID_MAC = 1, SAID_MODE = 2, SAID_ENV = 4 };
static unsigned g_logged, g_said;            /* this process's log lines    */

static void test_log(const char *line)
{
    const char *v = getenv("TCP_MAC_VERBOSE");
    g_logged++;
    if (strstr(line, "failed its MAC")) g_said |= SAID_MAC;
    if (strstr(line, "the keyed mode (COLL_TCP_MAC)")) g_said |= SAID_MODE;
    if (strstr(line, "COLL_TCP_MAC=yes")) g_said |= SAID_ENV;
    if (v && strcmp(v, "1") == 0) fputs(line, stderr);
}

/* ---- what a child reports ------------------------------------------------ */

typedef struct outcome {
    int rc;                    /* init's code, or the first failing call's   */
    long got;                  /* the first failing call (-1: none, -2: init) */
    int data_ok;               /* no call returned COLL_OK with wrong data   */
    long wrong;                /* calls that did                             */
    long long ms;              /* the whole run                              */
    long passed, failed;       /* the sweep's own checks                     */
    long moved[2];             /* relay: bytes per direction                 */
    int mac_on;                /* the port ran the keyed mode                */
    unsigned long long tags;   /* messages sent with a tag                   */
    unsigned logged, said;
    int exited;
} outcome;

#define CHILD_ALARM_S 30                 /* a backstop on every child */
#include "test_children.h"

/* ---- the ranks --------------------------------------------------------------- */

enum { S_ALLREDUCE, S_BCAST };

typedef struct job {
    int port, relay_port, world;
    unsigned flags_of[4];      /* coll_tcp_init_flags' flags per rank        */
    const char *env_of[4];     /* COLL_TCP_MAC per rank (NULL: unset)        */
    unsigned checks;           /* coll_set_checks                            */
    int scenario, calls;
} job;

static long long input(int rank, size_t i, int call)
{
    return (long long)((rank * 31 + (long long)i * 7 + call * 13) % 23) - 11;
}

static int join(coll_tcp *t, const job *j, int rank)
{
    if (j->env_of[rank]) setenv("COLL_TCP_MAC", j->env_of[rank], 1);
    else unsetenv("COLL_TCP_MAC");
    return coll_tcp_init_flags(t, "127.0.0.1", rank == 1 && j->relay_port ? j->relay_port : j->port,
                               rank, j->world, 3000, TOKEN, j->flags_of[rank]);
}

static void keyed_facts(const coll_tcp *t, outcome *o)
{
    int r;
    o->mac_on = t->mac.on;
    for (r = 0; r < t->nranks; r++) o->tags += t->mac.sent[r];
}

/* `calls` calls of the job's scenario: ring all-reduce of 16 Ki int32, or
   a 1 MiB broadcast from rank 0; each checked against a plain loop. */
static outcome scenario_rank(int rank, void *arg)
{
    static coll_tcp t;
    static unsigned char scratch[1 << 16];
    enum { N = 16384, BN = 1 << 20 };
    static int32_t buf[N];
    static uint8_t bb[BN];
    const job *j = (const job *)arg;
    long long t0 = coll_tcp__now_ms();
    coll_comm c;
    coll_port port;
    outcome o;
    int call, r;
    size_t i;
    memset(&o, 0, sizeof o);
    o.data_ok = 1;
    o.got = -1;
    o.rc = join(&t, j, rank);
    if (o.rc) { o.got = -2; return o; }
    coll_tcp_set_timeout(&t, 1500);
    port = coll_tcp_port(&t);
    if (coll_init(&c, rank, j->world, &port, scratch, sizeof scratch) ||
        coll_set_checks(&c, j->checks)) { o.rc = -9998; return o; }
    for (call = 0; call < j->calls; call++) {
        int rc, bad = 0;
        if (j->scenario == S_ALLREDUCE) {
            for (i = 0; i < N; i++) buf[i] = (int32_t)input(rank, i, call);
            rc = coll_allreduce(&c, buf, buf, N, COLL_INT32, COLL_SUM, COLL_ALGO_RING);
            for (i = 0; rc == COLL_OK && i < N; i++) {
                long long want = 0;
                for (r = 0; r < j->world; r++) want += input(r, i, call);
                if (buf[i] != (int32_t)want) bad = 1;
            }
        } else {
            for (i = 0; i < BN; i++) bb[i] = (uint8_t)(rank == 0 ? input(0, i, call) : 0x55);
            rc = coll_broadcast(&c, bb, BN, COLL_UINT8, 0, COLL_ALGO_AUTO);
            for (i = 0; rc == COLL_OK && i < BN; i++)
                if (bb[i] != (uint8_t)input(0, i, call)) bad = 1;
        }
        if (rc == COLL_OK && bad) { o.data_ok = 0; o.wrong++; }
        if (rc != COLL_OK) { o.rc = rc; o.got = call; break; }
    }
    keyed_facts(&t, &o);
    o.ms = coll_tcp__now_ms() - t0;
    coll_tcp_close(&t);
    return o;
}

/* ---- the sweep: collectives, dtypes and sizes against a plain loop ---------- */

static double *g_src, *g_dst;            /* 8 MiB + slack each, as bytes     */

/* Element i of rank r's input for one check: small integers, exact in
   every dtype used and in every sum of up to 4 of them. */
static long long val(int r, size_t i, int k)
{
    return (long long)((r * 37 + (long long)i * 11 + k * 5) % 29) - 14;
}

static void put(void *p, coll_dtype d, size_t i, long long v)
{
    switch (d) {
    case COLL_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case COLL_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case COLL_FLOAT32: ((float *)p)[i] = (float)v; break;
    case COLL_FLOAT64: ((double *)p)[i] = (double)v; break;
    default: ((uint8_t *)p)[i] = (uint8_t)v; break;
    }
}

static int is(const void *p, coll_dtype d, size_t i, long long v)
{
    switch (d) {
    case COLL_INT32: return ((const int32_t *)p)[i] == (int32_t)v;
    case COLL_INT64: return ((const int64_t *)p)[i] == (int64_t)v;
    case COLL_FLOAT32: return ((const float *)p)[i] == (float)v;
    case COLL_FLOAT64: return ((const double *)p)[i] == (double)v;
    default: return ((const uint8_t *)p)[i] == (uint8_t)v;
    }
}

enum { K_ALLREDUCE_I32, K_ALLREDUCE_F64, K_BCAST_U8, K_ALLGATHER_I64, K_RSCATTER_F32,
       K_ALLTOALL_U8, K_COUNT };
static const char *const kname[K_COUNT] = {
    "allreduce int32", "allreduce float64", "broadcast uint8", "allgather int64",
    "reduce_scatter float32", "alltoall uint8" };
static const coll_dtype kdtype[K_COUNT] = {
    COLL_INT32, COLL_FLOAT64, COLL_UINT8, COLL_INT64, COLL_FLOAT32, COLL_UINT8 };

/* One collective of about `bytes` (the largest buffer a rank holds), its
   result checked element by element. 1 if it returned COLL_OK and matched. */
static int sweep_one(coll_comm *c, int rank, int p, int k, size_t bytes, int call)
{
    coll_dtype d = kdtype[k];
    size_t es = coll_dtype_size(d), n, i, b;
    int r, rc = COLL_ERR_INVAL, root = p - 1;
    long long v;
    switch (k) {
    case K_ALLREDUCE_I32: case K_ALLREDUCE_F64:
        n = bytes / es;
        for (i = 0; i < n; i++) put(g_src, d, i, val(rank, i, call));
        rc = coll_allreduce(c, g_src, g_dst, n, d, COLL_SUM, COLL_ALGO_AUTO);
        for (i = 0; rc == COLL_OK && i < n; i++) {
            for (v = 0, r = 0; r < p; r++) v += val(r, i, call);
            if (!is(g_dst, d, i, v)) return 0;
        }
        break;
    case K_BCAST_U8:
        n = bytes;
        for (i = 0; i < n; i++) put(g_dst, d, i, rank == root ? val(root, i, call) : 99);
        rc = coll_broadcast(c, g_dst, n, d, root, COLL_ALGO_AUTO);
        for (i = 0; rc == COLL_OK && i < n; i++) if (!is(g_dst, d, i, val(root, i, call))) return 0;
        break;
    case K_ALLGATHER_I64:                /* dst: p blocks of n */
        n = bytes / es / (size_t)p; if (!n) n = 1;
        for (i = 0; i < n; i++) put(g_src, d, i, val(rank, i, call));
        rc = coll_allgather(c, g_src, g_dst, n, d, COLL_ALGO_AUTO);
        for (b = 0; rc == COLL_OK && b < (size_t)p; b++)
            for (i = 0; i < n; i++) if (!is(g_dst, d, b * n + i, val((int)b, i, call))) return 0;
        break;
    case K_RSCATTER_F32:                 /* src: p blocks of n; dst: n */
        n = bytes / es / (size_t)p; if (!n) n = 1;
        for (i = 0; i < n * (size_t)p; i++) put(g_src, d, i, val(rank, i, call));
        rc = coll_reduce_scatter(c, g_src, g_dst, n, d, COLL_SUM, COLL_ALGO_AUTO);
        for (i = 0; rc == COLL_OK && i < n; i++) {
            for (v = 0, r = 0; r < p; r++) v += val(r, (size_t)rank * n + i, call);
            if (!is(g_dst, d, i, v)) return 0;
        }
        break;
    default:                             /* alltoall: block b of src goes to rank b */
        n = bytes / es / (size_t)p; if (!n) n = 1;
        for (i = 0; i < n * (size_t)p; i++) put(g_src, d, i, val(rank, i, call));
        rc = coll_alltoall(c, g_src, g_dst, n, d, COLL_ALGO_AUTO);
        for (b = 0; rc == COLL_OK && b < (size_t)p; b++)   /* from rank b, its block `rank` */
            for (i = 0; i < n; i++) if (!is(g_dst, d, b * n + i, val((int)b, (size_t)rank * n + i, call))) return 0;
        break;
    }
    if (rc != COLL_OK) fprintf(stderr, "rank %d: %s of %lu B: %d\n", rank, kname[k], (unsigned long)bytes, rc);
    return rc == COLL_OK;
}

static outcome sweep_rank(int rank, void *arg)
{
    static coll_tcp t;
    static unsigned char scratch[1 << 18];
    static const size_t sizes[3] = { 8, 64 << 10, 8 << 20 };
    const job *j = (const job *)arg;
    long long t0 = coll_tcp__now_ms();
    coll_comm c;
    coll_port port;
    outcome o;
    int k, s, call = 0;
    memset(&o, 0, sizeof o);
    o.data_ok = 1; o.got = -1;
    g_src = (double *)malloc((8 << 20) + 64);
    g_dst = (double *)malloc((8 << 20) + 64);
    if (!g_src || !g_dst) { o.rc = -9997; return o; }
    o.rc = join(&t, j, rank);
    if (o.rc) { o.got = -2; return o; }
    port = coll_tcp_port(&t);
    if (coll_init(&c, rank, j->world, &port, scratch, sizeof scratch)) { o.rc = -9998; return o; }
    for (s = 0; s < 3; s++)
        for (k = 0; k < K_COUNT; k++) {
            if (sweep_one(&c, rank, j->world, k, sizes[s], call++)) o.passed++;
            else { o.failed++; fprintf(stderr, "rank %d: %s of %lu B wrong\n", rank, kname[k], (unsigned long)sizes[s]); }
        }
    keyed_facts(&t, &o);
    o.ms = coll_tcp__now_ms() - t0;
    coll_tcp_close(&t);
    free(g_src); free(g_dst);
    return o;
}

/* ---- the relay between rank 1 and the master -------------------------------- */

/* What the relay does to one direction of the stream (d: 0 rank 1 ->
   master, 1 master -> rank 1), at stream offsets that count every byte
   the sender wrote, the handshake included. */
enum { OP_PASS, OP_CODEWORD, OP_REPLAY, OP_DROP, OP_SWAP };

typedef struct relay_cfg {
    int listen_port, to_port, ready_fd;
    int dir, op;
    long at, len;              /* CODEWORD: at; DROP, SWAP: [at, at + len) (and the next len) */
    long from;                 /* REPLAY: bytes [at, at + len) are those of [from, from + len) */
} relay_cfg;

/* A CRC-32C codeword: the generator polynomial x^32 + ... + 1 in the
   CRC's reflected bit order. XORed into a message anywhere, it leaves
   every CRC-32C of that message as it was, whatever the CRC's seed. */
static const unsigned char CODEWORD[5] = { 0xf1, 0x76, 0xec, 0x05, 0x01 };

/* Byte b at stream offset pos of the damaged direction: what goes out
   (appended to out, *n its length). */
static void transform(const relay_cfg *rc, unsigned char *saved, unsigned char *held,
                      long pos, unsigned char b, unsigned char *out, size_t *n, int *done)
{
    switch (rc->op) {
    case OP_CODEWORD:
        if (pos >= rc->at && pos < rc->at + 5) { b ^= CODEWORD[pos - rc->at]; *done = 1; }
        break;
    case OP_REPLAY:
        if (pos >= rc->from && pos < rc->from + rc->len) saved[pos - rc->from] = b;
        if (pos >= rc->at && pos < rc->at + rc->len) { b = saved[pos - rc->at]; *done = 1; }
        break;
    case OP_DROP:
        if (pos >= rc->at && pos < rc->at + rc->len) { *done = 1; return; }
        break;
    case OP_SWAP:
        if (pos >= rc->at && pos < rc->at + rc->len) { held[pos - rc->at] = b; return; }
        if (pos == rc->at + 2 * rc->len - 1) {   /* B is out: A after it */
            out[(*n)++] = b;
            memcpy(out + *n, held, (size_t)rc->len);
            *n += (size_t)rc->len;
            *done = 1;
            return;
        }
        break;
    default:
        break;
    }
    out[(*n)++] = b;
}

static outcome relay(int idx, void *arg)
{
    const relay_cfg *rc = (const relay_cfg *)arg;
    struct sockaddr_storage a;
    long long deadline = coll_tcp__now_ms() + 15000;
    long pos[2] = { 0, 0 };
    int fd[2] = { -1, -1 }, open_dir[2] = { 1, 1 }, lfd, d, done = 0;
    unsigned char *saved = NULL, *held = NULL, *out;
    outcome o;
    (void)idx;
    memset(&o, 0, sizeof o);
    o.rc = rc->op == OP_PASS ? 0 : 1;                /* 1 until the damage is done */
    if (rc->op == OP_REPLAY && !(saved = (unsigned char *)malloc((size_t)rc->len))) { o.rc = 5; return o; }
    if (rc->op == OP_SWAP && !(held = (unsigned char *)malloc((size_t)rc->len))) { o.rc = 5; return o; }
    if (!(out = (unsigned char *)malloc(4096 + (size_t)rc->len + 16))) { o.rc = 5; return o; }
    loopback(&a, rc->listen_port);
    lfd = coll_tcp__listen(&a, sizeof(struct sockaddr_in), 4);
    if (lfd < 0) { o.rc = 2; return o; }
    if (write(rc->ready_fd, "r", 1) != 1) { o.rc = 4; return o; }
    while (fd[0] < 0 && coll_tcp__left(deadline) > 0) {
        if (coll_tcp__poll1(lfd, POLLIN, deadline)) break;
        fd[0] = accept(lfd, NULL, NULL);
    }
    close(lfd);
    if (fd[0] < 0) { o.rc = 3; return o; }
    coll_tcp__tune(fd[0]);
    {
        struct sockaddr_storage m;
        loopback(&m, rc->to_port);
        fd[1] = coll_tcp__connect(&m, sizeof(struct sockaddr_in), deadline);
    }
    if (fd[1] < 0) { close(fd[0]); o.rc = 3; return o; }
    /* direction d carries bytes from fd[d] to fd[1 - d] */
    while ((open_dir[0] || open_dir[1]) && coll_tcp__left(deadline) > 0) {
        struct pollfd p[2];
        int m = 0, which[2];
        for (d = 0; d < 2; d++) if (open_dir[d]) {
            p[m].fd = fd[d]; p[m].events = POLLIN; p[m].revents = 0; which[m++] = d;
        }
        if (poll(p, (nfds_t)m, coll_tcp__left(deadline)) <= 0) break;
        for (m = m - 1; m >= 0; m--) {
            unsigned char b[4096];
            size_t n = 0;
            ssize_t k, i;
            d = which[m];
            if (!p[m].revents) continue;
            k = recv(fd[d], b, sizeof b, MSG_DONTWAIT);
            if (k < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (k <= 0) { open_dir[d] = 0; shutdown(fd[1 - d], SHUT_WR); continue; }
            if (d == rc->dir && rc->op != OP_PASS) {
                for (i = 0; i < k; i++) transform(rc, saved, held, pos[d] + i, b[i], out, &n, &done);
            } else {
                memcpy(out, b, (size_t)k);
                n = (size_t)k;
            }
            pos[d] += k;
            if (n && coll_tcp__write_all(fd[1 - d], out, n, deadline)) {
                open_dir[d] = 0;
                shutdown(fd[d], SHUT_RD);
            }
        }
    }
    if (done) o.rc = 0;
    o.moved[0] = pos[0]; o.moved[1] = pos[1];
    close(fd[0]); close(fd[1]);
    free(saved); free(held); free(out);
    return o;
}

/* Runs `j` with rank 1 behind a relay doing `rc`; the ranks' outcomes in o. */
static outcome run_relayed(job *j, relay_cfg *rc, outcome *o)
{
    child rel, ranks[4];
    outcome orl;
    int pfd[2], r;
    j->port = coll_tcp_free_port(); j->relay_port = coll_tcp_free_port();
    if (pipe(pfd) < 0) exit(2);
    rc->listen_port = j->relay_port; rc->to_port = j->port; rc->ready_fd = pfd[1];
    rel = spawn(relay, 0, rc);
    if (!wait_ready(pfd[0], 5000)) { fprintf(stderr, "the relay did not start\n"); exit(2); }
    for (r = 0; r < j->world; r++) ranks[r] = spawn(scenario_rank, r, j);
    for (r = 0; r < j->world; r++) o[r] = reap(ranks[r]);
    orl = reap(rel);
    close(pfd[0]); close(pfd[1]);
    return orl;
}

/* Handshake bytes before the first message: rank 1 -> master, hello 52
   and proof 8; master -> rank 1, reply 40, ack 8, table 20 per rank + 8. */
static long handshake(int dir, int world)
{
    return dir == 0 ? 60 : 56 + 20L * world;
}

/* Bytes one call sends in direction `dir`, from a run through a relay
   that passes everything. */
static long per_call(job j, int dir)
{
    relay_cfg rc;
    outcome o[4], orl;
    memset(&rc, 0, sizeof rc);
    rc.op = OP_PASS;
    j.calls = 1;
    orl = run_relayed(&j, &rc, o);
    CHECK(orl.exited && o[0].rc == COLL_OK && o[1].rc == COLL_OK && o[0].data_ok,
          "calibration run failed (%d %d)", o[0].rc, o[1].rc);
    return orl.moved[dir] - handshake(dir, j.world);
}

/* An attack on call `call` of 4; with the keyed mode on, every rank must
   fail (the damaged direction's receiver with COLL_ERR_CORRUPT, saying
   so) by the next call, never with wrong data, within its deadline. */
static void attack(int world, int scenario, int dir, int op, int call, long len, unsigned mac,
                   unsigned checks, const char *what, outcome *res)
{
    job j;
    relay_cfg rc;
    outcome o[4], orl;
    long c;
    int r, receiver = dir == 0 ? 0 : 1;
    memset(&j, 0, sizeof j);
    memset(&rc, 0, sizeof rc);
    j.world = world; j.scenario = scenario; j.checks = checks; j.calls = 4;
    for (r = 0; r < world; r++) j.flags_of[r] = mac;
    c = per_call(j, dir);
    CHECK(c > 64, "%s: a call sends %ld bytes that way", what, c);
    rc.dir = dir; rc.op = op;
    rc.at = handshake(dir, world) + call * c + c / 3;
    rc.len = len;
    if (op == OP_REPLAY) {
        rc.at = handshake(dir, world) + call * c;
        rc.from = rc.at - c;
        rc.len = c;
    }
    orl = run_relayed(&j, &rc, o);
    CHECK(orl.exited && orl.rc == 0, "%s: the relay did its damage (code %d, %ld bytes passed)",
          what, orl.rc, orl.moved[dir]);
    printf("    %s (%ld B a call):", what, c);
    for (r = 0; r < world; r++) {
        printf(" rank %d %s %d", r, o[r].got >= 0 ? "failed call" : "ok", o[r].got >= 0 ? (int)o[r].got : 0);
        if (o[r].got >= 0) printf(" (%d)", o[r].rc);
        if (o[r].wrong) printf(" [%ld wrong]", o[r].wrong);
        res[r] = o[r];
    }
    printf("\n");
    if (!mac) return;
    for (r = 0; r < world; r++) {
        CHECK(o[r].exited, "%s: rank %d did not report", what, r);
        CHECK(o[r].mac_on, "%s: rank %d did not run the keyed mode", what, r);
        CHECK(o[r].data_ok, "%s: rank %d returned COLL_OK with wrong data", what, r);
        /* without the closing round (COLL_CHECK_CRC), a rank whose own
           result the damage did not reach may finish that call first */
        CHECK(o[r].got >= call && o[r].got <= call + !(checks & COLL_CHECK_CRC) && o[r].rc != COLL_OK,
              "%s: rank %d failed in call %ld (code %d), the damage was in call %d",
              what, r, o[r].got, o[r].rc, call);
        CHECK(o[r].ms < 8000, "%s: rank %d took %lld ms", what, r, o[r].ms);
    }
    CHECK(o[receiver].rc == COLL_ERR_CORRUPT && o[receiver].got == call,
          "%s: rank %d, which received the damage, returned %d in call %ld", what, receiver,
          o[receiver].rc, o[receiver].got);
    CHECK(o[receiver].said & SAID_MAC, "%s: rank %d did not say that a MAC failed", what, receiver);
}

/* ---- scenarios ---------------------------------------------------------------- */

static void test_siphash_pieces(void)
{
    static unsigned char msg[1 << 12];
    unsigned seed = 12345;
    int trial, bad = 0;
    size_t i;
    for (i = 0; i < sizeof msg; i++) msg[i] = (unsigned char)(i * 131 + 7);
    for (trial = 0; trial < 2000; trial++) {
        size_t n = (size_t)trial < 80 ? (size_t)trial : (seed = seed * 1103515245u + 12345u) % sizeof msg;
        coll_tcp__sip s;
        size_t at = 0;
        coll_tcp__sip_init(&s, 0x0706050403020100ull + (uint64_t)trial, 0x0f0e0d0c0b0a0908ull);
        while (at < n) {
            size_t piece = (seed = seed * 1103515245u + 12345u) >> 16;
            piece = piece % 19;
            if (piece > n - at) piece = n - at;
            coll_tcp__sip_add(&s, msg + at, piece);
            at += piece;
        }
        if (coll_tcp__sip_end(&s) != coll_tcp_siphash(0x0706050403020100ull + (uint64_t)trial,
                                                      0x0f0e0d0c0b0a0908ull, msg, n)) bad++;
    }
    CHECK(bad == 0, "SipHash in pieces differs from the one-shot hash in %d of 2000", bad);
    {   /* the reference vector, and 63 bytes fed 1 + 62 */
        uint64_t k0 = 0x0706050403020100ull, k1 = 0x0f0e0d0c0b0a0908ull;
        unsigned char m[64];
        coll_tcp__sip s;
        for (i = 0; i < 64; i++) m[i] = (unsigned char)i;
        CHECK(coll_tcp_siphash(k0, k1, m, 63) == 0x958a324ceb064572ull, "siphash of 63 bytes");
        coll_tcp__sip_init(&s, k0, k1);
        coll_tcp__sip_add(&s, m, 1);
        coll_tcp__sip_add(&s, m + 1, 62);
        CHECK(coll_tcp__sip_end(&s) == 0x958a324ceb064572ull, "siphash of 1 + 62 bytes");
    }
}

/* Ranks that disagree on the mode refuse each other at the rendezvous. */
static void test_modes(void)
{
    job j;
    child ch[4];
    outcome o[4];
    int r;

    memset(&j, 0, sizeof j);
    j.world = 2; j.scenario = S_ALLREDUCE; j.checks = COLL_CHECK_CALLS; j.calls = 1;
    j.port = coll_tcp_free_port();
    j.flags_of[0] = COLL_TCP_MAC;
    for (r = 0; r < 2; r++) ch[r] = spawn(scenario_rank, r, &j);
    for (r = 0; r < 2; r++) o[r] = reap(ch[r]);
    for (r = 0; r < 2; r++) {
        CHECK(o[r].rc == COLL_ERR_MISMATCH && o[r].got == -2, "keyed master, plain worker: rank %d got %d", r, o[r].rc);
        CHECK(o[r].said & SAID_MODE, "keyed master, plain worker: rank %d did not name the keyed mode", r);
        CHECK(o[r].ms < 2500, "keyed master, plain worker: rank %d took %lld ms", r, o[r].ms);
    }

    /* 3 ranks, the last one keyed through the environment */
    j.world = 3; j.port = coll_tcp_free_port();
    j.flags_of[0] = 0; j.env_of[2] = "1";
    for (r = 0; r < 3; r++) ch[r] = spawn(scenario_rank, r, &j);
    for (r = 0; r < 3; r++) o[r] = reap(ch[r]);
    CHECK(o[0].rc == COLL_ERR_MISMATCH && o[2].rc == COLL_ERR_MISMATCH,
          "plain ranks 0, 1 and keyed rank 2: %d, %d", o[0].rc, o[2].rc);
    CHECK((o[0].said & SAID_MODE) && (o[2].said & SAID_MODE), "rank 0 or 2 did not name the keyed mode");
    for (r = 0; r < 3; r++) {
        CHECK(o[r].rc != COLL_OK && o[r].got == -2, "3 ranks, one keyed: rank %d got %d", r, o[r].rc);
        CHECK(o[r].ms < 4000, "3 ranks, one keyed: rank %d took %lld ms", r, o[r].ms);
    }

    /* the environment and the flag agree */
    j.world = 2; j.port = coll_tcp_free_port();
    j.flags_of[0] = 0; j.env_of[0] = "1"; j.flags_of[1] = COLL_TCP_MAC; j.env_of[1] = "0"; j.env_of[2] = NULL;
    j.calls = 2;
    for (r = 0; r < 2; r++) ch[r] = spawn(scenario_rank, r, &j);
    for (r = 0; r < 2; r++) o[r] = reap(ch[r]);
    for (r = 0; r < 2; r++)
        CHECK(o[r].rc == COLL_OK && o[r].data_ok && o[r].mac_on && o[r].tags > 0,
              "COLL_TCP_MAC=1 and the flag: rank %d got %d (keyed %d, %llu tags)", r, o[r].rc,
              o[r].mac_on, o[r].tags);

    /* a value that is neither 0 nor 1 */
    j.port = coll_tcp_free_port();
    j.env_of[0] = "yes"; j.flags_of[1] = 0; j.env_of[1] = NULL;
    ch[0] = spawn(scenario_rank, 0, &j);
    o[0] = reap(ch[0]);
    CHECK(o[0].rc == COLL_ERR_INVAL && (o[0].said & SAID_ENV) && o[0].ms < 500,
          "COLL_TCP_MAC=yes: %d after %lld ms", o[0].rc, o[0].ms);
}

static void test_sweep(int world)
{
    job j;
    child ch[4];
    outcome o[4];
    int r;
    memset(&j, 0, sizeof j);
    j.world = world; j.port = coll_tcp_free_port();
    for (r = 0; r < world; r++) j.flags_of[r] = COLL_TCP_MAC;
    for (r = 0; r < world; r++) ch[r] = spawn(sweep_rank, r, &j);
    for (r = 0; r < world; r++) o[r] = reap(ch[r]);
    for (r = 0; r < world; r++) {
        CHECK(o[r].exited && o[r].rc == COLL_OK, "sweep, %d ranks: rank %d got %d", world, r, o[r].rc);
        CHECK(o[r].mac_on && o[r].tags > 0, "sweep, %d ranks: rank %d sent %llu tagged messages",
              world, r, o[r].tags);
        CHECK(o[r].passed == 3 * K_COUNT && o[r].failed == 0,
              "sweep, %d ranks: rank %d: %ld right, %ld wrong", world, r, o[r].passed, o[r].failed);
        g_pass += o[r].passed;
    }
}

static void test_attacks(void)
{
    outcome res[4];
    const unsigned on = COLL_CHECK_CALLS;
    attack(2, S_ALLREDUCE, 0, OP_CODEWORD, 1, 0, COLL_TCP_MAC, on, "codeword, rank 1 -> master, 2 ranks", res);
    attack(3, S_ALLREDUCE, 1, OP_CODEWORD, 1, 0, COLL_TCP_MAC, on, "codeword, master -> rank 1, 3 ranks", res);
    attack(4, S_ALLREDUCE, 1, OP_CODEWORD, 2, 0, COLL_TCP_MAC, on, "codeword in call 2, 4 ranks", res);
    attack(2, S_ALLREDUCE, 0, OP_REPLAY, 2, 0, COLL_TCP_MAC, on, "call 1 replayed as call 2, 2 ranks", res);
    attack(3, S_ALLREDUCE, 1, OP_REPLAY, 2, 0, COLL_TCP_MAC, on, "call 1 replayed as call 2, 3 ranks", res);
    attack(4, S_ALLREDUCE, 1, OP_REPLAY, 1, 0, COLL_TCP_MAC, on, "call 0 replayed as call 1, 4 ranks", res);
    attack(2, S_BCAST, 1, OP_DROP, 1, 1000, COLL_TCP_MAC, on, "1000 bytes dropped, broadcast, 2 ranks", res);
    attack(3, S_ALLREDUCE, 1, OP_DROP, 1, 8, COLL_TCP_MAC, on, "8 bytes dropped, 3 ranks", res);
    attack(2, S_BCAST, 1, OP_SWAP, 1, 4096, COLL_TCP_MAC, on, "two 4 KiB blocks swapped, broadcast, 2 ranks", res);
    attack(4, S_BCAST, 1, OP_SWAP, 2, 4096, COLL_TCP_MAC, on, "two 4 KiB blocks swapped, broadcast, 4 ranks", res);
    /* the keyed mode with the CRC on as well: the same verdicts */
    attack(2, S_ALLREDUCE, 0, OP_CODEWORD, 1, 0, COLL_TCP_MAC, on | COLL_CHECK_CRC,
           "codeword, keyed mode + CRC, 2 ranks", res);
    attack(2, S_BCAST, 1, OP_DROP, 1, 1000, COLL_TCP_MAC, on | COLL_CHECK_CRC,
           "1000 bytes dropped, broadcast, keyed mode + CRC, 2 ranks", res);
    attack(3, S_BCAST, 1, OP_SWAP, 1, 4096, COLL_TCP_MAC, on | COLL_CHECK_CRC,
           "two 4 KiB blocks swapped, keyed mode + CRC, 3 ranks", res);
}

/* What the keyed mode adds: without it, a CRC-preserving change passes. */
static void test_without(void)
{
    outcome res[4];
    int r, wrong = 0, ok = 1;
    attack(2, S_ALLREDUCE, 0, OP_CODEWORD, 1, 0, 0, COLL_CHECK_CALLS | COLL_CHECK_CRC,
           "codeword, plain mode + CRC, 2 ranks", res);
    for (r = 0; r < 2; r++) {
        if (res[r].wrong) wrong++;
        if (res[r].got >= 0) ok = 0;
    }
    CHECK(ok && wrong > 0, "plain mode + CRC, codeword: expected COLL_OK with wrong data (%d ranks wrong, "
          "all ok %d)", wrong, ok);
    attack(2, S_ALLREDUCE, 0, OP_REPLAY, 2, 0, 0, COLL_CHECK_CALLS | COLL_CHECK_CRC,
           "replay, plain mode + CRC, 2 ranks", res);
    for (r = 0; r < 2; r++)
        CHECK(res[r].data_ok && res[r].got == 2, "plain mode + CRC, replay: rank %d failed call %ld (%d), "
              "%ld wrong", r, res[r].got, res[r].rc, res[r].wrong);
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    (void)argc; (void)argv;
    (void)listener_of; (void)sleep_ms;       /* test_children.h's, unused here */
    printf("TCP port, keyed mode, on 127.0.0.1:\n");
    fflush(stdout);
    RUN(test_siphash_pieces(), "SipHash-2-4 fed in pieces");
    RUN(test_modes(), "ranks that disagree on the mode");
    RUN(test_sweep(2), "6 collectives x 8 B, 64 KiB, 8 MiB, 2 ranks");
    RUN(test_sweep(3), "6 collectives x 8 B, 64 KiB, 8 MiB, 3 ranks");
    RUN(test_sweep(4), "6 collectives x 8 B, 64 KiB, 8 MiB, 4 ranks");
    RUN(test_attacks(), "a relay forges, replays, drops, swaps (keyed)");
    RUN(test_without(), "the same without the keyed mode, CRC on");
    printf("tcp-mac: %ld passed, %ld failed\n", g_pass, g_fail);
    return g_fail != 0;
}
