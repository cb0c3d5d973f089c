/* test_hosts.c - one rank of a job over the composite port (ports/coll_hosts.h),
   launched by test/hosts_netns.sh on emulated hosts (network namespaces).

   test_hosts --env        MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK as torchrun;
                           TEST_LAYOUT: the host the launcher put each rank on
                           ("0,1,0,1"), which the port is never told and
                           must find out for itself. Checks, on this rank:
     - the rendezvous: nhosts, every rank's host index (the launcher's hosts
       renumbered by lowest rank), local rank and size;
     - point-to-point: a message to and from every peer, its bytes, and
       where it went: the TCP port's own byte counters (kept inside
       coll_tcp.h) must grow by exactly the bytes to and from peers on
       other hosts, the composite's shm counters by those on this host;
     - every collective (all-reduce, reduce-scatter, all-gather, broadcast,
       reduce, gather, scatter, all-to-all, barrier) with AUTO, all-reduce
       also ring, at several counts and roots, every element against a
       plain loop over what every rank contributed;
     - a sub-communicator of this host's ranks (coll_comm_split by host
       index): its all-reduce right, and not one byte through TCP;
     - coll_hier.h's forms where that header is in the tree (TEST_HOSTS_HIER).
     Prints "result PASSED FAILED".
   test_hosts --env-loop   all-reduces with a 1.5 s deadline until a call fails
                           (the launcher kills a rank), then "loop RC MS".
   test_hosts --env-init   init only: "init RC" (the bad-LOCAL_RANK job). */
#define COLL_IMPLEMENTATION
#define COLL_HOSTS_IMPLEMENTATION
#include "ports/coll_hosts.h"
#include "test/check_port.h"

#ifdef TEST_HOSTS_HIER
#include "coll_hier.h"
#endif

#include <signal.h>

enum { MAXP = 8, BIG = 1 << 18, MAXC = 6000 };

static coll_hosts H;
static int P, R;
static int layout[MAXP];
static unsigned char scratch[1 << 17];
static int32_t src[MAXP * MAXC], dst[MAXP * MAXC], big_a[BIG], big_b[BIG];

/* Rank r's j-th input element: small, different per rank and element. */
static int32_t val(int r, size_t j) { return (int32_t)((r + 1) * 7 + (int)(j % 101) * (r + 3)); }

static long long now_ms(void) { return coll_hosts__now_ms(); }

static int parse_layout(void)
{
    const char *s = getenv("TEST_LAYOUT");
    int n = 0;
    while (s && *s && n < MAXP) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s) return 0;
        layout[n++] = (int)v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

static void check_rendezvous(void)
{
    int r, q, hosts = 0, seen[MAXP], local = 0, lsize = 0;
    int renum[MAXP];
    for (r = 0; r < P; r++) {
        for (q = 0; q < r; q++) if (layout[q] == layout[r]) break;
        renum[r] = q == r ? hosts++ : renum[q];
        seen[r] = 0;
    }
    (void)seen;
    for (r = 0; r < P; r++) {
        if (layout[r] == layout[R]) { if (r < R) local++; lsize++; }
        COLL_CHECK_MSG(coll_hosts_host_of(&H, r) == renum[r],
                       "rank %d: host of rank %d is %d, the launcher put it on %d", R, r,
                       coll_hosts_host_of(&H, r), renum[r]);
    }
    COLL_CHECK_MSG(coll_hosts_nhosts(&H) == hosts, "rank %d: %d hosts found, %d made", R,
                   coll_hosts_nhosts(&H), hosts);
    COLL_CHECK_EQ(coll_hosts_host(&H), renum[R]);
    COLL_CHECK_EQ(coll_hosts_local_rank(&H), local);
    COLL_CHECK_EQ(coll_hosts_local_size(&H), lsize);
    COLL_CHECK_EQ(coll_hosts_host_of(&H, P), -1);
    /* every emulated host runs on this kernel: the shm child spins only
       while all the job's ranks have a core, not just its host's */
    COLL_CHECK_EQ(coll_hosts_machine_ranks(&H), P);
    if (H.shm_up) COLL_CHECK_EQ(H.s.over, P > sysconf(_SC_NPROCESSORS_ONLN));
}

/* Every pair exchanges one message each way (sendrecv in rounds d = 1..p-1)
   and then one by isend/irecv; the bytes must go where the hosts say. */
static void check_p2p(coll_port *port)
{
    enum { N = 3000 };
    static int32_t out[N], in[N];
    unsigned long long t0s = H.t.bytes_sent, t0r = H.t.bytes_received;
    unsigned long long s0s = H.shm.bytes_sent, s0r = H.shm.bytes_received;
    unsigned long long remote = 0, local = 0;
    int d, i, bad = 0, rc;
    for (d = 1; d < P; d++) {
        int to = (R + d) % P, from = (R - d + P) % P;
        size_t n = (size_t)(100 * d + 1), m = n;   /* peer `to` receives n from us */
        for (i = 0; i < (int)n; i++) out[i] = val(R, (size_t)i) ^ (to << 20);
        memset(in, 0, sizeof in);
        rc = port->sendrecv(port->ctx, to, out, n * 4, from, in, m * 4);
        COLL_CHECK_MSG(rc == 0, "rank %d: sendrecv %d/%d: %d", R, to, from, rc);
        for (i = 0; i < (int)m; i++) bad += in[i] != (val(from, (size_t)i) ^ (R << 20));
        if (layout[to] == layout[R]) local += n * 4; else remote += n * 4;
        if (layout[from] == layout[R]) local += m * 4; else remote += m * 4;
    }
    /* isend/irecv to every peer at once (up to 7 peers: 14 handles) */
    if (P <= 8) {
        int hs[MAXP], hr[MAXP], k = 0, q;
        static int32_t ins[MAXP][64], outs[64];
        for (i = 0; i < 64; i++) outs[i] = val(R, (size_t)i + 7);
        for (q = 0; q < P; q++) {
            if (q == R) continue;
            rc = port->irecv(port->ctx, q, ins[q], sizeof ins[q], &hr[q]);
            COLL_CHECK_MSG(rc == 0, "rank %d: irecv from %d: %d", R, q, rc);
            rc = port->isend(port->ctx, q, outs, sizeof outs, &hs[q]);
            COLL_CHECK_MSG(rc == 0, "rank %d: isend to %d: %d", R, q, rc);
            k++;
            if (layout[q] == layout[R]) local += 2 * sizeof outs; else remote += 2 * sizeof outs;
        }
        k = 0;
        for (q = P - 1; q >= 0; q--) {
            if (q == R) continue;
            COLL_CHECK_EQ(port->wait(port->ctx, hs[q], 1), 0);
            COLL_CHECK_EQ(port->wait(port->ctx, hr[q], 1), 0);
            for (i = 0; i < 64; i++) bad += ins[q][i] != val(q, (size_t)i + 7);
        }
        COLL_CHECK_EQ(port->wait(port->ctx, 99, 0), COLL_ERR_INVAL);
        COLL_CHECK_EQ(port->send(port->ctx, R, outs, 4), COLL_ERR_INVAL);
        COLL_CHECK_EQ(port->send(port->ctx, P, outs, 4), COLL_ERR_INVAL);
    }
    COLL_CHECK_MSG(bad == 0, "rank %d: %d words wrong point-to-point", R, bad);
    COLL_CHECK_MSG(H.t.bytes_sent + H.t.bytes_received - t0s - t0r == remote,
                   "rank %d: TCP moved %llu bytes, peers on other hosts account for %llu", R,
                   H.t.bytes_sent + H.t.bytes_received - t0s - t0r, remote);
    COLL_CHECK_MSG(H.shm.bytes_sent + H.shm.bytes_received - s0s - s0r == local,
                   "rank %d: shm carried %llu bytes, peers on this host account for %llu", R,
                   H.shm.bytes_sent + H.shm.bytes_received - s0s - s0r, local);
}

static int check_elems(const char *what, size_t count, int root, const int32_t *got,
                       const int32_t *want, size_t n)
{
    size_t i, bad = 0, first = 0;
    for (i = 0; i < n; i++)
        if (got[i] != want[i]) { if (!bad) first = i; bad++; }
    COLL_CHECK_MSG(bad == 0, "rank %d: %s count %zu root %d: %zu of %zu wrong, first at %zu "
                   "(%d, want %d)", R, what, count, root, bad, n, first,
                   bad ? got[first] : 0, bad ? want[first] : 0);
    return bad == 0;
}

static int32_t want[MAXP * MAXC];

#ifdef TEST_HOSTS_HIER
static coll_hier *HH;          /* set: the calls go to coll_hier.h's forms */
#define CALL(flat, hier) (HH ? (hier) : (flat))
#else
#define CALL(flat, hier) (flat)
#endif

/* All nine collectives at `count`, algorithm `algo` where it applies. */
static void collectives(coll_comm *c, int p, int me, const int *world_of, size_t count,
                        coll_algo algo, const char *tag)
{
    size_t i, n = count;
    int q, rc, root = (int)(count % (size_t)p);
    char what[64];
#define RANKVAL(sub, j) val(world_of[sub], (j))
    /* all-reduce */
    for (i = 0; i < n; i++) src[i] = RANKVAL(me, i);
    for (i = 0; i < n; i++) { int32_t s = 0; for (q = 0; q < p; q++) s += RANKVAL(q, i); want[i] = s; }
    rc = CALL(coll_allreduce(c, src, dst, n, COLL_INT32, COLL_SUM, algo),
              coll_hier_allreduce(HH, src, dst, n, COLL_INT32, COLL_SUM));
    snprintf(what, sizeof what, "%s allreduce", tag);
    COLL_CHECK_MSG(rc == 0, "rank %d: %s: %d", R, what, rc);
    check_elems(what, n, -1, dst, want, n);
#ifdef TEST_HOSTS_HIER
    /* hosts of equal size, more than one, more than one rank each: the
       hierarchical phases, not a flat road */
    if (HH && coll_hosts_nhosts(&H) > 1 && coll_hosts_local_size(&H) > 1)
        COLL_CHECK_MSG(coll_hier_road(HH) == COLL_HIER_PHASES,
                       "rank %d: hier allreduce of %zu took road %d", R, n, coll_hier_road(HH));
#endif
    /* reduce-scatter */
    for (i = 0; i < n * (size_t)p; i++) src[i] = RANKVAL(me, i);
    for (i = 0; i < n; i++) {
        int32_t s = 0;
        for (q = 0; q < p; q++) s += RANKVAL(q, (size_t)me * n + i);
        want[i] = s;
    }
    rc = CALL(coll_reduce_scatter(c, src, dst, n, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO),
              coll_hier_reduce_scatter(HH, src, dst, n, COLL_INT32, COLL_SUM));
    snprintf(what, sizeof what, "%s reduce_scatter", tag);
    COLL_CHECK_MSG(rc == 0, "rank %d: %s: %d", R, what, rc);
    check_elems(what, n, -1, dst, want, n);
    /* all-gather */
    for (i = 0; i < n; i++) src[i] = RANKVAL(me, i + 5);
    for (q = 0; q < p; q++) for (i = 0; i < n; i++) want[(size_t)q * n + i] = RANKVAL(q, i + 5);
    rc = CALL(coll_allgather(c, src, dst, n, COLL_INT32, COLL_ALGO_AUTO),
              coll_hier_allgather(HH, src, dst, n, COLL_INT32));
    snprintf(what, sizeof what, "%s allgather", tag);
    COLL_CHECK_MSG(rc == 0, "rank %d: %s: %d", R, what, rc);
    check_elems(what, n, -1, dst, want, n * (size_t)p);
    /* broadcast */
    for (i = 0; i < n; i++) dst[i] = me == root ? RANKVAL(root, i + 9) : -1;
    for (i = 0; i < n; i++) want[i] = RANKVAL(root, i + 9);
    rc = CALL(coll_broadcast(c, dst, n, COLL_INT32, root, COLL_ALGO_AUTO),
              coll_hier_broadcast(HH, dst, n, COLL_INT32, root));
    snprintf(what, sizeof what, "%s broadcast", tag);
    COLL_CHECK_MSG(rc == 0, "rank %d: %s: %d", R, what, rc);
    check_elems(what, n, root, dst, want, n);
    /* reduce */
    for (i = 0; i < n; i++) src[i] = RANKVAL(me, i + 3);
    for (i = 0; i < n; i++) { int32_t s = 0; for (q = 0; q < p; q++) s += RANKVAL(q, i + 3); want[i] = s; }
    rc = CALL(coll_reduce(c, src, dst, n, COLL_INT32, COLL_SUM, root, COLL_ALGO_AUTO),
              coll_hier_reduce(HH, src, dst, n, COLL_INT32, COLL_SUM, root));
    snprintf(what, sizeof what, "%s reduce", tag);
    COLL_CHECK_MSG(rc == 0, "rank %d: %s: %d", R, what, rc);
    if (me == root) check_elems(what, n, root, dst, want, n);
    /* gather */
    for (i = 0; i < n; i++) src[i] = RANKVAL(me, i + 11);
    for (q = 0; q < p; q++) for (i = 0; i < n; i++) want[(size_t)q * n + i] = RANKVAL(q, i + 11);
    rc = CALL(coll_gather(c, src, dst, n, COLL_INT32, root, COLL_ALGO_AUTO),
              coll_hier_gather(HH, src, dst, n, COLL_INT32, root));
    snprintf(what, sizeof what, "%s gather", tag);
    COLL_CHECK_MSG(rc == 0, "rank %d: %s: %d", R, what, rc);
    if (me == root) check_elems(what, n, root, dst, want, n * (size_t)p);
    /* scatter */
    for (i = 0; i < n * (size_t)p; i++) src[i] = me == root ? RANKVAL(root, i + 13) : -1;
    for (i = 0; i < n; i++) want[i] = RANKVAL(root, (size_t)me * n + i + 13);
    rc = CALL(coll_scatter(c, src, dst, n, COLL_INT32, root, COLL_ALGO_AUTO),
              coll_hier_scatter(HH, src, dst, n, COLL_INT32, root));
    snprintf(what, sizeof what, "%s scatter", tag);
    COLL_CHECK_MSG(rc == 0, "rank %d: %s: %d", R, what, rc);
    check_elems(what, n, root, dst, want, n);
    /* all-to-all: block j of rank q's src goes to rank j */
    for (i = 0; i < n * (size_t)p; i++) src[i] = RANKVAL(me, i + 17);
    for (q = 0; q < p; q++)
        for (i = 0; i < n; i++) want[(size_t)q * n + i] = RANKVAL(q, (size_t)me * n + i + 17);
    rc = CALL(coll_alltoall(c, src, dst, n, COLL_INT32, COLL_ALGO_AUTO),
              coll_hier_alltoall(HH, src, dst, n, COLL_INT32));
    snprintf(what, sizeof what, "%s alltoall", tag);
    COLL_CHECK_MSG(rc == 0, "rank %d: %s: %d", R, what, rc);
    check_elems(what, n, -1, dst, want, n * (size_t)p);
    /* barrier */
    rc = CALL(coll_barrier(c, COLL_ALGO_AUTO), coll_hier_barrier(HH));
    COLL_CHECK_MSG(rc == 0, "rank %d: %s barrier: %d", R, tag, rc);
#undef RANKVAL
}

/* A large all-reduce: segments in flight through both children at once. */
static void big_allreduce(coll_comm *c, coll_algo algo, const char *tag)
{
    size_t i;
    int q, rc;
    for (i = 0; i < BIG; i++) big_a[i] = val(R, i);
    for (i = 0; i < BIG; i++) {
        int32_t s = 0;
        for (q = 0; q < P; q++) s += val(q, i);
        big_b[i] = s;
    }
    rc = coll_allreduce(c, big_a, big_a, BIG, COLL_INT32, COLL_SUM, algo);
    COLL_CHECK_MSG(rc == 0, "rank %d: %s 1 MiB allreduce: %d", R, tag, rc);
    check_elems(tag, BIG, -1, big_a, big_b, BIG);
}

/* The ranks of this host, split off: right answers, and nothing by TCP. */
static void check_local_sub(coll_comm *world)
{
    static coll_comm sub;
    static coll_subport sp;
    static int members[2 * MAXP];
    static unsigned char sub_scratch[1 << 16];
    int world_of[MAXP], rc, n, i;
    unsigned long long tcp0, shm0;
    rc = coll_comm_split(&sub, &sp, world, coll_hosts_host(&H), R, members, sub_scratch,
                         sizeof sub_scratch);
    COLL_CHECK_MSG(rc == 0, "rank %d: split by host: %d", R, rc);
    if (rc) return;
    n = coll_size(&sub);
    COLL_CHECK_EQ(n, coll_hosts_local_size(&H));
    COLL_CHECK_EQ(coll_rank(&sub), coll_hosts_local_rank(&H));
    for (i = 0; i < n; i++) world_of[i] = members[i];
    tcp0 = H.t.bytes_sent + H.t.bytes_received;
    shm0 = H.shm.bytes_sent + H.shm.bytes_received;
    collectives(&sub, n, coll_rank(&sub), world_of, 1000, COLL_ALGO_AUTO, "host-local");
    COLL_CHECK_MSG(H.t.bytes_sent + H.t.bytes_received == tcp0,
                   "rank %d: %llu bytes went by TCP inside one host", R,
                   H.t.bytes_sent + H.t.bytes_received - tcp0);
    COLL_CHECK_MSG(n == 1 || H.shm.bytes_sent + H.shm.bytes_received > shm0,
                   "rank %d: nothing went by shm inside a host of %d", R, n);
}

#ifdef TEST_HOSTS_HIER
/* coll_hier.h over the world, keyed by the host index the port learned:
   the same nine collectives, the same plain-loop answers. */
static void check_hier(coll_comm *world, const int *world_of)
{
    static coll_hier hh;
    static unsigned char hs[1 << 17], work[1 << 20];
    static const size_t counts[] = { 1, 37, 1500 };
    size_t i;
    int rc = coll_hier_init(&hh, world, coll_hosts_host(&H), hs, sizeof hs, work, sizeof work);
    COLL_CHECK_MSG(rc == 0, "rank %d: coll_hier_init: %d", R, rc);
    if (rc) return;
    HH = &hh;
    for (i = 0; i < sizeof counts / sizeof *counts; i++)
        collectives(world, P, R, world_of, counts[i], COLL_ALGO_AUTO, "hier");
    HH = NULL;
}
#endif

/* The port checker (test/check_port.h): every collective and algorithm,
   the error cases; this process is one of its ranks. */
typedef struct one_rank { int rank; coll_port port; } one_rank;

static int one_launch(void *user, int nranks, coll_port_check_body body, void *arg)
{
    one_rank *me = (one_rank *)user;
    (void)nranks;
    return body(me->rank, &me->port, arg) != 0;
}

static double now_s(void) { return (double)coll_hosts__now_ms() / 1000; }

static void port_checker(const coll_port *port)
{
    static coll_port_check ck;
    static unsigned char arena[8 << 20];
    one_rank me;
    me.rank = R;
    me.port = *port;
    memset(&ck, 0, sizeof ck);
    ck.name = "hosts"; ck.nranks = P;
    ck.launch = one_launch; ck.launch_user = &me;
    ck.big = 4099;
    ck.arena = arena;
    ck.arena_bytes = coll_port_check_arena_bytes(P, ck.big) / (size_t)P;
    ck.private_arena = 1;
    ck.now = now_s; ck.prompt_s = 5;
    COLL_CHECK_MSG(ck.arena_bytes <= sizeof arena, "arena too small: %zu", ck.arena_bytes);
    if (ck.arena_bytes <= sizeof arena) coll_port_check_run(&ck);
}

static int env_main(void)
{
    static coll_comm c;
    coll_port port;
    int rc = coll_hosts_init_env(&H, 20000), world_of[MAXP], i;
    static const size_t counts[] = { 1, 37, 1500 };
    P = H.nranks; R = H.rank;
    COLL_CHECK_MSG(rc == COLL_OK, "rank %d: init: %s (%d): %s", R, coll_result_str(rc), rc, H.why);
    COLL_CHECK_MSG(parse_layout() == P && P <= MAXP, "rank %d: TEST_LAYOUT does not list %d ranks",
                   R, P);
    if (rc == COLL_OK && P <= MAXP) {
        check_rendezvous();
        port = coll_hosts_port(&H);
        check_p2p(&port);
        rc = coll_init(&c, R, P, &port, scratch, sizeof scratch);
        COLL_CHECK_EQ(rc, 0);
        for (i = 0; i < P; i++) world_of[i] = i;
        for (i = 0; rc == 0 && i < (int)(sizeof counts / sizeof *counts); i++)
            collectives(&c, P, R, world_of, counts[i], COLL_ALGO_AUTO, "flat AUTO");
        if (rc == 0) {
            collectives(&c, P, R, world_of, 700, COLL_ALGO_RING, "flat ring");
            big_allreduce(&c, COLL_ALGO_AUTO, "flat AUTO");
            big_allreduce(&c, COLL_ALGO_RING, "flat ring");
            check_local_sub(&c);
#ifdef TEST_HOSTS_HIER
            check_hier(&c, world_of);
#endif
            if (getenv("TEST_PORT_CHECK")) port_checker(&port);
        }
        printf("traffic rank %d: tcp %llu msgs %llu B out, shm %llu msgs %llu B out, "
               "%llu waits polled both\n", R, H.tcp.sent, H.tcp.bytes_sent, H.shm.sent,
               H.shm.bytes_sent, H.both);
    }
    coll_hosts_close(&H);
    printf("result %lu %lu\n", coll_test_passed, coll_test_failed);
    return coll_test_failed != 0;
}

static int env_loop_main(void)
{
    static coll_comm c;
    static int32_t buf[1 << 16];
    coll_port port;
    long long t0 = 0, start;
    int rc = coll_hosts_init_env(&H, 20000);
    if (rc) { printf("init failed: %d %s\n", rc, H.why); return 1; }
    coll_hosts_set_timeout(&H, 1500);
    port = coll_hosts_port(&H);
    coll_init(&c, H.rank, H.nranks, &port, scratch, sizeof scratch);
    printf("looping %ld\n", (long)getpid());
    fflush(stdout);
    start = now_ms();
    while (rc == COLL_OK && now_ms() - start < 30000) {
        t0 = now_ms();
        rc = coll_allreduce(&c, buf, buf, 1 << 16, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO);
    }
    printf("loop %d %lld\n", rc, now_ms() - t0);
    coll_hosts_close(&H);
    return 0;
}

/* Init alone, which must end in TEST_EXPECT ("mismatch", "inval" or
   "ok") on this rank; then, if it came up, one all-reduce. */
static int env_init_main(void)
{
    const char *e = getenv("TEST_EXPECT");
    int want = !e ? -1 : strcmp(e, "mismatch") == 0 ? COLL_ERR_MISMATCH
             : strcmp(e, "inval") == 0 ? COLL_ERR_INVAL : strcmp(e, "ok") == 0 ? COLL_OK : -1;
    int rc = coll_hosts_init_env(&H, 10000);
    R = H.rank;
    COLL_CHECK_MSG(want != -1, "TEST_EXPECT must be mismatch, inval or ok");
    COLL_CHECK_MSG(rc == want, "rank %s: init returned %s (%d), expected %s (%d): %s",
                   getenv("RANK"), coll_result_str(rc), rc, coll_result_str(want), want, H.why);
    COLL_CHECK_MSG(rc == COLL_OK || H.why[0], "rank %s: init failed without a reason",
                   getenv("RANK"));
    if (rc == COLL_OK) {
        static coll_comm c;
        int32_t x = 1;
        coll_port port = coll_hosts_port(&H);
        COLL_CHECK_EQ(coll_init(&c, H.rank, H.nranks, &port, scratch, sizeof scratch), 0);
        COLL_CHECK_EQ(coll_allreduce(&c, &x, &x, 1, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO), 0);
        COLL_CHECK_EQ(x, H.nranks);
    }
    if (rc != COLL_OK) printf("init %s: %s\n", coll_result_str(rc), H.why);
    coll_hosts_close(&H);
    printf("result %lu %lu\n", coll_test_passed, coll_test_failed);
    return coll_test_failed != 0;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc > 1 && strcmp(argv[1], "--env") == 0) return env_main();
    if (argc > 1 && strcmp(argv[1], "--env-loop") == 0) return env_loop_main();
    if (argc > 1 && strcmp(argv[1], "--env-init") == 0) return env_init_main();
    fprintf(stderr, "usage: test_hosts --env | --env-loop | --env-init (see test/hosts_netns.sh)\n");
    return 2;
}
