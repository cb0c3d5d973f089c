/* test_agree.c - an MPI program, nothing but MPI, for the calls where
   the drop-in must give MPI's own answer, or where its ranks could take
   different roads

       mpirun -np 4 -x LD_PRELOAD=build/lib/libcoll_mpi_openmpi.so \
              -x COLL_MPI_MIN=0 build/mpi/test_agree.ompi CASE

   CASE alias: every collective the drop-in routes, called with its send
     and receive buffers the same without MPI_IN_PLACE (erroneous MPI),
     under MPI_ERRORS_RETURN: the error class must be the one PMPI_ gives
     for the same call (the reference: the MPI library itself, not this
     library), on every rank. (What a call MPI lets through leaves is
     undefined, so it is not compared.)
   CASE mixed: legal MPI where the ranks' datatypes differ but their
     signatures agree: rank 0 passes a derived type (MPI_Type_contiguous),
     the others the predefined one; and a vector type (with holes) on the
     odd ranks. Every result is checked against plain loops.
   CASE zero: zero-size calls whose roots (or some ranks) pass NULL
     buffers (MPICH's own tests end with MPI_Gather(NULL, 0, ...)), and
     MPI_Alltoall(v,w) with every count 0.
   CASE count: a known number of calls per communicator and collective;
     each rank prints "expect RANK COMM-NAME COLLECTIVE N" for the
     verbose report's table to be checked against.
   CASE late: rank 1 comes 2 s late to an all-reduce; under
     COLL_MPI_TIMEOUT_MS the drop-in aborts the job (the flight
     recorder's failure: COLL_MPI_RECORD).
   A hang is the failure the script's timeout catches. Each rank counts
   its checks; rank 0 prints "CASE: N passed, N failed" for the sum. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long long passed, failed;
static int wrank, wsize;
static const char *only;            /* alias: one call only (argv[2]) */

static void check(int ok, const char *what, int detail)
{
    if (ok) { passed++; return; }
    if (failed++ < 20) fprintf(stderr, "rank %d: FAIL %s (%d)\n", wrank, what, detail);
}

static int eclass(int rc)
{
    int c = rc;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
    return c;
}

/* ---- alias ------------------------------------------------------------------ */
enum { N = 64 };

static void fill(int *b, int n, int salt) { int i; for (i = 0; i < n; i++) b[i] = wrank * 1000 + i + salt; }

/* Run one call through MPI_ (this library, if preloaded) and PMPI_ (the MPI
   library) on the same aliased buffer, each on its own fresh duplicate of
   MPI_COMM_WORLD, and compare the error classes. The duplicates are never
   freed: a rooted call the root refused leaves the others' messages
   unreceived there, which a later communicator with the same context
   would take for its own. */
#define ALIAS_CASE(NAME, CALL)                                                \
    do {                                                                      \
        int *a = calloc(N * 16, sizeof(int)), *b = calloc(N * 16, sizeof(int)); \
        int rca, rcb, ok;                                                     \
        if (only && strcmp(only, NAME)) break;                                \
        MPI_Comm c1, c2;                                                      \
        MPI_Comm_dup(MPI_COMM_WORLD, &c1);                                    \
        MPI_Comm_dup(MPI_COMM_WORLD, &c2);                                    \
        MPI_Comm_set_errhandler(c1, MPI_ERRORS_RETURN);                       \
        MPI_Comm_set_errhandler(c2, MPI_ERRORS_RETURN);                       \
        fill(a, N * 16, 0); fill(b, N * 16, 0);                               \
        { int *buf = a; MPI_Comm comm = c1; rca = MPI_##CALL; }               \
        { int *buf = b; MPI_Comm comm = c2; rcb = PMPI_##CALL; }              \
        ok = eclass(rca) == eclass(rcb);                                      \
        check(ok, NAME ": the error class PMPI gives", eclass(rca) * 100 + eclass(rcb)); \
        if (getenv("TEST_AGREE_SHOW"))                                        \
            printf("  rank %d %-26s MPI_ class %d, PMPI_ class %d\n", wrank, NAME, eclass(rca), eclass(rcb)); \
        MPI_Barrier(MPI_COMM_WORLD);                                          \
        free(a); free(b);                                                     \
    } while (0)

static void test_alias(void)
{
    int cnt[64], dsp[64], i;
    for (i = 0; i < wsize; i++) { cnt[i] = 2; dsp[i] = 2 * i; }
    ALIAS_CASE("MPI_Allreduce", Allreduce(buf, buf, N, MPI_INT, MPI_SUM, comm));
    ALIAS_CASE("MPI_Alltoall", Alltoall(buf, 2, MPI_INT, buf, 2, MPI_INT, comm));
    ALIAS_CASE("MPI_Alltoallv", Alltoallv(buf, cnt, dsp, MPI_INT, buf, cnt, dsp, MPI_INT, comm));
    ALIAS_CASE("MPI_Reduce_scatter_block", Reduce_scatter_block(buf, buf, 2, MPI_INT, MPI_SUM, comm));
    ALIAS_CASE("MPI_Reduce_scatter", Reduce_scatter(buf, buf, cnt, MPI_INT, MPI_SUM, comm));
    ALIAS_CASE("MPI_Scan", Scan(buf, buf, N, MPI_INT, MPI_SUM, comm));
    ALIAS_CASE("MPI_Exscan", Exscan(buf, buf, N, MPI_INT, MPI_SUM, comm));
    /* rooted: every rank passes the alias (only the root's is significant;
       the non-roots only send, so the root's error leaves no rank waiting).
       Left out: scatter(v), where the non-roots wait for a root that
       failed, and allgather(v), which MPICH refuses on some ranks only
       (where the rank's block of the receive buffer is the send buffer):
       the MPI library itself hangs there. */
    ALIAS_CASE("MPI_Reduce", Reduce(buf, buf, N, MPI_INT, MPI_SUM, 0, comm));
    ALIAS_CASE("MPI_Gather", Gather(buf, 2, MPI_INT, buf, 2, MPI_INT, 0, comm));
    ALIAS_CASE("MPI_Gatherv", Gatherv(buf, 2, MPI_INT, buf, cnt, dsp, MPI_INT, 0, comm));
}

/* ---- mixed ------------------------------------------------------------------ */
static int want(int r, int i) { return r * 100003 + i * 7 + 1; }

enum { M = 4096 };                  /* ints; 16 KiB: routed at COLL_MPI_MIN=0 */

/* bcasts where one side's type differs: from the last rank with rank 0
   receiving M / 4 of quad (4 ints, no holes: the same signature), then
   from rank 0 with the odd ranks receiving into strided (M ints, every
   other one: the holes stay untouched) */
static void mixed_bcasts(int *s, MPI_Datatype quad, MPI_Datatype strided)
{
    int i, ok, derived = wrank == 0, holes = wrank % 2 == 1;
    for (i = 0; i < M; i++) s[i] = wrank == wsize - 1 ? want(9, i) : -1;
    if (derived) MPI_Bcast(s, M / 4, quad, wsize - 1, MPI_COMM_WORLD);
    else MPI_Bcast(s, M, MPI_INT, wsize - 1, MPI_COMM_WORLD);
    for (ok = 1, i = 0; i < M; i++) ok &= s[i] == want(9, i);
    check(ok, "mixed: MPI_Bcast, contiguous on rank 0", 0);

    for (i = 0; i < 2 * M; i++) s[i] = wrank == 0 ? want(5, i / (holes ? 2 : 1)) : -1;
    if (holes) MPI_Bcast(s, 1, strided, 0, MPI_COMM_WORLD);
    else MPI_Bcast(s, M, MPI_INT, 0, MPI_COMM_WORLD);
    for (ok = 1, i = 0; i < M; i++) ok &= s[holes ? 2 * i : i] == want(5, i);
    if (holes) for (i = 0; i < M; i++) ok &= s[2 * i + 1] == -1;
    check(ok, "mixed: MPI_Bcast, vector type on the odd ranks", 0);
}

/* allgather, gather, scatter, alltoall: quad on rank 0, MPI_INT elsewhere */
static void mixed_blocks(int *s, int *r, MPI_Datatype quad)
{
    int i, q, ok, derived = wrank == 0, blk = M / wsize / 4 * 4;
    for (i = 0; i < M; i++) s[i] = want(wrank, i);
    if (derived) MPI_Allgather(s, M / 4, quad, r, M / 4, quad, MPI_COMM_WORLD);
    else MPI_Allgather(s, M, MPI_INT, r, M, MPI_INT, MPI_COMM_WORLD);
    for (ok = 1, q = 0; q < wsize; q++) for (i = 0; i < M; i++) ok &= r[q * M + i] == want(q, i);
    check(ok, "mixed: MPI_Allgather, contiguous on rank 0", 0);

    memset(r, 0xff, (size_t)M * wsize * sizeof(int));
    if (derived) MPI_Gather(s, M / 4, quad, r, M / 4, quad, 0, MPI_COMM_WORLD);
    else MPI_Gather(s, M, MPI_INT, r, M, MPI_INT, 0, MPI_COMM_WORLD);
    if (wrank == 0) {
        for (ok = 1, q = 0; q < wsize; q++) for (i = 0; i < M; i++) ok &= r[q * M + i] == want(q, i);
        check(ok, "mixed: MPI_Gather, contiguous at the root", 0);
    } else check(1, "mixed: MPI_Gather", 0);

    for (q = 0; q < wsize; q++) for (i = 0; i < M; i++) r[q * M + i] = want(q + 50, i);
    if (derived) MPI_Scatter(r, M / 4, quad, s, M / 4, quad, 0, MPI_COMM_WORLD);
    else MPI_Scatter(r, M, MPI_INT, s, M, MPI_INT, 0, MPI_COMM_WORLD);
    for (ok = 1, i = 0; i < M; i++) ok &= s[i] == want(wrank + 50, i);
    check(ok, "mixed: MPI_Scatter, contiguous at the root", 0);

    for (q = 0; q < wsize; q++) for (i = 0; i < blk; i++) s[q * blk + i] = want(wrank * 64 + q, i);
    if (derived) MPI_Alltoall(s, blk / 4, quad, r, blk / 4, quad, MPI_COMM_WORLD);
    else MPI_Alltoall(s, blk, MPI_INT, r, blk, MPI_INT, MPI_COMM_WORLD);
    for (ok = 1, q = 0; q < wsize; q++) for (i = 0; i < blk; i++) ok &= r[q * blk + i] == want(q * 64 + wrank, i);
    check(ok, "mixed: MPI_Alltoall, contiguous on rank 0", 0);
}

static void test_mixed(void)
{
    MPI_Datatype quad, strided;
    int *s = malloc(M * 2 * sizeof(int)), *r = malloc((size_t)M * wsize * 2 * sizeof(int));
    MPI_Type_contiguous(4, MPI_INT, &quad);       /* 4 ints, no holes: same signature */
    MPI_Type_commit(&quad);
    MPI_Type_vector(M, 1, 2, MPI_INT, &strided);  /* M ints, every other one          */
    MPI_Type_commit(&strided);
    mixed_bcasts(s, quad, strided);
    mixed_blocks(s, r, quad);
    MPI_Type_free(&quad);
    MPI_Type_free(&strided);
    free(s); free(r);
}

/* ---- zero ------------------------------------------------------------------- */
static void test_zero(void)
{
    int x = 7, y = 9, ok, *zc = calloc((size_t)wsize, sizeof(int)), *zd = calloc((size_t)wsize, sizeof(int));
    MPI_Datatype *zt = malloc((size_t)wsize * sizeof(MPI_Datatype));
    int i, root = wsize - 1, me_root = wrank == root;
    for (i = 0; i < wsize; i++) zt[i] = MPI_INT;
    /* MPICH's ending: every buffer NULL */
    MPI_Gather(NULL, 0, MPI_BYTE, NULL, 0, MPI_BYTE, 0, MPI_COMM_WORLD);
    check(1, "zero: MPI_Gather, all NULL", 0);
    /* the root NULL, the others a buffer */
    MPI_Gather(me_root ? NULL : &x, 0, MPI_INT, me_root ? NULL : &y, 0, MPI_INT, root, MPI_COMM_WORLD);
    MPI_Scatter(me_root ? NULL : &x, 0, MPI_INT, me_root ? NULL : &y, 0, MPI_INT, root, MPI_COMM_WORLD);
    MPI_Gatherv(me_root ? NULL : &x, 0, MPI_INT, me_root ? NULL : &y, zc, zd, MPI_INT, root, MPI_COMM_WORLD);
    MPI_Scatterv(me_root ? NULL : &x, zc, zd, MPI_INT, me_root ? NULL : &y, 0, MPI_INT, root, MPI_COMM_WORLD);
    MPI_Reduce(me_root ? NULL : &x, me_root ? NULL : &y, 0, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
    MPI_Bcast(me_root ? NULL : &y, 0, MPI_INT, root, MPI_COMM_WORLD);
    check(x == 7 && y == 9, "zero: rooted calls, NULL at the root, buffers untouched", x * 100 + y);
    /* rank 0 NULL, the others not */
    MPI_Allreduce(wrank ? &x : NULL, wrank ? &y : NULL, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allgather(wrank ? &x : NULL, 0, MPI_INT, wrank ? &y : NULL, 0, MPI_INT, MPI_COMM_WORLD);
    MPI_Allgatherv(wrank ? &x : NULL, 0, MPI_INT, wrank ? &y : NULL, zc, zd, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoall(wrank ? &x : NULL, 0, MPI_INT, wrank ? &y : NULL, 0, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoallv(wrank ? &x : NULL, zc, zd, MPI_INT, wrank ? &y : NULL, zc, zd, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoallw(wrank ? &x : NULL, zc, zd, zt, wrank ? &y : NULL, zc, zd, zt, MPI_COMM_WORLD);
    MPI_Reduce_scatter(wrank ? &x : NULL, wrank ? &y : NULL, zc, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce_scatter_block(wrank ? &x : NULL, wrank ? &y : NULL, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Scan(wrank ? &x : NULL, wrank ? &y : NULL, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Exscan(wrank ? &x : NULL, wrank ? &y : NULL, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check(x == 7 && y == 9, "zero: calls with NULL on rank 0, buffers untouched", x * 100 + y);
    /* and a real call after them: the communicator still works */
    x = wrank + 1;
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    ok = y == wsize * (wsize + 1) / 2;
    check(ok, "zero: an all-reduce after them", y);
    free(zc); free(zd); free(zt);
}

/* ---- count ------------------------------------------------------------------ */
static void test_count(void)
{
    MPI_Comm dup;
    int i, x[1024], y[1024 * 64];
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    for (i = 0; i < 1024; i++) x[i] = i;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_name(dup, "counted-dup");
    for (i = 0; i < 7; i++) MPI_Allreduce(x, y, 1 + i * 100, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (i = 0; i < 3; i++) MPI_Allreduce(x, y, 2, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    for (i = 0; i < 5; i++) MPI_Bcast(x, 10 * i, MPI_INT, 0, dup);
    for (i = 0; i < 4; i++) MPI_Allgather(x, 8, MPI_INT, y, 8, MPI_INT, dup);
    for (i = 0; i < 2; i++) MPI_Barrier(dup);
    MPI_Comm_get_name(MPI_COMM_WORLD, name, &len);
    printf("expect %d %s MPI_Allreduce 10\n", wrank, name);
    printf("expect %d counted-dup MPI_Bcast 5\n", wrank);
    printf("expect %d counted-dup MPI_Allgather 4\n", wrank);
    printf("expect %d counted-dup MPI_Barrier 2\n", wrank);
    fflush(stdout);
    MPI_Comm_free(&dup);
    check(1, "count", 0);
}

/* ---- late ------------------------------------------------------------------- */
/* The flight recorder's failure (run with COLL_MPI_TIMEOUT_MS and
   COLL_MPI_RECORD): three all-reduces, then rank 1 sleeps 2 s before the
   fourth; the others' fourth sees no progress, fails in coll, and the
   drop-in writes their last calls and aborts the job. */
static void test_late(void)
{
    int i, x[256], y[256];
    for (i = 0; i < 256; i++) x[i] = i;
    for (i = 0; i < 3; i++) MPI_Allreduce(x, y, 256, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 1) sleep(2);
    MPI_Allreduce(x, y, 256, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check(1, "late: not aborted", 0);
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    long long mine[2], all[2] = { 0, 0 };
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (wsize > 64) MPI_Abort(MPI_COMM_WORLD, 2);
    only = argc > 2 ? argv[2] : 0;
    if (!strcmp(what, "alias")) test_alias();
    else if (!strcmp(what, "mixed")) test_mixed();
    else if (!strcmp(what, "zero")) test_zero();
    else if (!strcmp(what, "count")) test_count();
    else if (!strcmp(what, "late")) test_late();
    else { if (wrank == 0) fprintf(stderr, "test_agree: CASE is alias, mixed, zero, count or late\n"); MPI_Finalize(); return 2; }
    mine[0] = passed; mine[1] = failed;
    MPI_Reduce(mine, all, 2, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (wrank == 0) printf("%s: %lld passed, %lld failed\n", what, all[0], all[1]);
    fflush(stdout);
    MPI_Finalize();
    return failed ? 1 : 0;
}
