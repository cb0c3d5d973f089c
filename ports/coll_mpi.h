/* coll_mpi.h - coll port over MPI point-to-point (Open MPI, MPICH)

   USAGE
     In exactly one C file, after MPI is includable:
         #define COLL_MPI_IMPLEMENTATION
         #include "ports/coll_mpi.h"

         coll_mpi m;  coll_port port;  int rank, nranks;
         MPI_Init(&argc, &argv);
         coll_mpi_port_init(&m, MPI_COMM_WORLD, &port, &rank, &nranks);
         coll_init(&c, rank, nranks, &port, scratch, sizeof scratch);
         coll_allreduce(&c, ...);
         coll_mpi_port_free(&m);            before MPI_Finalize
         MPI_Finalize();

   WHAT IT MAPS
     send      MPI_Send          recv  MPI_Recv (count checked: exact size)
     sendrecv  MPI_Sendrecv
     isend     MPI_Isend         irecv MPI_Irecv
     wait      MPI_Wait (block = 1) or MPI_Test (block = 0, COLL_AGAIN)
     Handles index a fixed table of COLL_MPI_HANDLES requests inside the
     coll_mpi struct: no allocation; a full table answers COLL_AGAIN.

   COEXISTING WITH THE APPLICATION
     coll_mpi_port_init duplicates the communicator (MPI_Comm_dup, so it is
     collective over `comm`), and every message carries m->tag. The
     application's own traffic on `comm` can never match ours. The duplicate
     gets MPI_ERRORS_RETURN so a failure comes back as a code, not an abort.

   MESSAGE SIZES
     MPI counts are int. A message of more than INT_MAX bytes is sent as two
     MPI messages: whole blocks of COLL_MPI_BLOCK bytes in one derived
     datatype, then the remaining bytes. The receiver, knowing the exact size
     (the port contract), cuts it the same way. Both halves sit in one handle.

   ERRORS
     An MPI error returns COLL_MPI_ERR (= COLL_ERR_IO); m->last_error keeps
     the MPI code for MPI_Error_string. A message shorter than the receive
     returns COLL_ERR_MISMATCH; a longer one is MPI's truncation error.
     A table full of handles returns COLL_AGAIN. (MPICH 4.0 raises an error
     that MPI_Test finds - truncation, in yield mode or from coll_progress -
     on MPI_COMM_WORLD's handler, which aborts by default.)

   WAITING
     By default a blocking call blocks inside MPI, which then waits its own
     way (Open MPI yields when idle; MPICH busy-polls, which collapses when
     ranks outnumber cores). Set m->yield = 1 to wait by MPI_Test plus
     sched_yield instead, and m->timeout_ms > 0 to give every blocking wait a
     deadline: COLL_ERR_TIMEOUT. An expired receive is cancelled, so nothing
     lands in its buffer later; an expired send stays posted (MPI cannot
     take a send back), so after a timeout treat the collective's peers as
     out of step. When a wait on a handle fails (a timeout, a size
     mismatch, an MPI error) the collective it belongs to is over, and
     coll.h never waits for the others it has in flight: the port then
     cancels every receive still posted in its table (so none of them
     lands later in a buffer the caller has been given back) and lets
     every posted send finish on its own; the whole table is free again.

   CONFIGURATION (define before including)
     COLL_MPI_HANDLES   requests outstanding at once per rank      (16)
     COLL_MPI_BLOCK     block size for messages > INT_MAX bytes    (1 MiB)
     COLL_MPI_MAX_COUNT largest byte count sent as one MPI message (INT_MAX;
                        tests lower it to exercise the cutting)
     COLL_MPI_STATIC    make the functions static                  (off)

   LICENCE: MIT, as coll.h.
*/
#ifndef COLL_MPI_H
#define COLL_MPI_H

#include <limits.h>
#include <mpi.h>
#ifndef COLL_H
#include "coll.h"
#endif

#ifndef COLL_MPI_HANDLES
#define COLL_MPI_HANDLES 16
#endif
#ifndef COLL_MPI_BLOCK
#define COLL_MPI_BLOCK ((size_t)1 << 20)
#endif
#ifndef COLL_MPI_MAX_COUNT             /* largest count of one MPI message */
#define COLL_MPI_MAX_COUNT INT_MAX
#endif
#ifndef COLL_MPI_API
#ifdef COLL_MPI_STATIC
#define COLL_MPI_API static
#else
#define COLL_MPI_API extern
#endif
#endif

#define COLL_MPI_ERR COLL_ERR_IO

#ifdef __cplusplus
extern "C" {
#endif

typedef struct coll_mpi {
    MPI_Comm comm;           /* our private duplicate                        */
    int tag;                 /* carried by every message (default 0x636c)    */
    int rank, nranks;
    int yield;               /* 1: wait by MPI_Test + sched_yield            */
    unsigned timeout_ms;     /* > 0: deadline of every blocking wait          */
    int last_error;          /* last MPI error code (for MPI_Error_string)    */
    MPI_Datatype block;      /* COLL_MPI_BLOCK contiguous bytes               */
    /* the handle table: up to two MPI requests per transfer (see sizes)     */
    MPI_Request req[COLL_MPI_HANDLES][2];
    int expect[COLL_MPI_HANDLES][2];   /* receive: element counts expected   */
    unsigned char used[COLL_MPI_HANDLES];
    unsigned char is_recv[COLL_MPI_HANDLES];
    int attached;            /* communicators coll_init put on this port     */
} coll_mpi;

/* Duplicates `comm` (collective), fills *port with our functions and returns
   this rank and the rank count. 0 or COLL_MPI_ERR. */
COLL_MPI_API int coll_mpi_port_init(coll_mpi *m, MPI_Comm comm, coll_port *port,
                                    int *rank, int *nranks);
/* Frees the duplicate communicator and datatype (collective over comm). */
COLL_MPI_API int coll_mpi_port_free(coll_mpi *m);
/* The lifecycle every port shares: init (port_init without the port),
   port, close (port_free). No abort: MPI has none short of MPI_Abort. */
COLL_MPI_API int coll_mpi_init(coll_mpi *m, MPI_Comm comm, int *rank, int *nranks);
COLL_MPI_API coll_port coll_mpi_port(coll_mpi *m);
COLL_MPI_API int coll_mpi_close(coll_mpi *m);

COLL_MPI_API int coll_mpi_send(void *ctx, int peer, const void *buf, size_t bytes);
COLL_MPI_API int coll_mpi_recv(void *ctx, int peer, void *buf, size_t bytes);
COLL_MPI_API int coll_mpi_sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes,
                                   int from, void *rbuf, size_t rbytes);
COLL_MPI_API int coll_mpi_isend(void *ctx, int peer, const void *buf, size_t bytes, int *handle);
COLL_MPI_API int coll_mpi_irecv(void *ctx, int peer, void *buf, size_t bytes, int *handle);
COLL_MPI_API int coll_mpi_wait(void *ctx, int handle, int block);

#ifdef __cplusplus
}
#endif
#endif /* COLL_MPI_H */

/* ========================================================================= */
#if defined(COLL_MPI_IMPLEMENTATION) && !defined(COLL_MPI__IMPLEMENTED)
#define COLL_MPI__IMPLEMENTED
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#include <sched.h>
#define COLL_MPI__YIELD() sched_yield()
#else
#define COLL_MPI__YIELD() ((void)0)
#endif

static int coll_mpi__fail(coll_mpi *m, int mpi_rc)
{
    m->last_error = mpi_rc;
    return COLL_MPI_ERR;
}

/* How one message of `bytes` is cut into MPI messages: n[0] blocks of
   COLL_MPI_BLOCK bytes (only above COLL_MPI_MAX_COUNT), then n[1] single bytes. Both
   ends compute it from the same size, so the parts pair up in order. */
static void coll_mpi__split(size_t bytes, int n[2])
{
    if (bytes <= (size_t)COLL_MPI_MAX_COUNT) {
        n[0] = 0;
        n[1] = (int)bytes;
    } else {
        n[0] = (int)(bytes / COLL_MPI_BLOCK);
        n[1] = (int)(bytes % COLL_MPI_BLOCK);
    }
}

static int coll_mpi__check_size(size_t bytes)
{
    /* beyond INT_MAX blocks of a block each there is nothing left to cut */
    return bytes / COLL_MPI_BLOCK <= (size_t)INT_MAX ? 0 : COLL_ERR_INVAL;
}

/* Post the (one or two) MPI messages of one transfer into r[2]. */
static int coll_mpi__post(coll_mpi *m, int is_recv, int peer, const void *buf,
                          size_t bytes, MPI_Request r[2], int expect[2])
{
    int n[2], rc = MPI_SUCCESS;
    unsigned char *p = (unsigned char *)buf;
    r[0] = r[1] = MPI_REQUEST_NULL;
    if (peer < 0 || peer >= m->nranks || coll_mpi__check_size(bytes))
        return COLL_ERR_INVAL;
    coll_mpi__split(bytes, n);
    expect[0] = n[0];
    expect[1] = n[1];
    if (n[0] > 0)
        rc = is_recv ? MPI_Irecv(p, n[0], m->block, peer, m->tag, m->comm, &r[0])
                     : MPI_Isend(p, n[0], m->block, peer, m->tag, m->comm, &r[0]);
    if (rc == MPI_SUCCESS && n[1] > 0) {
        p += (size_t)n[0] * COLL_MPI_BLOCK;
        rc = is_recv ? MPI_Irecv(p, n[1], MPI_BYTE, peer, m->tag, m->comm, &r[1])
                     : MPI_Isend(p, n[1], MPI_BYTE, peer, m->tag, m->comm, &r[1]);
    }
    return rc == MPI_SUCCESS ? 0 : coll_mpi__fail(m, rc);
}

static double coll_mpi__now_ms(void)
{
    return MPI_Wtime() * 1e3;
}

/* Take back the receive requests in r[0..1] still posted, so that a late
   message cannot land in a buffer the caller has been given back (one
   that matched already completes here, before we return). */
static void coll_mpi__cancel(MPI_Request r[2])
{
    int i;
    for (i = 0; i < 2; i++)
        if (r[i] != MPI_REQUEST_NULL) {
            MPI_Cancel(&r[i]);
            MPI_Wait(&r[i], MPI_STATUS_IGNORE);
        }
}

/* A transfer failed (timeout, size, MPI error): the collective it belongs
   to is over - coll.h breaks the communicator and never waits for the
   other handles it has posted (the executor keeps up to four in flight).
   Take back every receive still posted, so that none lands later in a
   buffer the caller has been given back, and let every send finish on
   its own (MPI cannot take one back); every slot is free again. */
static void coll_mpi__drop_all(coll_mpi *m)
{
    int h, i;
    for (h = 0; h < COLL_MPI_HANDLES; h++) {
        if (!m->used[h]) continue;
        if (m->is_recv[h]) coll_mpi__cancel(m->req[h]);
        else
            for (i = 0; i < 2; i++)
                if (m->req[h][i] != MPI_REQUEST_NULL) MPI_Request_free(&m->req[h][i]);
        m->used[h] = 0;
    }
}

/* Complete requests r[0..1]; with block = 0 just test once. Each request
   is completed on its own (MPI_Wait/MPI_Test, not the -all forms): an error
   of a single request goes to our communicator's handler (return), while
   MPICH raises an error inside MPI_Testall on MPI_COMM_WORLD's (abort).
   A receive's size is checked the moment it completes. */
static int coll_mpi__complete(coll_mpi *m, MPI_Request r[2], const int expect[2],
                              int is_recv, int block)
{
    double deadline = coll_mpi__now_ms() + (double)m->timeout_ms;
    int plain = block && !m->yield && m->timeout_ms == 0, i;
    for (;;) {
        int pending = 0;
        for (i = 0; i < 2; i++) {
            MPI_Status st;
            int flag = 1, rc, got = 0;
            if (r[i] == MPI_REQUEST_NULL)
                continue;
            rc = plain ? MPI_Wait(&r[i], &st) : MPI_Test(&r[i], &flag, &st);
            if (rc != MPI_SUCCESS)
                return coll_mpi__fail(m, rc);
            if (!flag) {
                pending = 1;
                continue;
            }
            if (is_recv) {
                MPI_Get_count(&st, i == 0 ? m->block : MPI_BYTE, &got);
                if (got != expect[i]) {
                    coll_mpi__cancel(r);     /* the other part, if still posted */
                    return COLL_ERR_MISMATCH;
                }
            }
        }
        if (!pending)
            return 0;
        if (!block)
            return COLL_AGAIN;
        if (m->timeout_ms > 0 && coll_mpi__now_ms() > deadline) {
            /* Take back a receive, so that a late message cannot land in a
               buffer the caller has been given back. (A send cannot be
               taken back in MPI: it stays posted.) */
            if (is_recv)
                coll_mpi__cancel(r);
            return COLL_ERR_TIMEOUT;
        }
        COLL_MPI__YIELD();
    }
}

COLL_MPI_API int coll_mpi_port_init(coll_mpi *m, MPI_Comm comm, coll_port *port,
                                    int *rank, int *nranks)
{
    int rc, i;
    m->tag = 0x636c;                                    /* "cl" */
    m->yield = 0;
    m->timeout_ms = 0;
    m->last_error = MPI_SUCCESS;
    m->attached = 0;
    for (i = 0; i < COLL_MPI_HANDLES; i++)
        m->used[i] = 0;
    rc = MPI_Comm_dup(comm, &m->comm);
    if (rc != MPI_SUCCESS)
        return coll_mpi__fail(m, rc);
    MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(m->comm, &m->rank);
    MPI_Comm_size(m->comm, &m->nranks);
    rc = MPI_Type_contiguous((int)COLL_MPI_BLOCK, MPI_BYTE, &m->block);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(&m->block);
    if (rc != MPI_SUCCESS)
        return coll_mpi__fail(m, rc);
    *port = coll_mpi_port(m);
    if (rank)
        *rank = m->rank;
    if (nranks)
        *nranks = m->nranks;
    return 0;
}

COLL_MPI_API int coll_mpi_port_free(coll_mpi *m)
{
    int rc = MPI_Type_free(&m->block);
    int rc2 = MPI_Comm_free(&m->comm);
    if (rc != MPI_SUCCESS)
        return coll_mpi__fail(m, rc);
    return rc2 == MPI_SUCCESS ? 0 : coll_mpi__fail(m, rc2);
}

COLL_MPI_API int coll_mpi_init(coll_mpi *m, MPI_Comm comm, int *rank, int *nranks)
{
    coll_port unused;
    return coll_mpi_port_init(m, comm, &unused, rank, nranks);
}

/* coll_port.attach: the communicators over this rank's end, counted. */
static int coll_mpi__attach(void *ctx)
{
    return ((coll_mpi *)ctx)->attached++;
}

COLL_MPI_API coll_port coll_mpi_port(coll_mpi *m)
{
    coll_port p;
    memset(&p, 0, sizeof p);           /* members this port does not know (abort: none) */
    p.ctx = m;
    p.send = coll_mpi_send;
    p.recv = coll_mpi_recv;
    p.sendrecv = coll_mpi_sendrecv;
    p.isend = coll_mpi_isend;
    p.irecv = coll_mpi_irecv;
    p.wait = coll_mpi_wait;
    p.attach = coll_mpi__attach;
    return p;
}

COLL_MPI_API int coll_mpi_close(coll_mpi *m) { return coll_mpi_port_free(m); }

/* Blocking calls post and complete on stack requests, so they never take a
   slot of the handle table. */
COLL_MPI_API int coll_mpi_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    coll_mpi *m = (coll_mpi *)ctx;
    MPI_Request r[2];
    int expect[2], rc;
    if (!m->yield && m->timeout_ms == 0 && bytes <= (size_t)COLL_MPI_MAX_COUNT) {
        if (peer < 0 || peer >= m->nranks)
            return COLL_ERR_INVAL;
        rc = MPI_Send(buf, (int)bytes, MPI_BYTE, peer, m->tag, m->comm);
        return rc == MPI_SUCCESS ? 0 : coll_mpi__fail(m, rc);
    }
    rc = coll_mpi__post(m, 0, peer, buf, bytes, r, expect);
    return rc ? rc : coll_mpi__complete(m, r, expect, 0, 1);
}

COLL_MPI_API int coll_mpi_recv(void *ctx, int peer, void *buf, size_t bytes)
{
    coll_mpi *m = (coll_mpi *)ctx;
    MPI_Request r[2];
    int expect[2], rc;
    if (!m->yield && m->timeout_ms == 0 && bytes <= (size_t)COLL_MPI_MAX_COUNT) {
        MPI_Status st;
        int got = 0;
        if (peer < 0 || peer >= m->nranks)
            return COLL_ERR_INVAL;
        rc = MPI_Recv(buf, (int)bytes, MPI_BYTE, peer, m->tag, m->comm, &st);
        if (rc != MPI_SUCCESS)
            return coll_mpi__fail(m, rc);
        MPI_Get_count(&st, MPI_BYTE, &got);
        return (size_t)got == bytes ? 0 : COLL_ERR_MISMATCH;
    }
    rc = coll_mpi__post(m, 1, peer, buf, bytes, r, expect);
    return rc ? rc : coll_mpi__complete(m, r, expect, 1, 1);
}

COLL_MPI_API int coll_mpi_sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes,
                                   int from, void *rbuf, size_t rbytes)
{
    coll_mpi *m = (coll_mpi *)ctx;
    MPI_Request rs[2], rr[2];
    int es[2], er[2], rc;
    if (!m->yield && m->timeout_ms == 0 && sbytes <= (size_t)COLL_MPI_MAX_COUNT &&
        rbytes <= (size_t)COLL_MPI_MAX_COUNT) {
        MPI_Status st;
        int got = 0;
        if (to < 0 || to >= m->nranks || from < 0 || from >= m->nranks)
            return COLL_ERR_INVAL;
        rc = MPI_Sendrecv(sbuf, (int)sbytes, MPI_BYTE, to, m->tag,
                          rbuf, (int)rbytes, MPI_BYTE, from, m->tag, m->comm, &st);
        if (rc != MPI_SUCCESS)
            return coll_mpi__fail(m, rc);
        MPI_Get_count(&st, MPI_BYTE, &got);
        return (size_t)got == rbytes ? 0 : COLL_ERR_MISMATCH;
    }
    /* receive posted first, so a synchronous send on the other side finds it */
    rc = coll_mpi__post(m, 1, from, rbuf, rbytes, rr, er);
    if (rc == 0)
        rc = coll_mpi__post(m, 0, to, sbuf, sbytes, rs, es);
    if (rc == 0)
        rc = coll_mpi__complete(m, rs, es, 0, 1);
    if (rc == 0)
        rc = coll_mpi__complete(m, rr, er, 1, 1);
    return rc;
}

static int coll_mpi__ipost(coll_mpi *m, int is_recv, int peer, const void *buf,
                           size_t bytes, int *handle)
{
    int h, rc;
    for (h = 0; h < COLL_MPI_HANDLES && m->used[h]; h++)
        ;
    if (h == COLL_MPI_HANDLES)
        return COLL_AGAIN;                    /* nothing posted; try later */
    rc = coll_mpi__post(m, is_recv, peer, buf, bytes, m->req[h], m->expect[h]);
    if (rc)
        return rc;
    m->used[h] = 1;
    m->is_recv[h] = (unsigned char)is_recv;
    *handle = h;
    return 0;
}

COLL_MPI_API int coll_mpi_isend(void *ctx, int peer, const void *buf, size_t bytes, int *handle)
{
    return coll_mpi__ipost((coll_mpi *)ctx, 0, peer, buf, bytes, handle);
}

COLL_MPI_API int coll_mpi_irecv(void *ctx, int peer, void *buf, size_t bytes, int *handle)
{
    return coll_mpi__ipost((coll_mpi *)ctx, 1, peer, buf, bytes, handle);
}

COLL_MPI_API int coll_mpi_wait(void *ctx, int handle, int block)
{
    coll_mpi *m = (coll_mpi *)ctx;
    int rc;
    if (handle < 0 || handle >= COLL_MPI_HANDLES || !m->used[handle])
        return COLL_ERR_INVAL;
    rc = coll_mpi__complete(m, m->req[handle], m->expect[handle],
                            m->is_recv[handle], block);
    if (rc != COLL_AGAIN)
        m->used[handle] = 0;      /* done or failed: the slot is free again */
    if (rc != COLL_AGAIN && rc != 0)
        coll_mpi__drop_all(m);    /* and the failed collective's other transfers */
    return rc;
}

#endif /* COLL_MPI_IMPLEMENTATION */
