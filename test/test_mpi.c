/* test_mpi.c - the collectives over the MPI port (ports/coll_mpi.h), run
   under mpirun with Open MPI and with MPICH:

       mpirun -np 4 test_mpi <name> [quick] [yield]

   The port checker (test/check_port.h) on every rank - every collective
   and algorithm, ragged counts, in and out of place, guards, the error
   cases - each allreduce also compared with MPI_Allreduce on the same
   inputs; then the port's own edge cases: a receive of the wrong
   size, a full handle table, the yield/deadline wait mode, and an
   application's traffic on the same communicator that must not mix with
   ours. Rank 0 prints "<name>: N passed, N failed" for all ranks together. */
#define COLL_IMPLEMENTATION
#include "coll.h"
#define COLL_MPI_IMPLEMENTATION
#include "ports/coll_mpi.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/check_port.h"

/* MPI's own datatype and operator for ours, or 0 if MPI has none. */
static MPI_Datatype mpi_type(coll_dtype t)
{
    switch (t) {
    case COLL_INT8:    return MPI_INT8_T;
    case COLL_UINT8:   return MPI_UINT8_T;
    case COLL_INT32:   return MPI_INT32_T;
    case COLL_UINT32:  return MPI_UINT32_T;
    case COLL_INT64:   return MPI_INT64_T;
    case COLL_UINT64:  return MPI_UINT64_T;
    case COLL_FLOAT32: return MPI_FLOAT;
    case COLL_FLOAT64: return MPI_DOUBLE;
    default:           return MPI_DATATYPE_NULL;     /* no halves in MPI */
    }
}

static MPI_Op mpi_op(coll_op op)
{
    switch (op) {
    case COLL_SUM:  return MPI_SUM;
    case COLL_PROD: return MPI_PROD;
    case COLL_MIN:  return MPI_MIN;
    case COLL_MAX:  return MPI_MAX;
    case COLL_BAND: return MPI_BAND;
    case COLL_BOR:  return MPI_BOR;
    case COLL_BXOR: return MPI_BXOR;
    default:        return MPI_OP_NULL;              /* avg */
    }
}

/* The second opinion: MPI_Allreduce on the application's communicator.
   Every rank reaches it for the same cases (same dtype and op), so the
   collective calls match up. */
static int mpi_allreduce(void *ctx, const void *src, void *dst, size_t count,
                         coll_dtype t, coll_op op)
{
    MPI_Comm comm = *(MPI_Comm *)ctx;
    if (mpi_type(t) == MPI_DATATYPE_NULL || mpi_op(op) == MPI_OP_NULL || count > INT_MAX)
        return 1;
    return MPI_Allreduce(src, dst, (int)count, mpi_type(t), mpi_op(op), comm) == MPI_SUCCESS ? 0 : 1;
}

/* The checker's launcher: this process is one rank, its port the MPI one. */
typedef struct mpi_rank { int rank; coll_port port; } mpi_rank;

static int mpi_launch(void *user, int nranks, coll_port_check_body body, void *arg)
{
    mpi_rank *me = (mpi_rank *)user;
    (void)nranks;
    return body(me->rank, &me->port, arg) != 0;
}

static double mpi_now(void) { return MPI_Wtime(); }

/* Every collective over `port` (this rank's share; the counts land in
   coll_test.h's). */
static void run_checker(const char *name, const coll_port *port, int rank, int n, int quick,
                        void *arena, size_t arena_bytes, MPI_Comm *world)
{
    static coll_port_check ck;
    mpi_rank me;
    me.rank = rank;
    me.port = *port;
    memset(&ck, 0, sizeof ck);
    ck.name = name; ck.nranks = n;
    ck.launch = mpi_launch; ck.launch_user = &me;
    ck.arena = arena; ck.arena_bytes = arena_bytes; ck.private_arena = 1;
    ck.full = !quick; ck.big = quick ? 20001 : 70001; ck.now = mpi_now;
    ck.other_allreduce = mpi_allreduce;
    ck.other_ctx = world;
    coll_port_check_run(&ck);
}

static long p_ok, p_bad;
#define PC(cond) ((cond) ? (void)p_ok++ : (void)(p_bad++, fprintf(stderr, \
    "FAIL port check at test_mpi.c:%d, rank %d\n", __LINE__, rank)))

/* The port alone. */
static void port_checks(coll_mpi *m, coll_port *pt, int rank, int n)
{
    int to = (rank + 1) % n, from = (rank + n - 1) % n, h[COLL_MPI_HANDLES + 1], i, rc, yield;
    unsigned char a[100], b[100];
    memset(a, rank, sizeof a);

    /* the application's own traffic on MPI_COMM_WORLD with our tag, posted
       before ours, must not catch the port's message, nor the port the
       application's (the values tell which is which) */
    {
        int app = -1, mine = -1, v_port = 1000 + rank, v_app = 2000 + rank;
        MPI_Request rq;
        MPI_Irecv(&app, 1, MPI_INT, from, m->tag, MPI_COMM_WORLD, &rq);
        rc = pt->sendrecv(pt->ctx, to, &v_port, sizeof v_port, from, &mine, sizeof mine);
        MPI_Send(&v_app, 1, MPI_INT, to, m->tag, MPI_COMM_WORLD);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        PC(rc == 0 && mine == 1000 + from);
        PC(app == 2000 + from);
    }

    /* polling: COLL_AGAIN while the peer has not sent (it waits for our go) */
    if (n >= 2 && rank <= 1) {
        int go = 1;
        if (rank == 0) {
            int rc2 = 0;
            rc = pt->irecv(pt->ctx, 1, b, 10, &h[0]);
            PC(rc == 0 && pt->wait(pt->ctx, h[0], 0) == COLL_AGAIN);
            rc = pt->send(pt->ctx, 1, &go, sizeof go);
            while (rc == 0 && (rc2 = pt->wait(pt->ctx, h[0], 0)) == COLL_AGAIN)
                ;
            PC(rc == 0 && rc2 == 0 && b[0] == 1 && b[9] == 1);
        } else {
            rc = pt->recv(pt->ctx, 0, &go, sizeof go);
            if (rc == 0) rc = pt->send(pt->ctx, 0, a, 10);
            PC(rc == 0);
        }
    }

    /* the handle table: COLL_MPI_HANDLES posts fit, one more is COLL_AGAIN
       ("nothing happened"); the waits then free every slot */
    for (i = 0; i < COLL_MPI_HANDLES; i++) {
        rc = pt->irecv(pt->ctx, from, b + (i % 10) * 10, 10, &h[i]);
        if (rc) break;
    }
    PC(i == COLL_MPI_HANDLES);
    PC(pt->irecv(pt->ctx, from, b, 10, &h[COLL_MPI_HANDLES]) == COLL_AGAIN);
    for (i = 0; i < COLL_MPI_HANDLES; i++) PC(pt->send(pt->ctx, to, a, 10) == 0);
    for (i = 0; i < COLL_MPI_HANDLES; i++) PC(pt->wait(pt->ctx, h[i], 1) == 0);
    PC(b[0] == (unsigned char)from && b[99] == (unsigned char)from);
    PC(pt->wait(pt->ctx, h[0], 1) == COLL_ERR_INVAL);   /* already freed */
    PC(pt->send(pt->ctx, n, a, 1) == COLL_ERR_INVAL);

    /* yield + deadline mode: the same exchanges by polling */
    yield = m->yield;
    m->yield = 1;
    m->timeout_ms = 5000;
    memset(b, 0, sizeof b);
    PC(pt->sendrecv(pt->ctx, to, a, 100, from, b, 100) == 0 && b[50] == (unsigned char)from);
    if (rank % 2 == 0) {
        rc = pt->send(pt->ctx, to, a, 100);
        if (rc == 0) rc = pt->recv(pt->ctx, from, b, 100);
    } else {
        rc = pt->recv(pt->ctx, from, b, 100);
        if (rc == 0) rc = pt->send(pt->ctx, to, a, 100);
    }
    PC(rc == 0 && b[99] == (unsigned char)from);
    /* a deadline that expires: nobody sends to rank 0 until it has given up */
    if (rank == 0) {
        double t0 = MPI_Wtime();
        m->timeout_ms = 200;
        rc = pt->recv(pt->ctx, n - 1, b, 7);
        PC(rc == COLL_ERR_TIMEOUT && MPI_Wtime() - t0 >= 0.19);
    }
    m->yield = yield;
    m->timeout_ms = 0;
    memset(b, 0xEE, sizeof b);
    MPI_Barrier(MPI_COMM_WORLD);
    /* the expired receive was cancelled: a message sent now goes to the
       next receive, not into the abandoned buffer */
    if (rank == n - 1) PC(pt->send(pt->ctx, 0, a, 7) == 0);
    if (rank == 0) {
        PC(pt->recv(pt->ctx, n - 1, b + 50, 7) == 0 && b[56] == (unsigned char)(n - 1) &&
           b[0] == 0xEE && b[6] == 0xEE);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* last, as they leave the pair out of step: a receive of the wrong
       size - longer than the message is our check; shorter is MPI's own
       error (truncation), mapped to COLL_MPI_ERR with the code kept. (Not
       in yield mode: MPICH raises an error found by MPI_Test on
       MPI_COMM_WORLD's handler, which aborts.) */
    if (n >= 2 && rank <= 1) {
        if (rank == 0) {
            PC(pt->send(pt->ctx, 1, a, 50) == 0);
            if (!m->yield) PC(pt->send(pt->ctx, 1, a, 60) == 0);
        } else {
            PC(pt->recv(pt->ctx, 0, b, 60) == COLL_ERR_MISMATCH);
            if (!m->yield)
                PC(pt->recv(pt->ctx, 0, b, 50) == COLL_MPI_ERR && m->last_error != MPI_SUCCESS);
        }
    }
}

int main(int argc, char **argv)
{
    coll_mpi m;
    coll_port port;
    MPI_Comm world = MPI_COMM_WORLD;
    const char *name = argc > 1 ? argv[1] : "mpi";
    int rank, n, quick = 0, yield = 0, rc, i;
    long mine[3], all[3];
    size_t arena_bytes;
    void *arena;
    double t0;

    for (i = 2; i < argc; i++) {
        if (strcmp(argv[i], "quick") == 0) quick = 1;
        if (strcmp(argv[i], "yield") == 0) yield = 1;
    }
    MPI_Init(&argc, &argv);
    rc = coll_mpi_port_init(&m, MPI_COMM_WORLD, &port, &rank, &n);
    if (rc) { fprintf(stderr, "coll_mpi_port_init: %d\n", rc); MPI_Abort(MPI_COMM_WORLD, 2); }
    m.yield = yield;      /* wait by MPI_Test + sched_yield (oversubscribed MPICH) */
    arena_bytes = coll_port_check_arena_bytes(n, 70001) / (size_t)n;
    arena = malloc(arena_bytes);
    if (!arena) { fprintf(stderr, "out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 2); }

    t0 = MPI_Wtime();
    run_checker(name, &port, rank, n, quick, arena, arena_bytes, &world);
    t0 = MPI_Wtime() - t0;
    /* The executor uses isend/irecv/wait whenever a port has them; strip
       them (then sendrecv too) to run the port's blocking calls as well. */
    if (!quick) {
        coll_port bp = port;
        int strip;
        for (strip = 0; strip < 2; strip++) {
            bp.isend = 0; bp.irecv = 0; bp.wait = 0;
            if (strip) bp.sendrecv = 0;
            run_checker(strip ? "send/recv only" : "blocking with sendrecv", &bp, rank, n, 1,
                        arena, arena_bytes, &world);
        }
    }
    port_checks(&m, &port, rank, n);

    mine[0] = (long)coll_test_passed + p_ok; mine[1] = (long)coll_test_failed + p_bad;
    mine[2] = (long)coll_test_na;
    MPI_Reduce(mine, all, 3, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("  %d ranks%s%s: collectives %.2f s, %ld cases not available in coll.h yet\n",
               n, quick ? ", quick" : "", yield ? ", yield mode" : "", t0, all[2]);
        printf("%s: %ld passed, %ld failed\n", name, all[0], all[1]);
    }
    free(arena);
    coll_mpi_port_free(&m);
    MPI_Finalize();
    return rank == 0 ? all[1] != 0 : mine[1] != 0;
}
