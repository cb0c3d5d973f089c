/* test_lifecycle.c - every port has the same lifecycle: coll_X_init,
   coll_X_port, coll_X_abort, coll_X_close. For each port this program
   opens a world, runs a barrier and an all-reduce through coll_X_port(),
   aborts it and checks that the next call fails with an error instead of
   hanging or succeeding, then closes it. (The MPI port's are in test_mpi:
   it needs mpirun.) */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#define COLL_MAILBOX_IMPLEMENTATION
#include "../ports/coll_mailbox.h"
#define COLL_SHM_IMPLEMENTATION
#include "../ports/coll_shm.h"
#define COLL_TCP_IMPLEMENTATION
#include "../ports/coll_tcp.h"
#include "coll_test.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

static double scratch[4][128];

/* One rank's part: a barrier and a sum over the port. */
static int use(coll_port port, int rank, int nranks)
{
    coll_comm c;
    float x = (float)(rank + 1), y = 0;
    int rc = coll_init(&c, rank, nranks, &port, scratch[rank], sizeof scratch[rank]);
    if (rc == COLL_OK) rc = coll_barrier(&c, COLL_ALGO_AUTO);
    if (rc == COLL_OK) rc = coll_allreduce(&c, &x, &y, 1, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
    if (rc == COLL_OK && y != (float)(nranks * (nranks + 1) / 2)) rc = -1000;
    return rc;
}

/* threads: init, port, run, abort, close */
static coll_threads tw;
static int t_rc[4], t_after[4];
static int threads_body(int r, void *arg)
{
    (void)arg;
    t_rc[r] = use(coll_threads_port(&tw, r), r, 3);
    return 0;
}
static int threads_after(int r, void *arg)
{
    coll_comm c;
    coll_port p = coll_threads_port(&tw, r);
    (void)arg;
    coll_init(&c, r, 3, &p, scratch[r], sizeof scratch[r]);
    t_after[r] = coll_barrier(&c, COLL_ALGO_AUTO);
    return 0;
}

static void threads_port(void)
{
    int r;
    COLL_CHECK_EQ(coll_threads_init(&tw, 3, 5000), COLL_OK);
    coll_threads_run(&tw, threads_body, NULL);
    for (r = 0; r < 3; r++) COLL_CHECK_MSG(t_rc[r] == COLL_OK, "threads rank %d: %d", r, t_rc[r]);
    coll_threads_abort(&tw);
    coll_threads_run(&tw, threads_after, NULL);
    for (r = 0; r < 3; r++) COLL_CHECK_MSG(t_after[r] < 0, "threads rank %d after abort: %d", r, t_after[r]);
    coll_threads_close(&tw);
}

/* mailbox: init, port, abort, close - round robin in this thread */
static void mailbox_port(void)
{
    coll_mailbox box;
    coll_comm c[3];
    coll_request q[3];
    coll_args a;
    float x[3], y[3];
    int r, rc[3], live, turns = 0;
    COLL_CHECK_EQ(coll_mailbox_init(&box, 3), COLL_OK);
    for (r = 0; r < 3; r++) {
        coll_port p = coll_mailbox_port(&box, r);
        coll_init(&c[r], r, 3, &p, scratch[r], sizeof scratch[r]);
        x[r] = (float)(r + 1); y[r] = 0;
        memset(&a, 0, sizeof a);
        a.kind = COLL_ALLREDUCE; a.src = &x[r]; a.dst = &y[r]; a.count = 1;
        a.dtype = COLL_FLOAT32; a.op = COLL_SUM;
        rc[r] = coll_start(&q[r], &c[r], &a);
        if (rc[r] == COLL_OK) rc[r] = COLL_AGAIN;
    }
    do {
        for (r = 0, live = 0; r < 3; r++)
            if (rc[r] == COLL_AGAIN) { rc[r] = coll_progress(&q[r]); live += rc[r] == COLL_AGAIN; }
    } while (live && ++turns < 10000);
    for (r = 0; r < 3; r++) COLL_CHECK_MSG(rc[r] == COLL_OK && y[r] == 6.0f, "mailbox rank %d: %d, %g", r, rc[r], (double)y[r]);
    coll_mailbox_abort(&box, COLL_ERR_IO);
    rc[0] = coll_barrier(&c[0], COLL_ALGO_AUTO);           /* blocking on a mailbox: fails, not hangs */
    COLL_CHECK_MSG(rc[0] < 0, "mailbox after abort: %d", rc[0]);
    coll_mailbox_close(&box);
}

/* shm: init, port, abort, close - one rank, in this process */
static void shm_port(void)
{
    coll_shm s;
    char name[64];
    int rc;
    snprintf(name, sizeof name, "/coll-lifecycle-%d", (int)getpid());
    rc = coll_shm_init(&s, name, 0, 1, 2000);
    COLL_CHECK_MSG(rc == COLL_OK, "shm init: %d", rc);
    if (rc != COLL_OK) return;
    COLL_CHECK_EQ(use(coll_shm_port(&s), 0, 1), COLL_OK);
    coll_shm_abort(&s, COLL_ERR_IO);
    COLL_CHECK_MSG(coll_shm_send(&s, 0, name, 4) < 0, "shm send after abort succeeded");
    coll_shm_close(&s);
}

/* tcp: init, port, abort, close - a world of one rank needs no token */
static void tcp_port(void)
{
    coll_tcp t;
    int rc = coll_tcp_init(&t, "127.0.0.1", coll_tcp_free_port(), 0, 1, 2000);
    COLL_CHECK_MSG(rc == COLL_OK, "tcp init: %d", rc);
    if (rc != COLL_OK) return;
    COLL_CHECK_EQ(use(coll_tcp_port(&t), 0, 1), COLL_OK);
    coll_tcp_abort(&t, COLL_ERR_IO);
    coll_tcp_close(&t);
}

int main(void)
{
    threads_port();
    mailbox_port();
    shm_port();
    tcp_port();
    return coll_test_summary("lifecycle");
}
