/* test_mpi_late.c - the MPI port: after a timeout, nothing lands later in
   a buffer the caller has been given back.

   mpirun -np 2 test_mpi_late

   The executor keeps two segments in flight, so when the wait for segment
   k's receive expires, segment k+1's receive is posted too. The port used
   to cancel only the receive whose wait expired: the other stayed posted
   in MPI, and when the late peer finally sent, its message landed in the
   caller's dst after coll_broadcast had returned COLL_ERR_TIMEOUT.
   Rank 1 (root) holds back its first payload segment for longer than rank
   0's deadline; rank 0 must get an error, and its dst must not change
   after the call returned (checked after an MPI barrier has let the late
   messages arrive), and the port's handle table must be free again. */
#define COLL_IMPLEMENTATION
#define COLL_MPI_IMPLEMENTATION
#include "../ports/coll_mpi.h"
#include "coll_test.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define N    4096                    /* bytes broadcast */
#define SEG  1024                    /* scratch 2 x SEG: four segments */

typedef struct late { coll_port in; int held; } late;
static int late_isend(void *ctx, int peer, const void *buf, size_t bytes, int *h)
{
    late *l = (late *)ctx;
    if (bytes == SEG && !l->held) {  /* the first payload segment: 1 s late */
        struct timespec ts = { 1, 0 };
        l->held = 1;
        nanosleep(&ts, NULL);
    }
    return l->in.isend(l->in.ctx, peer, buf, bytes, h);
}
static int fw_send(void *ctx, int peer, const void *buf, size_t bytes)
{ late *l = (late *)ctx; return l->in.send(l->in.ctx, peer, buf, bytes); }
static int fw_recv(void *ctx, int peer, void *buf, size_t bytes)
{ late *l = (late *)ctx; return l->in.recv(l->in.ctx, peer, buf, bytes); }
static int fw_irecv(void *ctx, int peer, void *buf, size_t bytes, int *h)
{ late *l = (late *)ctx; return l->in.irecv(l->in.ctx, peer, buf, bytes, h); }
static int fw_wait(void *ctx, int h, int block)
{ late *l = (late *)ctx; return l->in.wait(l->in.ctx, h, block); }

int main(int argc, char **argv)
{
    static unsigned long long scratch[2 * SEG / 8];
    static unsigned char buf[N], seen[N];
    coll_mpi m;
    coll_port port, lp;
    late l;
    coll_comm c;
    int rank, n, rc, i, free_slots = 0;
    long mine[2], all[2];
    MPI_Init(&argc, &argv);
    if (coll_mpi_port_init(&m, MPI_COMM_WORLD, &port, &rank, &n) || n != 2) {
        fprintf(stderr, "needs mpirun -np 2\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    m.yield = 1;
    m.timeout_ms = rank == 0 ? 300 : 5000;
    memset(&lp, 0, sizeof lp);
    l.in = port; l.held = 0;
    lp.ctx = &l; lp.send = fw_send; lp.recv = fw_recv;
    lp.isend = late_isend; lp.irecv = fw_irecv; lp.wait = fw_wait;
    rc = coll_init(&c, rank, 2, rank == 1 ? &lp : &port, scratch, sizeof scratch);
    COLL_CHECK_EQ(rc, COLL_OK);
    for (i = 0; i < N; i++) buf[i] = rank == 1 ? (unsigned char)(i * 7 + 1) : 0;
    rc = coll_broadcast(&c, buf, N, COLL_UINT8, 1, COLL_ALGO_BINOMIAL);
    if (rank == 0) {
        COLL_CHECK_MSG(rc == COLL_ERR_TIMEOUT, "rank 0: rc %d, want COLL_ERR_TIMEOUT", rc);
        memcpy(seen, buf, N);        /* what the caller was given back */
    }
    MPI_Barrier(MPI_COMM_WORLD);     /* rank 1 has sent everything by now */
    {
        double t = MPI_Wtime();      /* let whatever is in flight land */
        while (MPI_Wtime() - t < 0.5) { int f; MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &f, MPI_STATUS_IGNORE); }
    }
    if (rank == 0) {
        int changed = 0;
        for (i = 0; i < N; i++) changed += buf[i] != seen[i];
        COLL_CHECK_MSG(changed == 0, "rank 0: %d bytes of dst changed after coll_broadcast returned %d",
                       changed, rc);
        for (i = 0; i < COLL_MPI_HANDLES; i++) free_slots += !m.used[i];
        COLL_CHECK_MSG(free_slots == COLL_MPI_HANDLES, "rank 0: %d of %d handles still taken",
                       COLL_MPI_HANDLES - free_slots, COLL_MPI_HANDLES);
    }
    mine[0] = (long)coll_test_passed; mine[1] = (long)coll_test_failed;
    MPI_Reduce(mine, all, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("mpi-late: %ld passed, %ld failed\n", all[0], all[1]);
    MPI_Barrier(MPI_COMM_WORLD);
    coll_mpi_port_free(&m);
    MPI_Finalize();
    return rank == 0 ? all[1] != 0 : 0;
}
