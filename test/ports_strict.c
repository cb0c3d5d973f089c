/* ports_strict.c - one port, built under the README's strict flags
   (-std=c99 -Wall -Wextra -pedantic -Werror, no feature macro from the
   user), then run: a small all-reduce where the port can run one alone.
   test/ports_strict.sh picks the port with -DSTRICT_<NAME> (not a feature
   macro) and, with -DSTRICT_LATE, includes <stdio.h> before the port, as
   a program that includes its own headers first would. */
#ifdef STRICT_LATE
#include <stdio.h>
#endif

#define COLL_IMPLEMENTATION
#if defined(STRICT_THREADS)
#define COLL_THREADS_IMPLEMENTATION
#include "ports/coll_threads.h"
#elif defined(STRICT_SHM)
#define COLL_SHM_IMPLEMENTATION
#include "ports/coll_shm.h"
#elif defined(STRICT_TCP)
#define COLL_TCP_IMPLEMENTATION
#include "ports/coll_tcp.h"
#elif defined(STRICT_MAILBOX)
#define COLL_MAILBOX_IMPLEMENTATION
#include "ports/coll_mailbox.h"
#elif defined(STRICT_TEMPLATE)
#define COLL_TEMPLATE_IMPLEMENTATION
#include "ports/coll_template.h"
#elif defined(STRICT_MPI)
#define COLL_MPI_IMPLEMENTATION
#include "ports/coll_mpi.h"
#else
#error "pick a port: -DSTRICT_THREADS, _SHM, _TCP, _MAILBOX, _TEMPLATE or _MPI"
#endif

#ifndef STRICT_MPI
/* Every rank adds rank + 1; the sum over n ranks is n (n + 1) / 2. */
static int sum_ok(coll_port *port, int rank, int n)
{
    static unsigned char scratch[4096];
    coll_comm c;
    int32_t v = rank + 1;
    return coll_init(&c, rank, n, port, scratch, sizeof scratch) == COLL_OK &&
           coll_allreduce(&c, &v, &v, 1, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO) == COLL_OK &&
           v == n * (n + 1) / 2;
}
#endif

#if defined(STRICT_THREADS)
static coll_threads w;
static int body(int rank, void *arg)
{
    coll_port p = coll_threads_port(&w, rank);
    (void)arg;
    return sum_ok(&p, rank, 3) ? 0 : 1;
}
int main(void)
{
    int rc = coll_threads_init(&w, 3, 5000);
    if (rc == COLL_OK) rc = coll_threads_run(&w, body, NULL);
    coll_threads_close(&w);
    return rc != 0;
}
#elif defined(STRICT_SHM)
static int body(int rank, coll_port *port, void *arg)
{
    (void)arg;
    return sum_ok(port, rank, 3) ? 0 : 1;
}
int main(void)
{
    return coll_shm_spawn(3, body, NULL, 5000) != 0;
}
#elif defined(STRICT_TCP)
int main(void)
{
    static coll_tcp t;               /* a world of one: no token, no peer */
    coll_port p;
    int ok;
    if (coll_tcp_init(&t, "127.0.0.1", 29999, 0, 1, 1000) != COLL_OK) return 1;
    p = coll_tcp_port(&t);
    ok = sum_ok(&p, 0, 1);
    coll_tcp_close(&t);
    return !ok;
}
#elif defined(STRICT_MAILBOX)
int main(void)
{
    static coll_mailbox box;         /* one rank: a cooperative port alone */
    coll_port p;
    if (coll_mailbox_init(&box, 1) != COLL_OK) return 1;
    p = coll_mailbox_port(&box, 0);
    return !sum_ok(&p, 0, 1);
}
#elif defined(STRICT_TEMPLATE)
int main(void)
{
    coll_template t;
    coll_port p;
    int fd = -1;
    if (coll_template_init(&t, 0, 1, &fd, 1000, &p) != COLL_OK) return 1;
    return !sum_ok(&p, 0, 1);
}
#elif defined(STRICT_MPI)
int main(void)                       /* built and linked; running needs mpirun */
{
    int (*init)(coll_mpi *, MPI_Comm, int *, int *) = coll_mpi_init;
    return init == NULL;
}
#endif
