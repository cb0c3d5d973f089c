/* coll_mpi_drop_in.c - an unchanged MPI program's collectives through coll

   A PMPI library: it defines MPI_Allreduce, MPI_Bcast, MPI_Reduce,
   MPI_Allgather(v), MPI_Gather(v), MPI_Scatter(v), MPI_Alltoall(v),
   MPI_Reduce_scatter(_block), MPI_Scan, MPI_Exscan and MPI_Barrier; each
   call it can express, at a size where coll was measured faster than the
   MPI library, runs through coll.h; every other call goes to the PMPI_
   function unchanged. Built once per MPI (the ABIs differ):

       mpirun -x LD_PRELOAD=build/lib/libcoll_mpi_openmpi.so ./prog     Open MPI
       mpirun.mpich -genv LD_PRELOAD build/lib/libcoll_mpi_mpich.so ./prog

   or linked before the MPI library (-lcoll_mpi_openmpi before -lmpi).

   THE RULE: never a wrong result. A call routes only when every argument
   means to coll exactly what it means to MPI: predefined contiguous
   datatypes (reductions: those that are a coll dtype), predefined ops
   coll has, or MPI_Op_create ops carried by coll's user op, on an
   intracommunicator, send and receive buffers apart (or MPI_IN_PLACE).
   Everything else falls back, with MPI's own answer (an aliased buffer:
   MPI_ERR_BUFFER where the MPI library says so). Every rank takes the
   same road: the first checks read only what MPI requires to agree on
   every rank (the signature's size, root, op, communicator); what a rank
   alone can see (a derived datatype where another rank has a predefined
   one of the same signature, a NULL buffer in a zero-size call, aliasing)
   is told to every rank through coll's call check, and all fall back
   together (di_local).

   TRANSPORT: one coll communicator per MPI communicator, made at its first
   routed call (collective over it) and cached on it with an attribute;
   MPI frees it with the communicator. Ranks all on one host talk through
   the shm port (ports/coll_shm.h, a segment of their own), otherwise
   through the MPI port (ports/coll_mpi.h: point-to-point on a private
   duplicate, so the program's messages never match coll's).

   SEVERAL HOSTS: where a communicator's ranks are on more than one host
   (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED); a rank's host key is the
   lowest MPI_COMM_WORLD rank of its shared communicator), the collectives
   coll_hier.h has (allreduce, bcast, reduce, allgather, gather, scatter,
   alltoall, reduce_scatter_block, barrier) run through it: inside each
   host, then across, over sub-communicators of the one coll communicator
   (coll_hier_init). The v-forms, scan and exscan stay flat. There every
   routed call first agrees on its road (one 4-byte all-reduce, as verify
   mode does): a rank's local reason to fall back cannot be told through
   phases the other ranks run on communicators it is not in.

   ENVIRONMENT
     COLL_MPI_ROUTE=0         route nothing (every call to PMPI)
     COLL_MPI_VERBOSE=1       at MPI_Finalize, each rank writes to stderr a
                              table per communicator: collective, size
                              class, calls routed, calls to MPI and why,
                              time each way; rank 0 adds the summary line
                              "coll-mpi: routed R of N calls (P ranks; ...)"
     COLL_MPI_VERBOSE=2       the same, and a line per call as it ends
     COLL_MPI_LOG=path        the report to a file per rank instead of
                              stderr: "%r" in path is the rank in
                              MPI_COMM_WORLD, or ".<rank>" is appended;
                              implies COLL_MPI_VERBOSE=1 if that is unset
     COLL_MPI_RECORD=path     the flight recorder's file per rank ("%r" as in
                              COLL_MPI_LOG): each coll communicator keeps its
                              last 64 calls (coll_set_recorder, nanoseconds
                              of CLOCK_MONOTONIC), written there when a
                              routed call fails, when the communicator is
                              freed and at MPI_Finalize; unset, a failure's
                              calls go to stderr                    (unset)
     COLL_MPI_JOIN_MS=<ms>    the shm segment's join waits this long at most;
                              then every rank falls back on that
                              communicator ("no transport")       (10000)
     COLL_MPI_TIMEOUT_MS=<ms> a routed call over shm that sees no progress
                              this long fails (and aborts the job) (0: none)
     COLL_MPI_VERIFY=1        every routed call also runs through PMPI on a
                              copy; a difference aborts with a message
     COLL_MPI_MIN=<bytes>     route every collective from this size ("off":
                              never), over the shipped table
     COLL_MPI_MIN_<NAME>=..   the same for one collective (ALLREDUCE, BCAST,
                              REDUCE, ALLGATHER, ALLGATHERV, GATHER, GATHERV,
                              SCATTER, SCATTERV, ALLTOALL, ALLTOALLV,
                              REDUCE_SCATTER, REDUCE_SCATTER_BLOCK, SCAN,
                              EXSCAN, BARRIER)
     COLL_MPI_THRESHOLDS=path a thresholds file (make mpi-drop-in-tune writes
                              build/mpi/thresholds_<mpi>.txt, coll_mpi_tune
                              version 2) in place of the compiled table;
                              COLL_MPI_MIN... still apply. Unset: the file
                              make mpi-tune writes, $XDG_CONFIG_HOME/coll/
                              mpi-thresholds-<mpi> (else $HOME/.config/coll/
                              ...), where there is one; empty: the compiled
                              table (di_default_path).
                              The ranks' tables are agreed at MPI_Init: the
                              largest value of any rank applies (and so are
                              ROUTE, VERIFY, TRANSPORT, HIER: di_agree_settings)
     COLL_MPI_TRANSPORT=shm|mpi   force a transport (shm needs one host)
     COLL_MPI_SCRATCH=<bytes> coll scratch per communicator      (1 MiB)
     COLL_MPI_CORES=<n>       tell AUTO the ranks share n cores (see
                              coll_set_cores); every rank must say the same,
                              or none is told                      (none)
     COLL_MPI_HIER=0          on several hosts, every collective flat (on)
     COLL_MPI_TEST_HOSTS=L    tests: fake hosts of L consecutive world
                              ranks each ("%H": H hosts, world rank r on
                              host r % H), whatever the machine says
     COLL_MPI_PROGRESS=1      while coll waits on shm, poll and drive MPI's
                              progress instead of the port's own waiting
                              (see the transport's note below)      (off)

   LICENCE: MIT, as coll.h. */
#define _GNU_SOURCE
#include <mpi.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"   /* the ports' unused calls */
#endif
#define COLL_STATIC                    /* private copies: a program may have its own */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_MPI_STATIC
#define COLL_MPI_IMPLEMENTATION
#include "../ports/coll_mpi.h"
#define COLL_SHM_STATIC
#define COLL_SHM_IMPLEMENTATION
#include "../ports/coll_shm.h"
#include "../coll_hier.h"

#define DI_EXPORT __attribute__((visibility("default")))

/* ---- the collectives, the reasons, the thresholds ------------------------ */
#define DI_KIND_LIST(X)                                                       \
    X(ALLREDUCE, "MPI_Allreduce") X(BCAST, "MPI_Bcast") X(REDUCE, "MPI_Reduce") \
    X(ALLGATHER, "MPI_Allgather") X(ALLGATHERV, "MPI_Allgatherv")             \
    X(GATHER, "MPI_Gather") X(GATHERV, "MPI_Gatherv")                         \
    X(SCATTER, "MPI_Scatter") X(SCATTERV, "MPI_Scatterv")                     \
    X(ALLTOALL, "MPI_Alltoall") X(ALLTOALLV, "MPI_Alltoallv")                 \
    X(REDUCE_SCATTER, "MPI_Reduce_scatter")                                   \
    X(REDUCE_SCATTER_BLOCK, "MPI_Reduce_scatter_block")                       \
    X(SCAN, "MPI_Scan") X(EXSCAN, "MPI_Exscan") X(BARRIER, "MPI_Barrier")
#define DI__ENUM(N, S) DI_##N,
#define DI__NAME(N, S) S,
#define DI__ENV(N, S) #N,
enum { DI_KIND_LIST(DI__ENUM) DI_KINDS };
static const char *const di_name[DI_KINDS] = { DI_KIND_LIST(DI__NAME) };
static const char *const di_env[DI_KINDS] = { DI_KIND_LIST(DI__ENV) };

/* Why a call went where it went (the verbose report's columns). */
#define DI_WHY_LIST(X)                                                        \
    X(ROUTED, "routed") X(OFF, "switched off") X(SIZE, "below threshold")    \
    X(TYPE, "datatype") X(OP, "op") X(COMM, "communicator")                   \
    X(THREAD, "thread level") X(ARGS, "arguments") X(ALIAS, "aliased buffers") \
    X(PEER, "another rank's reason") X(SETUP, "no transport")                \
    X(REFUSED, "coll refused")
#define DI__WHY(N, S) W_##N,
enum { DI_WHY_LIST(DI__WHY) DI_WHYS };
static const char *const di_why_name[DI_WHYS] = { DI_WHY_LIST(DI__NAME) };

/* Smallest size (bytes of the call's largest buffer, the same on every
   rank) routed, per collective and rank count 1..8 (index 8: 8 and more);
   -1 never. The v-forms whose size no rank knows whole (gatherv, scatterv,
   alltoallv) and barrier route only where the entry is 0. Measured by
   `make mpi-drop-in-tune` on the machine the library was built for.
   In force, each (collective, rank count) holds up to DI_RANGES ranges
   of sizes routed (a compiled entry or COLL_MPI_MIN: one, up from it; a
   calibrated file, version 2: the ranges where coll measured faster). */
#define DI_NEVER (-1LL)
#define DI_RANGES 6
typedef struct { int n; long long lo[DI_RANGES], hi[DI_RANGES]; } di_sizes;   /* lo <= bytes <= hi */
static void di_from(di_sizes *r, long long min)
{
    r->n = min >= 0;
    r->lo[0] = min;
    r->hi[0] = LLONG_MAX;
}
#if defined(OPEN_MPI)
#include "thresholds_openmpi.h"
#define DI_TABLE di_min_openmpi
#else
#include "thresholds_mpich.h"
#define DI_TABLE di_min_mpich
#endif

/* Size classes of the verbose table (bytes as the thresholds count them;
   the v-forms whose size no rank knows whole: this rank's own bytes). */
#define DI_CLASSES 6
static const char *const di_class_name[DI_CLASSES] = {
    "0B", "1B-1KiB", "1K-64KiB", "64K-1MiB", "1M-16MiB", ">16MiB" };
static int di_class(long long b)
{
    return b <= 0 ? 0 : b <= 1024 ? 1 : b <= 65536 ? 2 : b <= 1048576 ? 3 : b <= 16777216 ? 4 : 5;
}

/* ---- the process's settings and counters --------------------------------- */
static struct {
    int ready, on, verbose, verify, progress, thread_multiple;
    long long join_ms, timeout_ms;  /* COLL_MPI_JOIN_MS, COLL_MPI_TIMEOUT_MS   */
    int nojoin;                     /* tests: this rank never joins the shm  */
    const char *log;                /* COLL_MPI_LOG                          */
    FILE *out;                      /* where the report goes (stderr)       */
    const char *record;             /* COLL_MPI_RECORD                       */
    FILE *rec;                      /* its file, opened at the first dump    */
    int finalizing;                 /* MPI_Finalize frees the communicators  */
    int ncomm;                      /* coll communicators made (their ids)   */
    int hier;                       /* COLL_MPI_HIER (1)                     */
    long long test_hosts;           /* COLL_MPI_TEST_HOSTS: L, or -H for %H  */
    long long roads[4];             /* coll_hier calls by road (the report)  */
    int transport;                  /* 0 auto, 1 shm, 2 mpi                  */
    size_t scratch;
    long long cores;                /* COLL_MPI_CORES (0: not told)          */
    di_sizes route[DI_KINDS][9];    /* the sizes routed, by rank count      */
    char source[4200];              /* where they came from (verbose)       */
    int key;                        /* the attribute keyval                  */
    long long count[DI_KINDS][DI_WHYS];
    unsigned serial;                /* shm segment names                     */
    int inject;                     /* tests: spoil the first routed result  */
} di;

/* MPI_Op_create's functions: MPI gives no way back from an op to them. */
#define DI_UOPS 64
static struct { MPI_Op op; MPI_User_function *fn; int commute; } di_uop[DI_UOPS];
static int di_nuop;

/* One MPI communicator's coll side. */
#define DI_RING 64                  /* calls the flight recorder keeps       */
typedef struct di_comm {
    coll_comm c;
    int rank, p, dead;              /* dead: setup failed, never route       */
    int id;                         /* 1, 2, ... in the order they were made */
    coll_record ring[DI_RING];      /* the flight recorder (coll_dump)       */
    coll_hier *hier;                /* several hosts: the hierarchical forms */
    int hosts;                      /* hosts its ranks are on (with hier)    */
    MPI_Comm comm;
    coll_port inner, port;          /* the transport's port; ours around it  */
    coll_shm *shm;
    coll_mpi *mp;
    unsigned char *scratch;
    unsigned char *buf[2];          /* pack/unpack and workspace, growing    */
    size_t cap[2];
    size_t *counts;                 /* p x p for alltoallv, else p           */
    uint64_t *row;                  /* exchanged counts                      */
    struct { MPI_User_function *fn; MPI_Datatype dt; } uctx;   /* user op   */
    struct di_comm *next;
} di_comm;
static di_comm *di_list;

/* ---- the report's bookkeeping ---------------------------------------------- */
/* The call in progress: its collective, the road it took and why, its
   size; set by the body, counted by the exported wrapper (di_begin,
   di_end). Per thread: under MPI_THREAD_MULTIPLE every call still passes
   through here (to MPI). */
static __thread struct { int k, why; long long bytes; double t0; } di_cur;

/* With COLL_MPI_VERBOSE, one record per communicator a call was made on
   (an attribute; kept past MPI_Comm_free for the report). */
typedef struct di_stats {
    int id, p, freed;
    char name[MPI_MAX_OBJECT_NAME];
    long long n[DI_KINDS][DI_CLASSES][DI_WHYS];
    double sec[DI_KINDS][DI_CLASSES][2];    /* [0] routed, [1] by MPI        */
    struct di_stats *next;
} di_stats;
static di_stats *di_stats_list;
static int di_skey = MPI_KEYVAL_INVALID, di_nstats, di_rank_w = -1;
static int di_summary;              /* some rank reports: all join its sum  */
static pthread_mutex_t di_lock = PTHREAD_MUTEX_INITIALIZER;   /* THREAD_MULTIPLE */

static double di_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int di_wrank(void)
{
    int init = 0;
    if (di_rank_w < 0 && PMPI_Initialized(&init) == MPI_SUCCESS && init) PMPI_Comm_rank(MPI_COMM_WORLD, &di_rank_w);
    return di_rank_w < 0 ? 0 : di_rank_w;
}

/* Where the report goes: stderr, or with COLL_MPI_LOG=path this rank's
   own file: "%r" in path replaced by the rank in MPI_COMM_WORLD, or the
   rank appended (path.3) where there is none. A file that cannot be
   opened: stderr, said once. */
static void di_path(char *path, size_t n, const char *pattern)
{
    const char *at = strstr(pattern, "%r");
    if (at) snprintf(path, n, "%.*s%d%s", (int)(at - pattern), pattern, di_wrank(), at + 2);
    else snprintf(path, n, "%s.%d", pattern, di_wrank());
}

static FILE *di_out(void)
{
    char path[4096];
    if (di.out) return di.out;
    di.out = stderr;
    if (!di.log) return di.out;
    di_path(path, sizeof path, di.log);
    if (!(di.out = fopen(path, "w"))) {
        di.out = stderr;
        fprintf(stderr, "coll-mpi[%d]: COLL_MPI_LOG: cannot write %s; reporting to stderr\n", di_wrank(), path);
    }
    return di.out;
}

/* ---- the flight recorder ----------------------------------------------------
   Each coll communicator's ring of its last DI_RING calls (coll.h's
   recorder: written as each call starts and ends, no heap, a clock read
   at each end). It is read only when something asks: a routed call that
   failed (before the abort), the communicator's free, MPI_Finalize; with
   COLL_MPI_RECORD to this rank's file, a communicator a block:
       coll-mpi[RANK]: communicator ID: NAME, P ranks, WHY
       call 1 allreduce ring dtype 4 op 0 root 0 bytes 400 start ... ok
   (coll_dump's lines, oldest first; start and end in nanoseconds). */
static uint64_t di_ns(void *ctx)
{
    struct timespec t;
    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int di_write(void *ctx, const char *text, size_t n)
{
    return fwrite(text, 1, n, (FILE *)ctx) == n ? 0 : -1;
}

/* COLL_MPI_RECORD's file (opened once, written in turn), or stderr for a
   failure where it is unset or cannot be written (said once); NULL: none */
static FILE *di_rec_file(int failure)
{
    char path[4096];
    static int said;
    if (di.rec) return di.rec;
    if (di.record) {
        di_path(path, sizeof path, di.record);
        if ((di.rec = fopen(path, "w"))) return di.rec;
        if (!said++) fprintf(stderr, "coll-mpi[%d]: COLL_MPI_RECORD: cannot write %s\n", di_wrank(), path);
    }
    return failure ? stderr : 0;
}

static void di_record_dump(di_comm *d, const char *why, int failure)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len = 0;
    FILE *f;
    if (d->dead || !(f = di_rec_file(failure))) return;
    if (PMPI_Comm_get_name(d->comm, name, &len) != MPI_SUCCESS || !name[0]) snprintf(name, sizeof name, "(unnamed)");
    fprintf(f, "coll-mpi[%d]: communicator %d: %s, %d ranks, %s\n", di_wrank(), d->id, name, d->p, why);
    coll_dump(&d->c, di_write, f);
    fflush(f);
}

static int di_stats_delete(MPI_Comm comm, int key, void *val, void *extra)
{
    (void)comm; (void)key; (void)extra;
    ((di_stats *)val)->freed = 1;
    return MPI_SUCCESS;
}

static di_stats *di_stats_of(MPI_Comm comm)
{
    di_stats *st;
    void *v;
    int flag = 0, len = 0;
    if (comm == MPI_COMM_NULL) return 0;
    if (di_skey == MPI_KEYVAL_INVALID &&
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, di_stats_delete, &di_skey, NULL) != MPI_SUCCESS)
        return 0;
    if (PMPI_Comm_get_attr(comm, di_skey, &v, &flag) != MPI_SUCCESS) return 0;
    if (flag) return (di_stats *)v;
    if (!(st = (di_stats *)calloc(1, sizeof *st))) return 0;
    st->id = ++di_nstats;
    PMPI_Comm_size(comm, &st->p);
    if (PMPI_Comm_get_name(comm, st->name, &len) != MPI_SUCCESS || !st->name[0])
        snprintf(st->name, sizeof st->name, "(unnamed)");
    st->next = di_stats_list;
    di_stats_list = st;
    PMPI_Comm_set_attr(comm, di_skey, st);
    return st;
}

static void di_begin(int k)
{
    di_cur.k = k;
    di_cur.why = W_ROUTED;
    di_cur.bytes = -1;
    if (di.verbose) di_cur.t0 = di_now();
}

static void di_end(MPI_Comm comm)
{
    int k = di_cur.k, why = di_cur.why, c = di_class(di_cur.bytes);
    double sec;
    di_stats *st;
    if (!di.verbose) { di.count[k][why]++; return; }
    sec = di_now() - di_cur.t0;
    if (di.thread_multiple) pthread_mutex_lock(&di_lock);
    di.count[k][why]++;
    if ((st = di_stats_of(comm))) {
        st->n[k][c][why]++;
        st->sec[k][c][why != W_ROUTED] += sec;
        if (di.verbose >= 2)
            fprintf(di_out(), "coll-mpi[%d]: call %d %s %lld B: %s%s%s%s %.1f us\n", di_wrank(), st->id, di_name[k],
                    di_cur.bytes < 0 ? 0 : di_cur.bytes, why == W_ROUTED ? "routed" : "to MPI",
                    why == W_ROUTED ? "" : " (", why == W_ROUTED ? "" : di_why_name[why],
                    why == W_ROUTED ? "" : ")", sec * 1e6);
    }
    if (di.thread_multiple) pthread_mutex_unlock(&di_lock);
}

static long long di_env_size(const char *name, long long dflt)
{
    const char *e = getenv(name);
    char *end;
    long long v;
    if (!e || !*e) return dflt;
    if (!strcmp(e, "off") || !strcmp(e, "never")) return DI_NEVER;
    v = strtoll(e, &end, 0);
    if (*end == 'k' || *end == 'K') v <<= 10;
    else if (*end == 'm' || *end == 'M') v <<= 20;
    return v < 0 ? DI_NEVER : v;
}

/* A field of a thresholds file ends here: a blank, the line's end or the string's. */
static int di_word_end(const char *at) { return *at == ' ' || *at == '\t' || *at == '\n' || !*at; }

/* The header line's version: 1 or 2; 0 where it is not a thresholds file. */
static int di_thresholds_version(const char *at)
{
    if (!strncmp(at, "coll-mpi-thresholds 1", 21) && di_word_end(at + 21)) return 1;
    if (!strncmp(at, "coll-mpi-thresholds 2", 21) && di_word_end(at + 21)) return 2;
    return 0;
}

/* A version-1 row past its name: the smallest size routed at 1..8 ranks,
   bytes or "never", into row[1..8] (row[0], no ranks: never). The rest
   of the line, or NULL where a field is not one. */
static char *di_row_v1(char *at, di_sizes row[9])
{
    char *end;
    long long v;
    int p, bad = 0;
    for (p = 1; p <= 8 && !bad; p++) {
        at += strspn(at, " \t");
        if (!strncmp(at, "never", 5) && di_word_end(at + 5)) { row[p].n = 0; at += 5; continue; }
        v = strtoll(at, &end, 10);
        if (end == at || v < 0 || !di_word_end(end)) bad = 1;
        di_from(&row[p], v);
        at = end;
    }
    row[0].n = 0;
    return bad ? NULL : at;
}

/* Up to DI_RANGES ranges "A-B" (both ends included) or "A-" (from A up)
   into *r. The rest of the line, or NULL where one is not a range or
   there are none. */
static char *di_ranges(char *at, di_sizes *r)
{
    char *end;
    r->n = 0;
    while (*at && *at != '\n') {
        if (r->n == DI_RANGES) return NULL;
        r->lo[r->n] = strtoll(at, &end, 10);
        if (end == at || r->lo[r->n] < 0 || *end != '-') return NULL;
        at = end + 1;
        if (di_word_end(at)) r->hi[r->n] = LLONG_MAX;
        else {
            r->hi[r->n] = strtoll(at, &end, 10);
            if (end == at || r->hi[r->n] < r->lo[r->n] || !di_word_end(end)) return NULL;
            at = end;
        }
        r->n++;
        at += strspn(at, " \t");
    }
    return r->n ? at : NULL;
}

/* A version-2 row past its name: a rank count 1..8, then its ranges or
   "never", into row[ranks]. The rest of the line, or NULL. */
static char *di_row_v2(char *at, di_sizes row[9])
{
    di_sizes r;
    char *end;
    int p;
    at += strspn(at, " \t");
    p = (int)strtol(at, &end, 10);
    if (end == at || p < 1 || p > 8 || !di_word_end(end)) return NULL;
    at = end + strspn(end, " \t");
    r.n = 0;
    if (!strncmp(at, "never", 5) && di_word_end(at + 5)) at += 5;
    else if (!(at = di_ranges(at, &r))) return NULL;
    row[p] = r;
    return at;
}

/* One row of a file of the given version: a collective's name (any case)
   and its fields, into t. 0 where the name is unknown, a field is not
   one or more follow. */
static int di_thresholds_row(char *at, int version, di_sizes t[DI_KINDS][9])
{
    char word[64];
    int k;
    if (sscanf(at, "%63s", word) != 1) return 0;
    for (k = 0; k < DI_KINDS && strcasecmp(word, di_env[k]); k++) {}
    if (k == DI_KINDS) return 0;
    at += strlen(word);
    at = version == 1 ? di_row_v1(at, t[k]) : di_row_v2(at, t[k]);
    if (!at) return 0;
    at += strspn(at, " \t\n");
    return !*at;
}

/* COLL_MPI_THRESHOLDS=path, or where it is unset the calibrated file
   `make mpi-tune` writes (di_default_path): a table for the machine at
   hand. Version 1, as `make mpi-drop-in-tune` writes it
   (build/mpi/thresholds_<mpi>.txt):
       coll-mpi-thresholds 1
       # comments
       allreduce  never never 4096 16777216 16777216 never never never
   a line per collective (the names of COLL_MPI_MIN_<NAME>, any case), its
   smallest size routed at 1, 2, ..., 8 (and more) ranks, in bytes or
   "never"; a collective left out keeps the compiled row. Version 2, as
   coll_mpi_tune writes it:
       coll-mpi-thresholds 2
       allreduce 2 4096-262144 16777216-
       bcast     2 never
   a line per collective and rank count (1..8, 8: 8 and more), then up to
   DI_RANGES ranges of sizes routed, in bytes, both ends included ("A-":
   from A up), or "never"; what it does not list is never routed (the
   file is the machine's calibration, not a patch). A file that is not
   one of these, in any line: said on stderr, and the compiled table stays
   whole. Read before COLL_MPI_MIN..., which still override it. */
static void di_read_thresholds(const char *what, const char *path, di_sizes t[DI_KINDS][9])
{
    di_sizes mine[DI_KINDS][9];
    char line[512], *at;
    int k, p, n = 0, bad = 0, version = 0;
    FILE *f = fopen(path, "r");
    if (!f) { fprintf(stderr, "coll-mpi: %s: cannot read %s; the compiled thresholds stay\n", what, path); return; }
    memcpy(mine, t, sizeof mine);
    while (!bad && fgets(line, sizeof line, f)) {
        n++;
        at = line + strspn(line, " \t");
        if (!strchr(line, '\n') && !feof(f)) bad = 1;                   /* too long */
        else if (*at == '#' || *at == '\n' || !*at) continue;
        else if (!version) {                                            /* the header */
            bad = !(version = di_thresholds_version(at));
            if (version == 2)                                           /* unlisted: never */
                for (k = 0; k < DI_KINDS; k++)
                    for (p = 0; p < 9; p++) mine[k][p].n = 0;
        } else bad = !di_thresholds_row(at, version, mine);
    }
    fclose(f);
    if (bad || !version) {
        fprintf(stderr, "coll-mpi: %s: %s, line %d: not a thresholds file (\"coll-mpi-thresholds 1\" then NAME and 8 "
                "sizes or \"never\" a line, or \"coll-mpi-thresholds 2\" then NAME RANKS and ranges A-B or \"never\"); "
                "the compiled thresholds stay\n", what, path, n);
        return;
    }
    memcpy(t, mine, sizeof mine);
    snprintf(di.source, sizeof di.source, "%s (version %d)", path, version);
}

/* Where `make mpi-tune` leaves its file and the library looks for it when
   COLL_MPI_THRESHOLDS is unset: $XDG_CONFIG_HOME/coll/mpi-thresholds-<mpi>,
   or $HOME/.config/coll/... (<mpi>: openmpi or mpich). 0: neither set. */
static int di_default_path(char *path, size_t n)
{
    const char *x = getenv("XDG_CONFIG_HOME"), *h = getenv("HOME");
#if defined(OPEN_MPI)
    const char *mpi = "openmpi";
#else
    const char *mpi = "mpich";
#endif
    if (x && *x) return snprintf(path, n, "%s/coll/mpi-thresholds-%s", x, mpi) < (int)n;
    if (h && *h) return snprintf(path, n, "%s/.config/coll/mpi-thresholds-%s", h, mpi) < (int)n;
    return 0;
}

static void di_settings(void)
{
    int k, p;
    long long all;
    const char *t = getenv("COLL_MPI_TRANSPORT"), *path;
    char name[64];
    char dflt[4096];
    di_sizes base[DI_KINDS][9];
    if (di.ready) return;
    di.ready = 1;
    di.on = di_env_size("COLL_MPI_ROUTE", 1) != 0;
    di.log = getenv("COLL_MPI_LOG");
    if (di.log && !*di.log) di.log = 0;
    di.verbose = (int)di_env_size("COLL_MPI_VERBOSE", di.log ? 1 : 0);
    di.record = getenv("COLL_MPI_RECORD");
    di.hier = di_env_size("COLL_MPI_HIER", 1) != 0;
    if ((path = getenv("COLL_MPI_TEST_HOSTS")) && *path)
        di.test_hosts = *path == '%' ? -strtoll(path + 1, 0, 10) : strtoll(path, 0, 10);
    if (di.record && !*di.record) di.record = 0;
    if (di.verbose < 0) di.verbose = 0;
    di.join_ms = di_env_size("COLL_MPI_JOIN_MS", 10000);
    if (di.join_ms <= 0 || di.join_ms > 3600000) di.join_ms = 10000;
    di.timeout_ms = di_env_size("COLL_MPI_TIMEOUT_MS", 0);
    if (di.timeout_ms < 0 || di.timeout_ms > 86400000) di.timeout_ms = 0;
    di.nojoin = (int)di_env_size("COLL_MPI_TEST_NOJOIN", -1);
    di.verify = di_env_size("COLL_MPI_VERIFY", 0) > 0;
    di.progress = di_env_size("COLL_MPI_PROGRESS", 0) > 0;
    di.inject = (int)di_env_size("COLL_MPI_VERIFY_INJECT", 0);
    di.transport = !t ? 0 : !strcmp(t, "shm") ? 1 : !strcmp(t, "mpi") ? 2 : 0;
    di.scratch = (size_t)di_env_size("COLL_MPI_SCRATCH", 1 << 20);
    di.cores = di_env_size("COLL_MPI_CORES", 0);
    if (di.scratch < 4096) di.scratch = 4096;
    for (k = 0; k < DI_KINDS; k++)
        for (p = 0; p < 9; p++) di_from(&base[k][p], DI_TABLE[k][p]);
    snprintf(di.source, sizeof di.source, "the compiled table");
    if ((path = getenv("COLL_MPI_THRESHOLDS"))) {               /* set but empty: the compiled table */
        if (*path) di_read_thresholds("COLL_MPI_THRESHOLDS", path, base);
    } else if (di_default_path(dflt, sizeof dflt) && access(dflt, F_OK) == 0)
        di_read_thresholds("calibrated thresholds", dflt, base);
    all = di_env_size("COLL_MPI_MIN", -2);
    for (k = 0; k < DI_KINDS; k++) {
        long long one;
        snprintf(name, sizeof name, "COLL_MPI_MIN_%s", di_env[k]);
        one = di_env_size(name, -2);
        for (p = 0; p < 9; p++) {
            if (one != -2) di_from(&di.route[k][p], one);
            else if (all != -2) di_from(&di.route[k][p], all);
            else di.route[k][p] = base[k][p];
        }
    }
    di.key = MPI_KEYVAL_INVALID;
}

/* ---- datatypes and ops ---------------------------------------------------- */
/* Bytes per element of a named datatype without holes (copies move bytes),
   0 for anything else: derived types fall back. */
static size_t di_plain_size(MPI_Datatype t)
{
    int ni, na, nd, comb, size;
    MPI_Aint lb, ext, tlb, text;
    if (t == MPI_DATATYPE_NULL) return 0;
    if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS || comb != MPI_COMBINER_NAMED)
        return 0;
    if (PMPI_Type_size(t, &size) != MPI_SUCCESS || size <= 0) return 0;
    if (PMPI_Type_get_extent(t, &lb, &ext) != MPI_SUCCESS || lb != 0 || ext != size) return 0;
    if (PMPI_Type_get_true_extent(t, &tlb, &text) != MPI_SUCCESS || tlb != 0 || text != size) return 0;
    return (size_t)size;
}

/* The coll dtype a predefined MPI type reduces as, by its C type's size. */
static int di_dtype(MPI_Datatype t, coll_dtype *ct)
{
#define DI_INT(T, MT, S, U)                                                   \
    if (t == (MT)) { *ct = sizeof(T) == 1 ? (S ? COLL_INT8 : COLL_UINT8)       \
                         : sizeof(T) == 4 ? (S ? COLL_INT32 : COLL_UINT32)     \
                         : sizeof(T) == 8 ? (S ? COLL_INT64 : COLL_UINT64)     \
                         : COLL_DTYPE_COUNT; return *ct != COLL_DTYPE_COUNT; }
    DI_INT(signed char, MPI_SIGNED_CHAR, 1, 0) DI_INT(unsigned char, MPI_UNSIGNED_CHAR, 0, 0)
    DI_INT(int8_t, MPI_INT8_T, 1, 0) DI_INT(uint8_t, MPI_UINT8_T, 0, 0)
    DI_INT(int, MPI_INT, 1, 0) DI_INT(unsigned, MPI_UNSIGNED, 0, 0)
    DI_INT(int32_t, MPI_INT32_T, 1, 0) DI_INT(uint32_t, MPI_UINT32_T, 0, 0)
    DI_INT(long, MPI_LONG, 1, 0) DI_INT(unsigned long, MPI_UNSIGNED_LONG, 0, 0)
    DI_INT(long long, MPI_LONG_LONG, 1, 0) DI_INT(unsigned long long, MPI_UNSIGNED_LONG_LONG, 0, 0)
    DI_INT(int64_t, MPI_INT64_T, 1, 0) DI_INT(uint64_t, MPI_UINT64_T, 0, 0)
#undef DI_INT
    if (t == MPI_FLOAT && sizeof(float) == 4) { *ct = COLL_FLOAT32; return 1; }
    if (t == MPI_DOUBLE && sizeof(double) == 8) { *ct = COLL_FLOAT64; return 1; }
    return 0;
}

static int di_is_int(coll_dtype t) { return t != COLL_FLOAT32 && t != COLL_FLOAT64; }

/* How a reduction's (datatype, op) runs in coll: 0 and ct, co, es set; or
   the reason it cannot. MPI_BYTE reduces only bitwise (as MPI allows). */
typedef struct di_red {
    coll_dtype ct;
    coll_op co;
    size_t es;
    int uop;                        /* index into di_uop, or -1             */
    int fp;                         /* result may differ in rounding        */
} di_red;

static int di_reduction(int k, int root, MPI_Datatype t, MPI_Op op, di_red *r)
{
    int i;
    r->uop = -1;
    for (i = 0; i < di_nuop; i++)
        if (di_uop[i].op == op) {   /* a user op carries any plain type      */
            r->es = di_plain_size(t);
            if (!r->es) return W_TYPE;
            /* not commutative: only where coll folds in rank order */
            if (!di_uop[i].commute && !(k == DI_ALLREDUCE || k == DI_SCAN || k == DI_EXSCAN ||
                                         (k == DI_REDUCE && root == 0)))
                return W_OP;
            r->ct = COLL_USER_TYPE; r->co = COLL_USER_OP; r->uop = i;
            r->fp = t == MPI_FLOAT || t == MPI_DOUBLE;
            return 0;
        }
    if (op == MPI_SUM) r->co = COLL_SUM;
    else if (op == MPI_PROD) r->co = COLL_PROD;
    else if (op == MPI_MIN) r->co = COLL_MIN;
    else if (op == MPI_MAX) r->co = COLL_MAX;
    else if (op == MPI_BAND) r->co = COLL_BAND;
    else if (op == MPI_BOR) r->co = COLL_BOR;
    else if (op == MPI_BXOR) r->co = COLL_BXOR;
    else return W_OP;               /* logical ops, MINLOC/MAXLOC, REPLACE   */
    if (t == MPI_BYTE && r->co >= COLL_BAND) r->ct = COLL_UINT8;
    else if (!di_dtype(t, &r->ct)) return W_TYPE;
    if (r->co >= COLL_BAND && !di_is_int(r->ct)) return W_OP;
    r->es = coll_dtype_size(r->ct);
    r->fp = !di_is_int(r->ct) && (r->co == COLL_SUM || r->co == COLL_PROD);
    return 0;
}

/* coll's user op calls out = a (+) b with a the lower ranks'; MPI's
   function computes inoutvec = invec (+) inoutvec, invec the lower ranks'.
   out may be a (then b goes through a bounce buffer), b, or neither. */
static void di_user_fn(void *out, const void *a, const void *b, size_t count, void *user)
{
    di_comm *d = (di_comm *)user;
    int es;
    unsigned char bounce[4096];
    PMPI_Type_size(d->uctx.dt, &es);
    if (out == a) {
        size_t per = sizeof bounce / (size_t)es, done = 0;
        if (per == 0) per = 1;
        while (done < count) {
            size_t n = count - done < per ? count - done : per;
            int len = (int)n;
            unsigned char *big = n * (size_t)es > sizeof bounce ? (unsigned char *)malloc(n * (size_t)es) : bounce;
            memcpy(big, (const unsigned char *)b + done * (size_t)es, n * (size_t)es);
            d->uctx.fn((unsigned char *)out + done * (size_t)es, big, &len, &d->uctx.dt);
            memcpy((unsigned char *)out + done * (size_t)es, big, n * (size_t)es);
            if (big != bounce) free(big);
            done += n;
        }
        return;
    }
    if (out != b) memcpy(out, b, count * (size_t)es);
    while (count) {                 /* MPI counts are int                    */
        int len = count > (size_t)INT_MAX ? INT_MAX : (int)count;
        d->uctx.fn((void *)a, out, &len, &d->uctx.dt);
        a = (const unsigned char *)a + (size_t)len * (size_t)es;
        out = (unsigned char *)out + (size_t)len * (size_t)es;
        count -= (size_t)len;
    }
}

/* ---- the transport and its progress --------------------------------------- */
/* With COLL_MPI_PROGRESS=1 our port wraps the transport's so that a
   blocking wait also drives MPI's own progress: a program may rely on a
   collective to move its pending nonblocking point-to-point (legal MPI),
   which the shm port's waits leave standing. Off by default: polling
   loses the shm port's tuned waiting (2 ranks, 2 MiB all-reduce, Open MPI:
   4.75 ms polling against 0.33 ms), and the MPIs here complete a large
   message on the receiver's side (CMA) without the sender's help. The
   other calls pass straight through. */
static int di_send(void *x, int peer, const void *b, size_t n)
{ di_comm *d = (di_comm *)x; return d->inner.send(d->inner.ctx, peer, b, n); }
static int di_recv(void *x, int peer, void *b, size_t n)
{ di_comm *d = (di_comm *)x; return d->inner.recv(d->inner.ctx, peer, b, n); }
static int di_sendrecv(void *x, int to, const void *sb, size_t sn, int from, void *rb, size_t rn)
{ di_comm *d = (di_comm *)x; return d->inner.sendrecv(d->inner.ctx, to, sb, sn, from, rb, rn); }
static int di_isend(void *x, int peer, const void *b, size_t n, int *h)
{ di_comm *d = (di_comm *)x; return d->inner.isend(d->inner.ctx, peer, b, n, h); }
static int di_irecv(void *x, int peer, void *b, size_t n, int *h)
{ di_comm *d = (di_comm *)x; return d->inner.irecv(d->inner.ctx, peer, b, n, h); }
static int di_irecv_fold(void *x, int peer, void *b, size_t n, coll_fold_fn f, void *arg, int *h)
{ di_comm *d = (di_comm *)x; return d->inner.irecv_fold(d->inner.ctx, peer, b, n, f, arg, h); }
static void di_abort(void *x, int code)
{ di_comm *d = (di_comm *)x; d->inner.abort(d->inner.ctx, code); }
static int di_attach(void *x)
{ di_comm *d = (di_comm *)x; return d->inner.attach(d->inner.ctx); }

static int di_wait(void *x, int h, int block)
{
    di_comm *d = (di_comm *)x;
    unsigned long n;
    int rc, flag;
    if (!block || !d->shm) return d->inner.wait(d->inner.ctx, h, block);
    for (n = 1;; n++) {
        rc = d->inner.wait(d->inner.ctx, h, 0);
        if (rc != COLL_AGAIN) return rc;
        if ((n & 63) == 0) {        /* every 64 polls: MPI's progress, the core */
            PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, d->comm, &flag, MPI_STATUS_IGNORE);
            sched_yield();
        }
    }
}

static void di_wrap_port(di_comm *d)
{
    coll_port *q = &d->port, *in = &d->inner;
    if (!di.progress) { *q = *in; return; }   /* the transport's port as is */
    memset(q, 0, sizeof *q);
    q->ctx = d;
    q->send = in->send ? di_send : 0;
    q->recv = in->recv ? di_recv : 0;
    q->sendrecv = in->sendrecv ? di_sendrecv : 0;
    q->isend = in->isend ? di_isend : 0;
    q->irecv = in->irecv ? di_irecv : 0;
    q->wait = in->wait ? di_wait : 0;
    q->abort = in->abort ? di_abort : 0;
    q->irecv_fold = in->irecv_fold ? di_irecv_fold : 0;
    q->attach = in->attach ? di_attach : 0;
}

static void di_free(di_comm *d)
{
    di_comm **pp;
    for (pp = &di_list; *pp; pp = &(*pp)->next)
        if (*pp == d) { *pp = d->next; break; }
    if (di.record) di_record_dump(d, di.finalizing ? "at MPI_Finalize" : "freed", 0);
    if (d->shm) { if (d->shm->base) coll_shm_close(d->shm); free(d->shm); }
    if (d->mp) { if (d->mp->comm != MPI_COMM_NULL && d->mp->comm) coll_mpi_port_free(d->mp); free(d->mp); }
    free(d->hier);
    free(d->scratch); free(d->buf[0]); free(d->buf[1]); free(d->counts); free(d->row);
    free(d);
}

static int di_delete(MPI_Comm comm, int key, void *val, void *extra)
{
    (void)comm; (void)key; (void)extra;
    di_free((di_comm *)val);
    return MPI_SUCCESS;
}

/* The cores this rank would tell AUTO (coll_set_cores; 0: none):
   COLL_MPI_CORES. di_setup's one allreduce makes every rank take the same
   figure, or none where their wishes differ (an environment set on some
   ranks only). Not the host's CPUs by default: 4 ranks on 2 cores over
   shm, every call routed, 3 alternating runs, telling AUTO the 2 cores
   made all-reduce 1.13x slower (geometric mean, 8 B-4 MiB; 1.34x at
   256 KiB), broadcast 1.06x and reduce 1.08x, and only
   reduce_scatter_block faster (0.90x). */
static int di_cores_wish(void)
{
    return di.cores > 0 ? (int)(di.cores > 1 << 20 ? 1 << 20 : di.cores) : 0;
}

/* Several hosts: coll_hier over the communicator, its scratch shared
   (the subs and the world take turns) and a work buffer of the same size
   for the phases that reorder (a call that needs more goes flat, on every
   rank alike). Every rank keeps it, or none. */
static void di_setup_hier(di_comm *d, int key)
{
    int ok, all = 0, nh = 0;
    coll_hier *h = (coll_hier *)malloc(sizeof *h + di.scratch);
    ok = h && d->p <= COLL_HIER_MAX_RANKS;
    if (ok) ok = coll_hier_init(h, &d->c, key, d->scratch, di.scratch, (unsigned char *)(h + 1), di.scratch) == COLL_OK;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, d->comm);
    if (!all) { free(h); return; }
    coll_hier_shape(h, &nh, 0, 0, 0);
    d->hier = h;
    d->hosts = nh;
    if (di.verbose)
        fprintf(di_out(), "coll-mpi[%d]: coll communicator %d: %d ranks on %d hosts: hierarchical (coll_hier)\n",
                di_wrank(), d->id, d->p, nh);
}

/* The coll side's identity and buffers (scratch, the count matrix and
   its gathered rows). 0: a buffer could not be had. */
static int di_setup_alloc(di_comm *d, MPI_Comm comm)
{
    int rank = 0, p = 1;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &p);
    d->rank = rank; d->p = p; d->comm = comm;
    d->id = ++di.ncomm;
    d->scratch = (unsigned char *)malloc(di.scratch);
    d->counts = (size_t *)malloc((size_t)p * (size_t)p * sizeof(size_t));
    d->row = (uint64_t *)malloc((size_t)p * (size_t)p * sizeof(uint64_t));
    return d->scratch && d->counts && d->row;
}

/* This rank's host key: the lowest world rank sharing its memory (the
   same on every rank of the host), or the fake host COLL_MPI_TEST_HOSTS
   gives; *nodes: how many ranks of comm share this host. Collective. */
static int di_host_key(MPI_Comm comm, int *nodes)
{
    int key = di_wrank();
    MPI_Comm node;
    if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        int w = key;
        PMPI_Comm_size(node, nodes);
        PMPI_Allreduce(&w, &key, 1, MPI_INT, MPI_MIN, node);
        PMPI_Comm_free(&node);
    }
    if (di.test_hosts > 0) key = di_wrank() / (int)di.test_hosts * (int)di.test_hosts;
    else if (di.test_hosts < 0) key = di_wrank() % (int)-di.test_hosts;
    return key;
}

/* The shm transport: rank 0 names a segment of its own, every rank joins
   it. Joining waits COLL_MPI_JOIN_MS at most: a rank that never comes (it
   could not map the segment, or a test says so) leaves the others with
   COLL_ERR_TIMEOUT, and di_setup_agree makes every rank fall back. Then
   the collectives' own deadline: COLL_MPI_TIMEOUT_MS without progress
   (0: none, as MPI's). 0: this rank did not join. Collective. */
static int di_setup_shm(di_comm *d)
{
    char name[64];
    memset(name, 0, sizeof name);
    if (d->rank == 0)
        snprintf(name, sizeof name, "/coll-mpi-%ld-%u-%lx", (long)getpid(), di.serial,
                 (unsigned long)time(NULL));
    di.serial++;
    PMPI_Bcast(name, (int)sizeof name, MPI_CHAR, 0, d->comm);
    d->shm = (coll_shm *)calloc(1, sizeof *d->shm);
    if (!d->shm || d->rank == di.nojoin ||
        coll_shm_open(d->shm, name, d->rank, d->p, (unsigned)di.join_ms, &d->inner) != 0) return 0;
    d->shm->timeout_ms = (unsigned)di.timeout_ms;
    return 1;
}

/* The MPI transport: point-to-point on a private duplicate of the
   communicator. 0: it did not come up. Collective. */
static int di_setup_mpi(di_comm *d)
{
    int r2, n2;
    d->mp = (coll_mpi *)calloc(1, sizeof *d->mp);
    return d->mp && coll_mpi_port_init(d->mp, d->comm, &d->inner, &r2, &n2) == 0;
}

/* One allreduce: did every rank come up, the cores for AUTO (the least
   and the most wished for: one figure, or none), and are the ranks on one
   host (the least and the most key). Where any rank failed, every rank
   marks the communicator dead (its calls go to MPI); on several hosts,
   coll_hier on top. */
static void di_setup_agree(di_comm *d, int ok, int key)
{
    int v[5], agreed[5];
    v[0] = ok; v[1] = di_cores_wish(); v[2] = -v[1]; v[3] = key; v[4] = -key;
    PMPI_Allreduce(v, agreed, 5, MPI_INT, MPI_MIN, d->comm);
    if (agreed[0] && agreed[1] == -agreed[2] && agreed[1] > 0) coll_set_cores(&d->c, agreed[1]);
    if (!agreed[0]) {
        if (d->shm) { if (d->shm->base) coll_shm_close(d->shm); free(d->shm); d->shm = 0; }
        d->dead = 1;
    } else if (di.hier && agreed[3] != -agreed[4]) di_setup_hier(d, key);
}

/* Collective over comm: every rank reaches it at the same call (the
   decision to route reads only arguments that agree), and every rank ends
   with the same verdict on whether the transport came up. Shm only where
   every rank shares this host. */
static di_comm *di_setup(MPI_Comm comm)
{
    di_comm *d = (di_comm *)calloc(1, sizeof *d);
    int ok, shm = 0, nodes = 1, key;
    if (!d) PMPI_Abort(comm, 12);
    ok = di_setup_alloc(d, comm);
    key = di_host_key(comm, &nodes);
    if (di.transport != 2) shm = nodes == d->p && d->p <= COLL_SHM_MAX_RANKS;
    ok = (shm ? di_setup_shm(d) : di_setup_mpi(d)) && ok;
    if (ok) {
        di_wrap_port(d);
        if (coll_init(&d->c, d->rank, d->p, &d->port, d->scratch, di.scratch) != 0) ok = 0;
        else coll_set_recorder(&d->c, d->ring, DI_RING, di_ns, 0);
    }
    di_setup_agree(d, ok, key);
    d->next = di_list;
    di_list = d;
    PMPI_Comm_set_attr(comm, di.key, d);
    return d;
}

/* The first look at every call, before any datatype is examined: routing
   on, one thread, and the size at or above the threshold for this rank
   count. It reads only the communicator's size, so a call below its
   threshold costs a few nanoseconds more than the MPI library alone.
   bytes x p if times_p. */
static int di_quick(int k, MPI_Comm comm, long long bytes, int times_p)
{
    int p, i;
    const di_sizes *r;
    if (!di.ready) di_settings();
    if (!di.on) return W_OFF;
    if (di.thread_multiple) return W_THREAD;
    if (comm == MPI_COMM_NULL || PMPI_Comm_size(comm, &p) != MPI_SUCCESS) return W_COMM;
    r = &di.route[k][p > 8 ? 8 : p];
    if (times_p) bytes *= p;
    di_cur.bytes = bytes;
    for (i = 0; i < r->n; i++)
        if (bytes >= r->lo[i] && bytes <= r->hi[i]) return 0;
    return W_SIZE;
}

/* A datatype's size for the thresholds (its signature's bytes; 0 if none). */
static long long di_tsize(MPI_Datatype t)
{
    int s = 0;
    if (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &s) != MPI_SUCCESS) return 0;
    return s;
}

/* A root MPI requires every rank to pass alike: in range or not on all. */
static int di_root(MPI_Comm comm, int root)
{
    int p = 0;
    PMPI_Comm_size(comm, &p);
    return root < 0 || root >= p ? W_ARGS : 0;
}

/* The predefined ops coll has not: the same op on every rank (MPI's rule),
   so every rank falls back alike. Everything else about a reduction
   (datatype, user op) is decided after di_gate. */
static int di_op_agreed(MPI_Op op)
{
    return op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR || op == MPI_MINLOC ||
           op == MPI_MAXLOC || op == MPI_REPLACE || op == MPI_NO_OP ? W_OP : 0;
}

/* Send and receive buffers the same without MPI_IN_PLACE: erroneous MPI,
   which the MPI library reports (MPI_ERR_BUFFER) or lets through; either
   way its answer, never coll's in-place one. */
static int di_alias(const void *sbuf, const void *rbuf)
{
    return sbuf != MPI_IN_PLACE && sbuf == rbuf ? W_ALIAS : 0;
}

/* The communicator's coll side, or NULL and *why. Reached only past
   checks that read what every rank agrees on (di_quick, the root, the
   op), so every rank reaches it at the same call: the setup is
   collective. */
static di_comm *di_gate(MPI_Comm comm, int *why)
{
    int inter, flag;
    void *v;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) { *why = W_COMM; return 0; }
    if (di.key == MPI_KEYVAL_INVALID &&
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, di_delete, &di.key, NULL) != MPI_SUCCESS) {
        *why = W_SETUP; return 0;
    }
    if (PMPI_Comm_get_attr(comm, di.key, &v, &flag) != MPI_SUCCESS) { *why = W_SETUP; return 0; }
    if (!flag) v = di_setup(comm);
    if (((di_comm *)v)->dead) { *why = W_SETUP; return 0; }
    return (di_comm *)v;
}

/* A pack buffer of at least n bytes (slot 0 or 1), kept for later calls. */
static unsigned char *di_buf(di_comm *d, int i, size_t n)
{
    if (n == 0) n = 1;
    if (d->cap[i] < n) {
        unsigned char *b = (unsigned char *)realloc(d->buf[i], n);
        if (!b) PMPI_Abort(d->comm, 12);
        d->buf[i] = b;
        d->cap[i] = n;
    }
    return d->buf[i];
}

/* A coll_hier call's answer, its road counted (the report) */
static int di_road(di_comm *d, int rc)
{
    int road = coll_hier_road(d->hier);
    di.roads[road >= 0 && road < 4 ? road : 0]++;
    return rc;
}

/* coll's reason for the last error: the hierarchy's where it ran */
static const char *di_last_error(di_comm *d)
{
    const char *h = d->hier ? coll_hier_last_error(d->hier) : 0;
    return h && *h ? h : coll_last_error(&d->c);
}

/* What coll answered. Refusals found by the call check reach every rank
   at once and move no payload, so all ranks fall back together; an
   error after payload moved leaves the ranks out of step: abort. */
static int di_done(di_comm *d, int rc)
{
    int k = di_cur.k;
    if (rc == COLL_OK) { di_cur.why = W_ROUTED; return 1; }
    if (rc == COLL_ERR_MISMATCH || rc == COLL_ERR_PEER || rc == COLL_ERR_INVAL ||
        rc == COLL_ERR_NOSPC || rc == COLL_ERR_NOSYS) {
        di_cur.why = rc == COLL_ERR_PEER ? W_PEER : W_REFUSED;
        if (di.verbose && rc != COLL_ERR_PEER)
            fprintf(di_out(), "coll-mpi[%d]: %s refused by coll (%s: %s), run by MPI\n", di_wrank(),
                    di_name[k], coll_result_str(rc), di_last_error(d));
        return 0;
    }
    fprintf(stderr, "coll-mpi: %s failed in coll on rank %d of %d: %s (%s); aborting\n",
            di_name[k], d->rank, d->p, coll_result_str(rc), di_last_error(d));
    di_record_dump(d, "a call failed", 1);   /* its last calls, the failed one last */
    if (di.rec) { fclose(di.rec); di.rec = 0; }
    fflush(stderr);
    PMPI_Abort(d->comm, 70);
    return 0;
}

#define DI_FALLBACK(w) ((void)(di_cur.why = (w)))

/* The local half of the road. The checks before di_gate read only what
   MPI requires to agree on every rank, so every rank gets here at the
   same call; what comes after - is this rank's datatype plain, are its
   buffers there, do they alias - may differ between ranks where MPI lets
   them (a derived type on one rank and a predefined one of the same
   signature on another; a root's NULL in a zero-size call). So a rank
   with a reason of its own still takes part in coll: it refuses its call
   (an invalid dtype), coll's call check tells every other rank
   (COLL_ERR_PEER from their own call, before any payload moves), and all
   of them run the call by MPI. Verify mode calls PMPI for its reference
   before the coll call, so there the ranks agree first, in one small
   coll all-reduce. 1: route; 0: every rank falls back. */
static int di_local(di_comm *d, int why)
{
    int ok = !why, all = 0, rc;
    if (d->p > 1 && (di.verify || d->hier)) {
        rc = coll_allreduce(&d->c, &ok, &all, 1, COLL_INT32, COLL_MIN, COLL_ALGO_AUTO);
        if (rc != COLL_OK) { di_done(d, rc); return 0; }
        if (!all) { DI_FALLBACK(why ? why : W_PEER); return 0; }
        return 1;
    }
    if (!why) return 1;
    if (d->p > 1)                   /* refused: the others hear it at once */
        (void)coll_allreduce(&d->c, 0, 0, 1, COLL_DTYPE_COUNT, COLL_SUM, COLL_ALGO_AUTO);
    DI_FALLBACK(why);
    return 0;
}

/* ---- verify mode ----------------------------------------------------------- */
/* The end of a verify: the message out first (a launcher tearing the job
   down may drop what a rank printed a moment before), then the abort. */
static void di_verify_abort(void)
{
    struct timespec pause = { 0, 200000000 };
    fflush(stderr);
    nanosleep(&pause, NULL);
    PMPI_Abort(MPI_COMM_WORLD, 71);
}

/* Exact bytes, except rounding of floating sums and products (coll and the
   MPI library add in different orders): relative 64 p eps. */
static void di_compare(di_comm *d, int k, const void *got, const void *want, size_t n,
                       size_t es, const di_red *r)
{
    size_t i;
    int fp = r && r->fp;
    if (!fp) {
        const unsigned char *g = (const unsigned char *)got, *w = (const unsigned char *)want;
        for (i = 0; i < n * es; i++)
            if (g[i] != w[i]) {
                fprintf(stderr, "coll-mpi verify: %s on rank %d of %d: byte %zu of %zu is 0x%02x, "
                        "MPI gives 0x%02x; aborting\n", di_name[k], d->rank, d->p, i, n * es, g[i], w[i]);
                di_verify_abort();
            }
        return;
    }
    for (i = 0; i < n; i++) {
        double g, w, eps;
        if (es == 4) { g = ((const float *)got)[i]; w = ((const float *)want)[i]; eps = 1.2e-7; }
        else { g = ((const double *)got)[i]; w = ((const double *)want)[i]; eps = 2.3e-16; }
        if (g == w || (isnan(g) && isnan(w))) continue;
        if (fabs(g - w) <= 64.0 * d->p * eps * (fabs(g) + fabs(w))) continue;
        fprintf(stderr, "coll-mpi verify: %s on rank %d of %d: element %zu of %zu is %.17g, "
                "MPI gives %.17g; aborting\n", di_name[k], d->rank, d->p, i, n, g, w);
        di_verify_abort();
    }
}

/* A copy of the receive region [lo, hi) bytes around base, for PMPI to
   write; returns the copy's base (the same offsets reach it). */
static unsigned char *di_ref(const void *base, long long lo, long long hi, unsigned char **mem)
{
    size_t n = hi > lo ? (size_t)(hi - lo) : 1;
    *mem = (unsigned char *)malloc(n);
    if (!*mem) PMPI_Abort(MPI_COMM_WORLD, 12);
    if (base && hi > lo) memcpy(*mem, (const unsigned char *)base + lo, (size_t)(hi - lo));
    return *mem - lo;
}

/* The tests' proof that verify sees a difference: spoil one byte. */
static void di_spoil(void *buf, size_t bytes)
{
    if (di.inject > 0 && bytes) { ((unsigned char *)buf)[bytes / 2] ^= 0x5a; di.inject = 0; }
}

/* ---- small helpers for the v-forms ----------------------------------------- */
static long long di_ll(size_t x) { return (long long)x; }

/* displs in order and back to back: the blocks are coll's layout as is */
static int di_packed(const int *counts, const int *displs, int p)
{
    long long at = 0;
    int i;
    for (i = 0; i < p; i++) {
        if (displs[i] != at) return 0;
        at += counts[i];
    }
    return 1;
}

static int di_counts_ok(const int *counts, int p, long long *total)
{
    int i;
    *total = 0;
    for (i = 0; i < p; i++) {
        if (counts[i] < 0) return 0;
        *total += counts[i];
    }
    return 1;
}

/* the extent [lo, hi) in elements the blocks (counts, displs) cover */
static void di_span(const int *counts, const int *displs, int p, long long *lo, long long *hi)
{
    int i;
    *lo = 0; *hi = 0;
    for (i = 0; i < p; i++) {
        if (!counts[i]) continue;
        if (displs[i] < *lo) *lo = displs[i];
        if ((long long)displs[i] + counts[i] > *hi) *hi = (long long)displs[i] + counts[i];
    }
}

/* the bytes of the blocks (counts of es bytes each) all together */
static size_t di_bytes(const int *counts, size_t es, int p)
{
    size_t n = 0;
    int i;
    for (i = 0; i < p; i++) n += (size_t)counts[i] * es;
    return n;
}

/* where rank's block starts when the blocks of d->counts lie back to back
   (rank p: all of them) */
static size_t di_before(const di_comm *d, int rank)
{
    size_t at = 0;
    int i;
    for (i = 0; i < rank; i++) at += d->counts[i];
    return at;
}

/* the blocks of base (counts, displs in elements of es bytes) back to back
   into to, coll's layout; returns to */
static unsigned char *di_pack(unsigned char *to, const void *base, const int *counts, const int *displs, size_t es,
                              int p)
{
    size_t o = 0;
    int i;
    for (i = 0; i < p; i++) {
        memcpy(to + o, (const unsigned char *)base + (long long)displs[i] * (long long)es, (size_t)counts[i] * es);
        o += (size_t)counts[i] * es;
    }
    return to;
}

/* the reverse: the back-to-back blocks of from to their displacements in base */
static void di_unpack(void *base, const unsigned char *from, const int *counts, const int *displs, size_t es, int p)
{
    size_t o = 0;
    int i;
    for (i = 0; i < p; i++) {
        memcpy((unsigned char *)base + (long long)displs[i] * (long long)es, from + o, (size_t)counts[i] * es);
        o += (size_t)counts[i] * es;
    }
}

/* Verify mode: each block at its displacement in base against the same
   block of PMPI's answer in ref (a test's spoiled byte in the last one). */
static void di_compare_blocks(di_comm *d, int k, void *base, const unsigned char *ref, const int *counts,
                              const int *displs, size_t es, int p)
{
    int i;
    for (i = 0; i < p; i++) {
        unsigned char *got = (unsigned char *)base + (long long)displs[i] * (long long)es;
        if (i == p - 1) di_spoil(got, (size_t)counts[i] * es);
        di_compare(d, k, got, ref + (long long)displs[i] * (long long)es, (size_t)counts[i] * es, 1, 0);
    }
}

/* ================================================================================ */
/* The collectives                                                                   */
/* ================================================================================ */
/* Each body: the checks every rank agrees on (di_quick, the root, the op)
   and di_gate, which any of them may end in MPI on every rank alike; then
   this rank's own checks, settled for all ranks by di_local; then coll.
   The exported MPI_ functions below wrap each body for the report. */

static void di_user_op(di_comm *d, const di_red *r, MPI_Datatype dt)
{
    coll_user_op u = { di_user_fn, 0, 0, 0 };
    u.elem_size = r->es; u.commutative = di_uop[r->uop].commute; u.user = d;
    d->uctx.fn = di_uop[r->uop].fn; d->uctx.dt = dt;
    if (d->hier) coll_hier_set_user_op(d->hier, &u);     /* the world and its subs */
    else coll_set_user_op(&d->c, &u);
}

static int di_allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    const int k = DI_ALLREDUCE;
    di_red r;
    di_comm *d = 0;
    int why, rc;
    unsigned char *mem = 0, *ref = 0;
    size_t n;
#define DI_P() PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm)
    if ((why = di_quick(k, comm, (long long)count * di_tsize(dt), 0)) || (why = di_op_agreed(op)) ||
        !(d = di_gate(comm, &why)))
        return DI_FALLBACK(why), DI_P();
    why = count < 0 || (!rbuf && count) ? W_ARGS : di_alias(sbuf, rbuf) ? W_ALIAS : di_reduction(k, 0, dt, op, &r);
    if (!di_local(d, why)) return DI_P();
    n = (size_t)count;
    if (di.verify) {
        ref = di_ref(rbuf, 0, di_ll(n * r.es), &mem);
        PMPI_Allreduce(sbuf, ref, count, dt, op, comm);
    }
    if (r.uop >= 0) di_user_op(d, &r, dt);
    rc = d->hier ? di_road(d, coll_hier_allreduce(d->hier, sbuf == MPI_IN_PLACE ? rbuf : sbuf, rbuf, n, r.ct, r.co))
                 : coll_allreduce(&d->c, sbuf == MPI_IN_PLACE ? rbuf : sbuf, rbuf, n, r.ct, r.co, COLL_ALGO_AUTO);
    if (!di_done(d, rc)) { free(mem); return DI_P(); }
    if (di.verify) { di_spoil(rbuf, n * r.es); di_compare(d, k, rbuf, ref, n, r.es, &r); free(mem); }
    return MPI_SUCCESS;
#undef DI_P
}

static int di_bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    const int k = DI_BCAST;
    di_comm *d = 0;
    int why, rc;
    size_t es, n;
    unsigned char *mem = 0, *ref = 0;
#define DI_P() PMPI_Bcast(buf, count, dt, root, comm)
    if ((why = di_quick(k, comm, (long long)count * di_tsize(dt), 0)) || (why = di_root(comm, root)) ||
        !(d = di_gate(comm, &why)))
        return DI_FALLBACK(why), DI_P();
    es = di_plain_size(dt);
    why = count < 0 || (!buf && count) ? W_ARGS : !es ? W_TYPE : 0;
    if (!di_local(d, why)) return DI_P();
    n = (size_t)count * es;
    if (di.verify) {
        ref = di_ref(buf, 0, di_ll(n), &mem);
        PMPI_Bcast(ref, count, dt, root, comm);
    }
    rc = d->hier ? di_road(d, coll_hier_broadcast(d->hier, buf, n, COLL_UINT8, root))
                 : coll_broadcast(&d->c, buf, n, COLL_UINT8, root, COLL_ALGO_AUTO);
    if (!di_done(d, rc)) { free(mem); return DI_P(); }
    if (di.verify) { di_spoil(buf, n); di_compare(d, k, buf, ref, n, 1, 0); free(mem); }
    return MPI_SUCCESS;
#undef DI_P
}

static int di_reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    const int k = DI_REDUCE;
    di_red r;
    di_comm *d = 0;
    int why, rc, at_root;
    unsigned char *mem = 0, *ref = 0;
    const void *src;
    void *dst;
    size_t n;
#define DI_P() PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm)
    if ((why = di_quick(k, comm, (long long)count * di_tsize(dt), 0)) || (why = di_op_agreed(op)) ||
        (why = di_root(comm, root)) || !(d = di_gate(comm, &why)))
        return DI_FALLBACK(why), DI_P();
    at_root = d->rank == root;
    why = count < 0 || (at_root && !rbuf && count) || (!at_root && sbuf == MPI_IN_PLACE) ? W_ARGS
        : at_root && di_alias(sbuf, rbuf) ? W_ALIAS : di_reduction(k, root, dt, op, &r);
    if (!di_local(d, why)) return DI_P();
    n = (size_t)count;
    if (di.verify) {
        ref = di_ref(at_root ? rbuf : 0, 0, di_ll(n * r.es), &mem);
        PMPI_Reduce(sbuf, ref, count, dt, op, root, comm);
    }
    if (r.uop >= 0) di_user_op(d, &r, dt);
    src = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    dst = at_root ? rbuf : di_buf(d, 0, n * r.es);   /* workspace elsewhere   */
    rc = d->hier ? di_road(d, coll_hier_reduce(d->hier, src, dst, n, r.ct, r.co, root))
                 : coll_reduce(&d->c, src, dst, n, r.ct, r.co, root, COLL_ALGO_AUTO);
    if (!di_done(d, rc)) { free(mem); return DI_P(); }
    if (di.verify) {
        if (at_root) { di_spoil(rbuf, n * r.es); di_compare(d, k, rbuf, ref, n, r.es, &r); }
        free(mem);
    }
    return MPI_SUCCESS;
#undef DI_P
}

/* scan and exscan: one body; MPI leaves exscan's rank 0 result undefined */
static int di_scan(int k, const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                   MPI_Comm comm)
{
    di_red r;
    di_comm *d = 0;
    int why, rc, ex = k == DI_EXSCAN;
    unsigned char *mem = 0, *ref = 0;
    size_t n;
#define DI_P() (ex ? PMPI_Exscan(sbuf, rbuf, count, dt, op, comm) : PMPI_Scan(sbuf, rbuf, count, dt, op, comm))
    if ((why = di_quick(k, comm, (long long)count * di_tsize(dt), 0)) || (why = di_op_agreed(op)) ||
        !(d = di_gate(comm, &why)))
        return DI_FALLBACK(why), DI_P();
    why = count < 0 || (!rbuf && count) ? W_ARGS : di_alias(sbuf, rbuf) ? W_ALIAS : di_reduction(k, 0, dt, op, &r);
    if (!di_local(d, why)) return DI_P();
    n = (size_t)count;
    if (di.verify) {
        ref = di_ref(rbuf, 0, di_ll(n * r.es), &mem);
        if (ex) PMPI_Exscan(sbuf, ref, count, dt, op, comm);
        else PMPI_Scan(sbuf, ref, count, dt, op, comm);
    }
    if (r.uop >= 0) di_user_op(d, &r, dt);
    rc = (ex ? coll_exscan : coll_scan)(&d->c, sbuf == MPI_IN_PLACE ? rbuf : sbuf, rbuf, n, r.ct, r.co,
                                         COLL_ALGO_AUTO);
    if (!di_done(d, rc)) { free(mem); return DI_P(); }
    if (di.verify) {
        if (!ex || d->rank > 0) { di_spoil(rbuf, n * r.es); di_compare(d, k, rbuf, ref, n, r.es, &r); }
        free(mem);
    }
    return MPI_SUCCESS;
#undef DI_P
}

static int di_barrier(MPI_Comm comm)
{
    di_comm *d = 0;
    int why;
    if ((why = di_quick(DI_BARRIER, comm, 0, 0)) || !(d = di_gate(comm, &why)))
        return DI_FALLBACK(why), PMPI_Barrier(comm);
    if (!di_done(d, d->hier ? di_road(d, coll_hier_barrier(d->hier)) : coll_barrier(&d->c, COLL_ALGO_AUTO)))
        return PMPI_Barrier(comm);
    return MPI_SUCCESS;
}

/* The block collectives move bytes: a send (count, type) and a receive
   (count, type) that MPI requires to have one signature; with both
   predefined and plain, that is the same number of bytes. */
static int di_same(size_t sbytes, size_t rbytes) { return sbytes == rbytes; }

static int di_allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                        MPI_Datatype rtype, MPI_Comm comm)
{
    const int k = DI_ALLGATHER;
    di_comm *d = 0;
    int why, rc, p, inplace = sbuf == MPI_IN_PLACE;
    size_t res, ses, blk = 0;
    unsigned char *mem = 0, *ref = 0;
    const unsigned char *src;
#define DI_P() PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm)
    if ((why = di_quick(k, comm, (long long)rcount * di_tsize(rtype), 1)) || !(d = di_gate(comm, &why)))
        return DI_FALLBACK(why), DI_P();
    p = d->p;
    res = di_plain_size(rtype);
    ses = inplace ? res : di_plain_size(stype);
    if (rcount >= 0) blk = (size_t)rcount * res;
    why = !res || !ses ? W_TYPE
        : rcount < 0 || (!rbuf && rcount) || (!inplace && (scount < 0 || !di_same((size_t)scount * ses, blk))) ? W_ARGS
        : di_alias(sbuf, rbuf);
    if (!di_local(d, why)) return DI_P();
    if (di.verify) {
        ref = di_ref(rbuf, 0, di_ll(blk * (size_t)p), &mem);
        PMPI_Allgather(sbuf, scount, stype, ref, rcount, rtype, comm);
    }
    src = inplace ? (unsigned char *)rbuf + blk * (size_t)d->rank : (const unsigned char *)sbuf;
    rc = d->hier ? di_road(d, coll_hier_allgather(d->hier, src, rbuf, blk, COLL_UINT8))
                 : coll_allgather(&d->c, src, rbuf, blk, COLL_UINT8, COLL_ALGO_AUTO);
    if (!di_done(d, rc)) { free(mem); return DI_P(); }
    if (di.verify) { di_spoil(rbuf, blk * (size_t)p); di_compare(d, k, rbuf, ref, blk * (size_t)p, 1, 0); free(mem); }
    return MPI_SUCCESS;
#undef DI_P
}

static int di_allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                         const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    const int k = DI_ALLGATHERV;
    di_comm *d = 0;
    int why, rc, p = 0, rank, i, inplace = sbuf == MPI_IN_PLACE, packed;
    size_t res, ses;
    long long total = 0, lo, hi;
    unsigned char *mem = 0, *ref = 0, *dst;
    const unsigned char *src;
#define DI_P() PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm)
    if (comm != MPI_COMM_NULL) PMPI_Comm_size(comm, &p);
    if (p >= 1 && rcounts) di_counts_ok(rcounts, p, &total);      /* the same on every rank */
    if ((why = di_quick(k, comm, total * di_tsize(rtype), 0)) || !(d = di_gate(comm, &why)))
        return DI_FALLBACK(why), DI_P();
    rank = d->rank;
    res = di_plain_size(rtype);
    ses = inplace ? res : di_plain_size(stype);
    why = !res || !ses ? W_TYPE
        : !rcounts || !displs || !di_counts_ok(rcounts, p, &total) || (!rbuf && total) ||
          (!inplace && (scount < 0 || !di_same((size_t)scount * ses, (size_t)rcounts[rank] * res))) ? W_ARGS
        : di_alias(sbuf, rbuf);
    if (!di_local(d, why)) return DI_P();
    di_span(rcounts, displs, p, &lo, &hi);
    if (di.verify) {
        ref = di_ref(rbuf, lo * (long long)res, hi * (long long)res, &mem);
        PMPI_Allgatherv(sbuf, scount, stype, ref, rcounts, displs, rtype, comm);
    }
    for (i = 0; i < p; i++) d->counts[i] = (size_t)rcounts[i] * res;
    packed = di_packed(rcounts, displs, p);
    src = inplace ? (const unsigned char *)rbuf + (long long)displs[rank] * (long long)res
                  : (const unsigned char *)sbuf;
    dst = packed ? (unsigned char *)rbuf : di_buf(d, 0, (size_t)total * res);
    rc = coll_allgatherv(&d->c, src, dst, d->counts, COLL_UINT8, COLL_ALGO_AUTO);
    if (!di_done(d, rc)) { free(mem); return DI_P(); }
    if (!packed) di_unpack(rbuf, dst, rcounts, displs, res, p);   /* the blocks to their displacements */
    if (di.verify) { di_compare_blocks(d, k, rbuf, ref, rcounts, displs, res, p); free(mem); }
    return MPI_SUCCESS;
#undef DI_P
}

static int di_gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                     MPI_Datatype rtype, int root, MPI_Comm comm)
{
    const int k = DI_GATHER;
    di_comm *d = 0;
    int why, rc, p, rank = 0, at_root, inplace = sbuf == MPI_IN_PLACE;
    size_t ses, res, blk = 0;
    unsigned char *mem = 0, *ref = 0;
    const unsigned char *src;
#define DI_P() PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm)
    if (comm != MPI_COMM_NULL) PMPI_Comm_rank(comm, &rank);
    at_root = rank == root;
    /* the root's receive block is every rank's send block (MPI's rule) */
    if ((why = di_quick(k, comm, at_root ? (long long)rcount * di_tsize(rtype) : (long long)scount * di_tsize(stype), 1)) ||
        (why = di_root(comm, root)) || !(d = di_gate(comm, &why)))
        return DI_FALLBACK(why), DI_P();
    p = d->p;
    res = at_root ? di_plain_size(rtype) : 0;
    ses = inplace ? res : di_plain_size(stype);
    if (inplace ? rcount >= 0 : scount >= 0) blk = inplace ? (size_t)rcount * res : (size_t)scount * ses;
    why = inplace && !at_root ? W_ARGS
        : !ses || (at_root && !res) ? W_TYPE
        : (!inplace && scount < 0) || (!inplace && !sbuf && blk) ||
          (at_root && (rcount < 0 || (!rbuf && blk) || !di_same(blk, (size_t)rcount * res))) ? W_ARGS
        : at_root ? di_alias(sbuf, rbuf) : 0;
    if (!di_local(d, why)) return DI_P();
    if (di.verify) {
        ref = di_ref(at_root ? rbuf : 0, 0, at_root ? di_ll(blk * (size_t)p) : 0, &mem);
        PMPI_Gather(sbuf, scount, stype, at_root ? ref : rbuf, rcount, rtype, root, comm);
    }
    src = inplace ? (unsigned char *)rbuf + blk * (size_t)rank : (const unsigned char *)sbuf;
    rc = d->hier ? di_road(d, coll_hier_gather(d->hier, src, at_root ? rbuf : 0, blk, COLL_UINT8, root))
                 : coll_gather(&d->c, src, at_root ? rbuf : 0, blk, COLL_UINT8, root, COLL_ALGO_AUTO);
    if (!di_done(d, rc)) { free(mem); return DI_P(); }
    if (di.verify) {
        if (at_root) { di_spoil(rbuf, blk * (size_t)p); di_compare(d, k, rbuf, ref, blk * (size_t)p, 1, 0); }
        free(mem);
    }
    return MPI_SUCCESS;
#undef DI_P
}

static int di_scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                      MPI_Datatype rtype, int root, MPI_Comm comm)
{
    const int k = DI_SCATTER;
    di_comm *d = 0;
    int why, rc, rank = 0, at_root, inplace = rbuf == MPI_IN_PLACE;
    size_t ses, res, blk = 0;
    unsigned char *mem = 0, *ref = 0, *dst;
#define DI_P() PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm)
    if (comm != MPI_COMM_NULL) PMPI_Comm_rank(comm, &rank);
    at_root = rank == root;
    if ((why = di_quick(k, comm, at_root ? (long long)scount * di_tsize(stype) : (long long)rcount * di_tsize(rtype), 1)) ||
        (why = di_root(comm, root)) || !(d = di_gate(comm, &why)))
        return DI_FALLBACK(why), DI_P();
    ses = at_root ? di_plain_size(stype) : 0;
    res = inplace ? ses : di_plain_size(rtype);
    if (inplace ? scount >= 0 : rcount >= 0) blk = inplace ? (size_t)scount * ses : (size_t)rcount * res;
    why = inplace && !at_root ? W_ARGS
        : !res || (at_root && !ses) ? W_TYPE
        : (!inplace && rcount < 0) || (!inplace && !rbuf && blk) ||
          (at_root && (scount < 0 || (!sbuf && blk) || !di_same(blk, (size_t)scount * ses))) ? W_ARGS
        : at_root ? di_alias(sbuf, rbuf) : 0;
    if (!di_local(d, why)) return DI_P();
    if (di.verify) {
        ref = di_ref(inplace ? 0 : rbuf, 0, inplace ? 0 : di_ll(blk), &mem);
        PMPI_Scatter(sbuf, scount, stype, inplace ? MPI_IN_PLACE : (void *)ref, rcount, rtype, root, comm);
    }
    dst = inplace ? (unsigned char *)sbuf + blk * (size_t)rank : (unsigned char *)rbuf;
    rc = d->hier ? di_road(d, coll_hier_scatter(d->hier, at_root ? sbuf : 0, dst, blk, COLL_UINT8, root))
                 : coll_scatter(&d->c, at_root ? sbuf : 0, dst, blk, COLL_UINT8, root, COLL_ALGO_AUTO);
    if (!di_done(d, rc)) { free(mem); return DI_P(); }
    if (di.verify) {
        if (!inplace) { di_spoil(rbuf, blk); di_compare(d, k, rbuf, ref, blk, 1, 0); }
        free(mem);
    }
    return MPI_SUCCESS;
#undef DI_P
}

/* Gatherv and scatterv: only the root knows every count, and coll needs
   them on every rank, so the ranks first gather each one's (one small
   coll all-gather, which rides in the call check's round). A refusal
   there (a rank's own reason, di_local) sends every rank to MPI. */
static int di_share_counts(di_comm *d, size_t mine)
{
    int i, rc;
    uint64_t m = mine;
    rc = coll_allgather(&d->c, &m, d->row, 1, COLL_UINT64, COLL_ALGO_AUTO);
    if (rc) return rc;
    for (i = 0; i < d->p; i++) d->counts[i] = (size_t)d->row[i];
    return 0;
}

/* Gatherv and scatterv mirror each other; their shared steps see the
   root's side, blocks at displacements (gatherv's receive buffer,
   scatterv's send buffer), and each rank's one block (gatherv's send,
   scatterv's receive). */
typedef struct {
    int at_root, inplace;
    int sends;                      /* the root's blocks are sent: scatterv   */
    const int *counts, *displs;     /* the root's                             */
    const void *blocks, *one;       /* the root's buffer; this rank's block   */
    int count;                      /* this rank's block's count              */
    size_t bes, oes;                /* their types' plain sizes (0: not plain) */
    size_t mine;                    /* this rank's bytes                      */
} di_rooted;

/* This rank's own reason to leave the call to MPI (0: none), its types'
   sizes and its bytes (v->mine, and the report's size). The root's type
   counts on the root only; in place, this rank's block is the root's own.
   scatterv checks its NULL root buffer with the root's counts, gatherv
   after this rank's bytes are known, so only gatherv's report gives such
   a call its size. */
static int di_rooted_why(di_rooted *v, int p, int rank, MPI_Datatype btype, MPI_Datatype otype)
{
    long long sum = 0;
    int why;
    v->bes = v->at_root ? di_plain_size(btype) : 0;
    v->oes = v->inplace ? v->bes : di_plain_size(otype);
    v->mine = 0;
    why = v->inplace && !v->at_root ? W_ARGS
        : !v->oes || (v->at_root && !v->bes) ? W_TYPE
        : (v->at_root && (!v->counts || !v->displs || !di_counts_ok(v->counts, p, &sum) ||
                          (v->sends && !v->blocks && sum))) ||
          (!v->inplace && v->count < 0) ? W_ARGS : 0;
    if (why) return why;
    v->mine = v->inplace ? (size_t)v->counts[rank] * v->bes : (size_t)v->count * v->oes;
    di_cur.bytes = di_ll(v->mine);
    if ((v->at_root && (!di_same(v->mine, (size_t)v->counts[rank] * v->bes) || (!v->sends && !v->blocks && sum))) ||
        (!v->inplace && !v->one && v->mine))
        return W_ARGS;
    return v->at_root ? di_alias(v->one, v->blocks) : 0;
}

/* Every rank's bytes to every rank (di_share_counts); the root checks them
   against its own counts. A mismatch is known to the root alone, before
   any payload moved: it aborts, where waiting would hang the others.
   0: coll refused the round, and every rank runs the call by MPI. */
static int di_rooted_counts(di_comm *d, int k, const di_rooted *v, const char *verb)
{
    int i, rc = di_share_counts(d, v->mine);
    if (rc != COLL_OK && !di_done(d, rc)) return 0;
    if (v->at_root)
        for (i = 0; i < d->p; i++)
            if (d->counts[i] != (size_t)v->counts[i] * v->bes) rc = COLL_ERR_MISMATCH;
    if (rc) {
        fprintf(stderr, "coll-mpi: %s on rank %d: the counts the ranks %s are not the root's (%s); aborting\n",
                di_name[k], d->rank, verb, coll_result_str(rc));
        PMPI_Abort(d->comm, 70);
    }
    return 1;
}

/* Gatherv's receive buffer for coll (NULL off the root): the root's own
   where its blocks lie back to back (*packed), else a pack buffer, in
   place with the root's block copied to its slot; *src: this rank's block. */
static unsigned char *di_gatherv_stage(di_comm *d, const di_rooted *v, const unsigned char **src, int *packed)
{
    unsigned char *dst = 0;
    size_t at;
    if (v->at_root) *packed = di_packed(v->counts, v->displs, d->p);
    if (v->at_root) dst = *packed ? (unsigned char *)v->blocks : di_buf(d, 0, di_before(d, d->p));
    *src = v->inplace ? (const unsigned char *)v->blocks + (long long)v->displs[d->rank] * (long long)v->bes
                      : (const unsigned char *)v->one;
    if (v->inplace && !*packed) {
        at = di_before(d, d->rank);
        memcpy(dst + at, *src, v->mine);
        *src = dst + at;
    }
    return dst;
}

/* Scatterv's send buffer for coll (NULL off the root): the root's own
   where its blocks lie back to back, else a pack of them; *dst: this
   rank's block, in place the root's own slot of what it sends. */
static const unsigned char *di_scatterv_stage(di_comm *d, const di_rooted *v, unsigned char **dst)
{
    const unsigned char *src = 0;
    if (v->at_root)
        src = di_packed(v->counts, v->displs, d->p) ? (const unsigned char *)v->blocks
            : di_pack(di_buf(d, 0, di_before(d, d->p)), v->blocks, v->counts, v->displs, v->bes, d->p);
    *dst = v->inplace ? (unsigned char *)src + di_before(d, d->rank) : (unsigned char *)v->one;
    return src;
}

static int di_gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                      const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm)
{
    const int k = DI_GATHERV;
    di_comm *d = 0;
    di_rooted v;
    int why, rc, p, packed = 1;
    long long lo = 0, hi = 0;
    unsigned char *mem = 0, *ref = 0, *dst;
    const unsigned char *src;
#define DI_P() PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm)
    if ((why = di_quick(k, comm, 0, 0)) || (why = di_root(comm, root)) || !(d = di_gate(comm, &why)))
        return DI_FALLBACK(why), DI_P();
    p = d->p;
    v.at_root = d->rank == root; v.inplace = sbuf == MPI_IN_PLACE; v.sends = 0;
    v.counts = rcounts; v.displs = displs; v.blocks = rbuf; v.one = sbuf; v.count = scount;
    if (!di_local(d, di_rooted_why(&v, p, d->rank, rtype, stype))) return DI_P();
    if (v.at_root) di_span(rcounts, displs, p, &lo, &hi);
    if (di.verify) {
        ref = di_ref(v.at_root ? rbuf : 0, lo * (long long)v.bes, hi * (long long)v.bes, &mem);
        PMPI_Gatherv(sbuf, scount, stype, v.at_root ? ref : rbuf, rcounts, displs, rtype, root, comm);
    }
    if (!di_rooted_counts(d, k, &v, "send")) { free(mem); return DI_P(); }
    dst = di_gatherv_stage(d, &v, &src, &packed);
    rc = coll_gatherv(&d->c, src, dst, d->counts, COLL_UINT8, root, COLL_ALGO_AUTO);
    if (!di_done(d, rc)) { free(mem); return DI_P(); }
    if (v.at_root && !packed) di_unpack(rbuf, dst, rcounts, displs, v.bes, p);
    if (di.verify) {
        if (v.at_root) di_compare_blocks(d, k, rbuf, ref, rcounts, displs, v.bes, p);
        free(mem);
    }
    return MPI_SUCCESS;
#undef DI_P
}

static int di_scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                       void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    const int k = DI_SCATTERV;
    di_comm *d = 0;
    di_rooted v;
    int why, rc;
    unsigned char *mem = 0, *ref = 0, *dst;
    const unsigned char *src;
#define DI_P() PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm)
    if ((why = di_quick(k, comm, 0, 0)) || (why = di_root(comm, root)) || !(d = di_gate(comm, &why)))
        return DI_FALLBACK(why), DI_P();
    v.at_root = d->rank == root; v.inplace = rbuf == MPI_IN_PLACE; v.sends = 1;
    v.counts = scounts; v.displs = displs; v.blocks = sbuf; v.one = rbuf; v.count = rcount;
    if (!di_local(d, di_rooted_why(&v, d->p, d->rank, stype, rtype))) return DI_P();
    if (di.verify) {
        ref = di_ref(v.inplace ? 0 : rbuf, 0, v.inplace ? 0 : di_ll(v.mine), &mem);
        PMPI_Scatterv(sbuf, scounts, displs, stype, v.inplace ? MPI_IN_PLACE : (void *)ref, rcount, rtype, root, comm);
    }
    if (!di_rooted_counts(d, k, &v, "receive")) { free(mem); return DI_P(); }
    src = di_scatterv_stage(d, &v, &dst);
    rc = coll_scatterv(&d->c, src, dst, d->counts, COLL_UINT8, root, COLL_ALGO_AUTO);
    if (!di_done(d, rc)) { free(mem); return DI_P(); }
    if (di.verify) {
        if (!v.inplace) { di_spoil(rbuf, v.mine); di_compare(d, k, rbuf, ref, v.mine, 1, 0); }
        free(mem);
    }
    return MPI_SUCCESS;
#undef DI_P
}

static int di_alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                       MPI_Datatype rtype, MPI_Comm comm)
{
    const int k = DI_ALLTOALL;
    di_comm *d = 0;
    int why, rc, p, inplace = sbuf == MPI_IN_PLACE;
    size_t res, ses, blk = 0;
    unsigned char *mem = 0, *ref = 0;
#define DI_P() PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm)
    if ((why = di_quick(k, comm, (long long)rcount * di_tsize(rtype), 1)) || !(d = di_gate(comm, &why)))
        return DI_FALLBACK(why), DI_P();
    p = d->p;
    res = di_plain_size(rtype);
    ses = inplace ? res : di_plain_size(stype);
    if (rcount >= 0) blk = (size_t)rcount * res;
    why = !res || !ses ? W_TYPE
        : rcount < 0 || (!rbuf && blk) || (!inplace && (scount < 0 || !di_same((size_t)scount * ses, blk))) ? W_ARGS
        : di_alias(sbuf, rbuf);
    if (!di_local(d, why)) return DI_P();
    if (di.verify) {
        ref = di_ref(rbuf, 0, di_ll(blk * (size_t)p), &mem);
        PMPI_Alltoall(sbuf, scount, stype, ref, rcount, rtype, comm);
    }
    rc = d->hier ? di_road(d, coll_hier_alltoall(d->hier, inplace ? rbuf : sbuf, rbuf, blk, COLL_UINT8))
                 : coll_alltoall(&d->c, inplace ? rbuf : sbuf, rbuf, blk, COLL_UINT8, COLL_ALGO_AUTO);
    if (!di_done(d, rc)) { free(mem); return DI_P(); }
    if (di.verify) { di_spoil(rbuf, blk * (size_t)p); di_compare(d, k, rbuf, ref, blk * (size_t)p, 1, 0); free(mem); }
    return MPI_SUCCESS;
#undef DI_P
}

/* Alltoallv's byte matrix on every rank: each rank's row (what it sends)
   gathered. This rank's column must be what it receives, or it aborts: a
   mismatch the others cannot know of, and waiting would hang them.
   0: coll refused the round, and every rank runs the call by MPI. */
static int di_share_matrix(di_comm *d, const int *sc, size_t ses, const int *rcounts, size_t res)
{
    size_t p = (size_t)d->p, i;
    uint64_t *mine = d->row + (size_t)d->rank * p;
    int rc;
    for (i = 0; i < p; i++) mine[i] = (uint64_t)sc[i] * ses;
    rc = coll_allgather(&d->c, mine, d->row, p, COLL_UINT64, COLL_ALGO_AUTO);
    if (rc != COLL_OK && !di_done(d, rc)) return 0;
    for (i = 0; i < p * p; i++) d->counts[i] = (size_t)d->row[i];
    for (i = 0; i < p; i++)         /* column r must be what we receive */
        if (d->counts[i * p + (size_t)d->rank] != (size_t)rcounts[i] * res) rc = COLL_ERR_MISMATCH;
    if (rc) {
        fprintf(stderr, "coll-mpi: MPI_Alltoallv on rank %d: the counts sent and received disagree (%s); "
                "aborting\n", d->rank, coll_result_str(rc));
        PMPI_Abort(d->comm, 70);
    }
    return 1;
}

/* Alltoallv: each rank knows its row (what it sends) and its column (what
   it receives); coll needs the whole matrix, gathered first (bytes). The
   blocks go through pack buffers where their displacements are not back
   to back; in place, the sends come from the receive layout. */
static int di_alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
                        void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
                        MPI_Comm comm)
{
    const int k = DI_ALLTOALLV;
    di_comm *d = 0;
    int why, rc, p, inplace = sbuf == MPI_IN_PLACE, rpacked;
    size_t res = 0, ses = 0;
    long long rsum = 0, ssum = 0, lo, hi;
    unsigned char *mem = 0, *ref = 0, *src, *dst;
    const int *sc = inplace ? rcounts : scounts, *sd = inplace ? rdispls : sdispls;
#define DI_P() PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm)
    if ((why = di_quick(k, comm, 0, 0)) || !(d = di_gate(comm, &why)))
        return DI_FALLBACK(why), DI_P();
    p = d->p;
    res = di_plain_size(rtype);
    ses = inplace ? res : di_plain_size(stype);
    why = !res || !ses ? W_TYPE
        : !rcounts || !rdispls || !sc || !sd || !di_counts_ok(rcounts, p, &rsum) || !di_counts_ok(sc, p, &ssum) ||
          (!rbuf && rsum) || (!inplace && !sbuf && ssum) ? W_ARGS
        : di_alias(sbuf, rbuf);
    if (!why) di_cur.bytes = (rsum > ssum ? rsum : ssum) * (long long)res;
    if (!di_local(d, why)) return DI_P();
    di_span(rcounts, rdispls, p, &lo, &hi);
    if (di.verify) {
        ref = di_ref(rbuf, lo * (long long)res, hi * (long long)res, &mem);
        PMPI_Alltoallv(sbuf, scounts, sdispls, stype, ref, rcounts, rdispls, rtype, comm);
    }
    if (!di_share_matrix(d, sc, ses, rcounts, res)) { free(mem); return DI_P(); }
    rpacked = di_packed(rcounts, rdispls, p);
    dst = rpacked ? (unsigned char *)rbuf : di_buf(d, 1, di_bytes(rcounts, res, p));
    if (inplace) src = rpacked ? dst : di_pack(dst, rbuf, rcounts, rdispls, res, p);
    else src = di_packed(scounts, sdispls, p) ? (unsigned char *)sbuf
             : di_pack(di_buf(d, 0, di_bytes(scounts, ses, p)), sbuf, scounts, sdispls, ses, p);
    rc = coll_alltoallv(&d->c, src, dst, d->counts, COLL_UINT8, COLL_ALGO_AUTO);
    if (!di_done(d, rc)) { free(mem); return DI_P(); }
    if (!rpacked) di_unpack(rbuf, dst, rcounts, rdispls, res, p);
    if (di.verify) { di_compare_blocks(d, k, rbuf, ref, rcounts, rdispls, res, p); free(mem); }
    return MPI_SUCCESS;
#undef DI_P
}

/* Reduce_scatter(_block): MPI's in place keeps the whole vector in rbuf and
   wants the result at its start; coll's in place puts it at the rank's
   block, from where it moves down. */
static int di_reduce_scatter(int k, const void *sbuf, void *rbuf, const int *rcounts, int bcount,
                             MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    di_red r;
    di_comm *d = 0;
    int why, rc, p = 0, rank, i, inplace = sbuf == MPI_IN_PLACE, blk = k == DI_REDUCE_SCATTER_BLOCK;
    long long total = 0;
    size_t off = 0, mine = 0;
    unsigned char *mem = 0, *ref = 0, *dst;
    const unsigned char *src;
#define DI_P() (blk ? PMPI_Reduce_scatter_block(sbuf, rbuf, bcount, dt, op, comm) \
                    : PMPI_Reduce_scatter(sbuf, rbuf, rcounts, dt, op, comm))
    if (comm != MPI_COMM_NULL) PMPI_Comm_size(comm, &p);
    if (blk) total = (long long)bcount * p;                       /* the same on every rank */
    else if (p >= 1 && rcounts) di_counts_ok(rcounts, p, &total);
    if ((why = di_quick(k, comm, total * di_tsize(dt), 0)) || (why = di_op_agreed(op)) ||
        !(d = di_gate(comm, &why)))
        return DI_FALLBACK(why), DI_P();
    rank = d->rank;
    why = (blk ? bcount < 0 : !rcounts || !di_counts_ok(rcounts, p, &total)) ? W_ARGS : 0;
    if (!why) {
        if (blk) total = (long long)bcount * p;
        mine = blk ? (size_t)bcount : (size_t)rcounts[rank];
        why = (!rbuf && (mine || inplace)) || (!inplace && !sbuf && total) ? W_ARGS
            : di_alias(sbuf, rbuf) ? W_ALIAS : di_reduction(k, 0, dt, op, &r);
    }
    if (!di_local(d, why)) return DI_P();
    if (di.verify) {
        ref = di_ref(rbuf, 0, (inplace ? total : (long long)mine) * (long long)r.es, &mem);
        if (blk) PMPI_Reduce_scatter_block(sbuf, ref, bcount, dt, op, comm);
        else PMPI_Reduce_scatter(sbuf, ref, rcounts, dt, op, comm);
    }
    if (r.uop >= 0) di_user_op(d, &r, dt);
    for (i = 0; i < p; i++) {
        d->counts[i] = blk ? (size_t)bcount : (size_t)rcounts[i];
        if (i < rank) off += d->counts[i];
    }
    src = inplace ? (const unsigned char *)rbuf : (const unsigned char *)sbuf;
    dst = inplace ? (unsigned char *)rbuf + off * r.es : (unsigned char *)rbuf;
    rc = blk && d->hier ? di_road(d, coll_hier_reduce_scatter(d->hier, src, dst, (size_t)bcount, r.ct, r.co))
       : blk ? coll_reduce_scatter(&d->c, src, dst, (size_t)bcount, r.ct, r.co, COLL_ALGO_AUTO)
             : coll_reduce_scatterv(&d->c, src, dst, d->counts, r.ct, r.co, COLL_ALGO_AUTO);
    if (!di_done(d, rc)) { free(mem); return DI_P(); }
    if (inplace && off) memmove(rbuf, dst, mine * r.es);
    if (di.verify) { di_spoil(rbuf, mine * r.es); di_compare(d, k, rbuf, ref, mine, r.es, &r); free(mem); }
    return MPI_SUCCESS;
#undef DI_P
}

/* ---- the exported calls: each body, counted and timed for the report ------- */
#define DI_WRAP(K, COMM, BODY)                                                \
    {                                                                         \
        int rc_;                                                              \
        di_begin(K);                                                          \
        rc_ = BODY;                                                           \
        di_end(COMM);                                                         \
        return rc_;                                                           \
    }

DI_EXPORT int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
DI_WRAP(DI_ALLREDUCE, comm, di_allreduce(sbuf, rbuf, count, dt, op, comm))

DI_EXPORT int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
DI_WRAP(DI_BCAST, comm, di_bcast(buf, count, dt, root, comm))

DI_EXPORT int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
                         MPI_Comm comm)
DI_WRAP(DI_REDUCE, comm, di_reduce(sbuf, rbuf, count, dt, op, root, comm))

DI_EXPORT int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
DI_WRAP(DI_SCAN, comm, di_scan(DI_SCAN, sbuf, rbuf, count, dt, op, comm))

DI_EXPORT int MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
DI_WRAP(DI_EXSCAN, comm, di_scan(DI_EXSCAN, sbuf, rbuf, count, dt, op, comm))

DI_EXPORT int MPI_Barrier(MPI_Comm comm)
DI_WRAP(DI_BARRIER, comm, di_barrier(comm))

DI_EXPORT int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                            MPI_Datatype rtype, MPI_Comm comm)
DI_WRAP(DI_ALLGATHER, comm, di_allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm))

DI_EXPORT int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                             const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm)
DI_WRAP(DI_ALLGATHERV, comm, di_allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm))

DI_EXPORT int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                         MPI_Datatype rtype, int root, MPI_Comm comm)
DI_WRAP(DI_GATHER, comm, di_gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm))

DI_EXPORT int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                          MPI_Datatype rtype, int root, MPI_Comm comm)
DI_WRAP(DI_SCATTER, comm, di_scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm))

DI_EXPORT int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                          const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm)
DI_WRAP(DI_GATHERV, comm, di_gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm))

DI_EXPORT int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                           void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
DI_WRAP(DI_SCATTERV, comm, di_scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm))

DI_EXPORT int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                           MPI_Datatype rtype, MPI_Comm comm)
DI_WRAP(DI_ALLTOALL, comm, di_alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm))

DI_EXPORT int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
                            void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
                            MPI_Comm comm)
DI_WRAP(DI_ALLTOALLV, comm, di_alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm))

DI_EXPORT int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dt,
                                 MPI_Op op, MPI_Comm comm)
DI_WRAP(DI_REDUCE_SCATTER, comm, di_reduce_scatter(DI_REDUCE_SCATTER, sbuf, rbuf, rcounts, 0, dt, op, comm))

DI_EXPORT int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int count, MPI_Datatype dt,
                                       MPI_Op op, MPI_Comm comm)
DI_WRAP(DI_REDUCE_SCATTER_BLOCK, comm, di_reduce_scatter(DI_REDUCE_SCATTER_BLOCK, sbuf, rbuf, 0, count, dt, op, comm))

/* ================================================================================ */
/* Init, ops, finalize                                                               */
/* ================================================================================ */

/* The settings that decide the road must be the same on every rank, while
   the environment (or a COLL_MPI_THRESHOLDS file) may differ between
   ranks. One all-reduce (max) at MPI_Init settles them: each range of
   sizes routed is cut to its part on every rank (range i: the largest
   start and the smallest end of the ranks' range i; none on one rank:
   none), so a call routes only where every rank's table would route it; routing is off, verify on,
   the MPI transport forced, coll_hier off and MPI_THREAD_MULTIPLE in
   force everywhere if on any rank; and every rank learns whether any reports, so that all
   join the report's sum at MPI_Finalize, or none. */
enum { DI_AGREED = DI_KINDS * 9 * DI_RANGES * 2 };
static void di_agree_settings(void)
{
    static long long v[DI_AGREED + 6], all[DI_AGREED + 6];
    int k, p, i, differ = 0;
    for (k = 0; k < DI_KINDS; k++)
        for (p = 0; p < 9; p++)
            for (i = 0; i < DI_RANGES; i++) {
                const di_sizes *r = &di.route[k][p];
                long long *at = &v[((k * 9 + p) * DI_RANGES + i) * 2];
                at[0] = i < r->n ? r->lo[i] : LLONG_MAX;            /* the start, and the end negated */
                at[1] = i < r->n ? -r->hi[i] : LLONG_MAX;
            }
    v[DI_AGREED] = di.verbose;
    v[DI_AGREED + 1] = !di.on;
    v[DI_AGREED + 2] = di.verify;
    v[DI_AGREED + 3] = di.transport;        /* 0 auto < 1 shm < 2 mpi        */
    v[DI_AGREED + 4] = di.thread_multiple;
    v[DI_AGREED + 5] = !di.hier;            /* coll_hier's setup is collective */
    if (PMPI_Allreduce(v, all, DI_AGREED + 6, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS) {
        di.on = 0;                          /* no agreement: never route     */
        return;
    }
    for (k = 0; k < DI_KINDS; k++)
        for (p = 0; p < 9; p++) {
            di_sizes *r = &di.route[k][p];
            r->n = 0;
            for (i = 0; i < DI_RANGES; i++) {
                const long long *at = &all[((k * 9 + p) * DI_RANGES + i) * 2];
                differ |= at[0] != v[((k * 9 + p) * DI_RANGES + i) * 2] || at[1] != v[((k * 9 + p) * DI_RANGES + i) * 2 + 1];
                if (at[0] != LLONG_MAX && at[1] != LLONG_MAX && at[0] <= -at[1]) {
                    r->lo[r->n] = at[0];
                    r->hi[r->n] = -at[1];
                    r->n++;
                }
            }
        }
    for (k = DI_AGREED + 1; k < DI_AGREED + 6; k++) differ |= all[k] != v[k];
    di_summary = all[DI_AGREED] > 0;
    di.on = !all[DI_AGREED + 1];
    di.verify = (int)all[DI_AGREED + 2];
    di.transport = (int)all[DI_AGREED + 3];
    di.thread_multiple = (int)all[DI_AGREED + 4];
    di.hier = !all[DI_AGREED + 5];
    if (di.verbose && di_wrank() == 0) fprintf(di_out(), "coll-mpi: thresholds from %s\n", di.source);
    if (differ && di.verbose)
        fprintf(di_out(), "coll-mpi[%d]: this rank's settings (thresholds, COLL_MPI_ROUTE, _VERIFY, _TRANSPORT, "
                "_HIER, thread level) differ from another's: the ranks agreed on one\n", di_wrank());
}

DI_EXPORT int MPI_Init(int *argc, char ***argv)
{
    int rc;
    di_settings();
    rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) di_agree_settings();
    return rc;
}

/* With MPI_THREAD_MULTIPLE two threads may call collectives at once: the
   counters and the lazy setup are not made for that, so nothing routes. */
DI_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    di_settings();
    if (rc == MPI_SUCCESS && provided && *provided == MPI_THREAD_MULTIPLE) di.thread_multiple = 1;
    if (rc == MPI_SUCCESS) di_agree_settings();
    return rc;
}

DI_EXPORT int MPI_Op_create(MPI_User_function *fn, int commute, MPI_Op *op)
{
    int rc = PMPI_Op_create(fn, commute, op);
    if (rc == MPI_SUCCESS && di_nuop < DI_UOPS) {   /* beyond: falls back    */
        di_uop[di_nuop].op = *op;
        di_uop[di_nuop].fn = fn;
        di_uop[di_nuop].commute = commute;
        di_nuop++;
    }
    return rc;
}

DI_EXPORT int MPI_Op_free(MPI_Op *op)
{
    int i;
    for (i = 0; op && i < di_nuop; i++)
        if (di_uop[i].op == *op) { di_uop[i] = di_uop[--di_nuop]; break; }
    return PMPI_Op_free(op);
}

/* The verbose report, at MPI_Finalize, to stderr or this rank's
   COLL_MPI_LOG file: per communicator a call was made on (numbered in the
   order of their first call; the number is the first column and the
   VERBOSE=2 lines' "call N"), per collective and size class, the calls
   routed, those run by MPI and why, and the seconds spent each way; a
   line of this rank's totals; and from rank 0 of MPI_COMM_WORLD the
   summary of every rank: "coll-mpi: routed R of N calls (P ranks; ...)". */
static void di_report_comm(FILE *f, int rank, const di_stats *st)
{
    char line[1024];
    int k, c, w, at;
    fprintf(f, "coll-mpi[%d]: communicator %d: %s, %d ranks%s\n", rank, st->id, st->name, st->p,
            st->freed ? " (freed)" : "");
    fprintf(f, "coll-mpi[%d]: %4s %-25s %-9s %7s %7s %7s %10s %10s  %s\n", rank, "comm", "collective", "size",
            "calls", "routed", "to MPI", "routed ms", "MPI ms", "why to MPI");
    for (k = 0; k < DI_KINDS; k++)
        for (c = 0; c < DI_CLASSES; c++) {
            long long n = 0;
            for (w = 0; w < DI_WHYS; w++) n += st->n[k][c][w];
            if (!n) continue;
            /* one write a line: the launcher may interleave other ranks' */
            at = snprintf(line, sizeof line, "coll-mpi[%d]: %4d %-25s %-9s %7lld %7lld %7lld %10.3f %10.3f ",
                          rank, st->id, di_name[k], di_class_name[c], n, st->n[k][c][W_ROUTED],
                          n - st->n[k][c][W_ROUTED], st->sec[k][c][0] * 1e3, st->sec[k][c][1] * 1e3);
            for (w = 1; w < DI_WHYS; w++)
                if (st->n[k][c][w] && at > 0 && (size_t)at < sizeof line)
                    at += snprintf(line + at, sizeof line - (size_t)at, " %s %lld;", di_why_name[w], st->n[k][c][w]);
            fprintf(f, "%s\n", line);
        }
}

static void di_report_rank(void)
{
    long long mine_r = 0, mine_n = 0;
    int rank = di_wrank(), k, w, i;
    FILE *f = di_out();
    di_stats *st;
    for (k = 0; k < DI_KINDS; k++)
        for (w = 0; w < DI_WHYS; w++) { mine_n += di.count[k][w]; if (w == W_ROUTED) mine_r += di.count[k][w]; }
    for (i = 1; i <= di_nstats; i++)             /* in the order they came  */
        for (st = di_stats_list; st; st = st->next)
            if (st->id == i) di_report_comm(f, rank, st);
    if (di.roads[1] + di.roads[2] + di.roads[3])
        fprintf(f, "coll-mpi[%d]: this rank: hierarchical calls: %lld in phases, %lld flat over byhost, %lld flat\n",
                rank, di.roads[COLL_HIER_PHASES], di.roads[COLL_HIER_BYHOST], di.roads[COLL_HIER_WORLD]);
    fprintf(f, "coll-mpi[%d]: this rank: routed %lld of %lld calls\n", rank, mine_r, mine_n);
    fflush(f);
}

/* Collective over MPI_COMM_WORLD: every rank joins where any reports. */
static void di_report_sum(void)
{
    long long sum[DI_KINDS][DI_WHYS], routed = 0, calls = 0;
    int rank = di_wrank(), p = 1, k, w;
    PMPI_Comm_size(MPI_COMM_WORLD, &p);
    PMPI_Reduce(di.count, sum, DI_KINDS * DI_WHYS, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && di.verbose) {
        FILE *f = di_out();
        for (k = 0; k < DI_KINDS; k++)
            for (w = 0; w < DI_WHYS; w++) { calls += sum[k][w]; if (w == W_ROUTED) routed += sum[k][w]; }
        fprintf(f, "coll-mpi: routed %lld of %lld calls (%d ranks; %s%s)\n", routed, calls, p,
                di.on ? "routing on" : "routing off", di.verify ? ", verified" : "");
        fflush(f);
    }
}

static void di_report(void)
{
    if (di.verbose) di_report_rank();
    if (di_summary) di_report_sum();
}

DI_EXPORT int MPI_Finalize(void)
{
    di_settings();
    di_report();
    di.finalizing = 1;              /* the recorder's dumps say so            */
    while (di_list) {               /* the delete callback unlinks each       */
        di_comm *d = di_list;
        if (PMPI_Comm_delete_attr(d->comm, di.key) != MPI_SUCCESS) di_free(d);
    }
    if (di.key != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&di.key);
    if (di.out && di.out != stderr) { fclose(di.out); di.out = 0; }
    if (di.rec) { fclose(di.rec); di.rec = 0; }
    return PMPI_Finalize();
}
