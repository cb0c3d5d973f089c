/* test_threads_push.c - the threads port's sender takes back a send it
   left for its receiver to copy (PULL), when the receiver does not come
   to it (ports/coll_threads.h, PULL: coll_threads__push).

   Rank 1 posts a large receive and then does not call the port at all
   for a while (it naps: awake, as far as the port can tell, but not
   running its waits); rank 0 sends into it and waits. With receivers
   copying (COLL_THREADS_PULL=1), the send queues for rank 1 to copy; the
   sender must copy it itself while it waits, so its wait returns and the
   data is in rank 1's buffer before rank 1 touches the port again. A
   sender that only waited for its receiver would still be waiting when
   the nap ends (within the world's 10 s deadline, far past the nap).
   The same with a folding receive (irecv_fold): the fold runs in the
   sender's thread and sums; and with several sends queued at once, in
   order. Then COLL_THREADS_PULL=0, where the sender copies at post. */
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#include "coll_test.h"
#include <stdlib.h>
#include <time.h>

#define NAP_MS 2000                    /* how long rank 1 keeps off the port */
#define MSGS 3                         /* sends in flight at once           */

static coll_threads w;
static size_t bytes;                   /* this case's message size           */
static int fold;                       /* this case posts irecv_fold         */
static unsigned char sbuf[MSGS][1 << 17], rbuf[MSGS][1 << 17];
static int posted, sent;               /* atomic: rank 1 posted, rank 0's waits returned */
static pthread_t fold_thread;
static int folds;

static void sleep_ms(long ms)
{
    struct timespec t;
    t.tv_sec = ms / 1000;
    t.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&t, NULL);
}

static void add_fold(void *arg, void *piece, const void *in, size_t n)
{
    unsigned char *d = (unsigned char *)piece;
    const unsigned char *s = (const unsigned char *)in;
    size_t i;
    (void)arg;
    for (i = 0; i < n; i++) d[i] = (unsigned char)(d[i] + s[i]);
    fold_thread = pthread_self();
    __atomic_fetch_add(&folds, 1, __ATOMIC_SEQ_CST);
}

static int body(int rank, void *arg)
{
    coll_port p = coll_threads_port(&w, rank);
    int h[MSGS], i, rc;
    size_t k;
    (void)arg;
    if (rank == 0) {
        while (!__atomic_load_n(&posted, __ATOMIC_ACQUIRE)) sleep_ms(1);
        for (i = 0; i < MSGS; i++) {
            rc = p.isend(p.ctx, 1, sbuf[i], bytes, &h[i]);
            COLL_CHECK_EQ(rc, COLL_OK);
        }
        for (i = 0; i < MSGS; i++) COLL_CHECK_EQ(p.wait(p.ctx, h[i], 1), COLL_OK);
        __atomic_store_n(&sent, 1, __ATOMIC_RELEASE);
        return 0;
    }
    for (i = 0; i < MSGS; i++) {
        rc = fold ? p.irecv_fold(p.ctx, 0, rbuf[i], bytes, add_fold, NULL, &h[i])
                  : p.irecv(p.ctx, 0, rbuf[i], bytes, &h[i]);
        COLL_CHECK_EQ(rc, COLL_OK);
    }
    __atomic_store_n(&posted, 1, __ATOMIC_RELEASE);
    for (i = 0; i < NAP_MS && !__atomic_load_n(&sent, __ATOMIC_ACQUIRE); i++) sleep_ms(1);
    /* before this rank calls the port again */
    COLL_CHECK_MSG(__atomic_load_n(&sent, __ATOMIC_ACQUIRE),
                   "%zu B%s: the sender still waits for a receiver that does not run", bytes, fold ? " (fold)" : "");
    for (i = 0; i < MSGS; i++) {
        size_t bad = 0;
        for (k = 0; k < bytes; k++)
            bad += rbuf[i][k] != (unsigned char)(sbuf[i][k] + (fold ? (unsigned char)(k + (size_t)i) : 0));
        COLL_CHECK_MSG(bad == 0, "%zu B%s, message %d: %zu bytes wrong before the receiver's wait",
                       bytes, fold ? " (fold)" : "", i, bad);
    }
    if (fold) {
        COLL_CHECK_MSG(__atomic_load_n(&folds, __ATOMIC_SEQ_CST) > 0, "no fold ran");
        COLL_CHECK_MSG(!pthread_equal(fold_thread, pthread_self()), "the fold ran in the receiver's thread");
    }
    for (i = 0; i < MSGS; i++) COLL_CHECK_EQ(p.wait(p.ctx, h[i], 1), COLL_OK);
    return 0;
}

static void one(const char *pull, size_t n, int with_fold)
{
    int i;
    size_t k;
    setenv("COLL_THREADS_PULL", pull, 1);
    bytes = n;
    fold = with_fold;
    posted = sent = folds = 0;
    for (i = 0; i < MSGS; i++)
        for (k = 0; k < n; k++) {
            sbuf[i][k] = (unsigned char)(k * 7u + (size_t)i * 13u + 1u);
            rbuf[i][k] = fold ? (unsigned char)(k + (size_t)i) : 0xa5;
        }
    COLL_CHECK_EQ(coll_threads_init(&w, 2, 10000), COLL_OK);
    COLL_CHECK_EQ(coll_threads_run(&w, body, NULL), 0);
    coll_threads_destroy(&w);
}

int main(void)
{
    static const size_t sizes[] = { 4096, 4097, 65536, 1 << 17 };
    unsigned i;
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        one("1", sizes[i], 0);
        one("1", sizes[i], 1);
        one("0", sizes[i], 0);
        one("0", sizes[i], 1);
    }
    return coll_test_summary("threads-push");
}
