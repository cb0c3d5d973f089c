/* seed_oneflow.c - OneFlow's global tensors (placement + SBP) in C: two
   processes over TCP, launched with the seed's environment variables.

   The seed creates x = randn(4, 5) on ranks [0, 1] with sbp split(0): each
   rank holds 2 of the 4 rows (to_local()), while x.numpy() shows all of it.
   Changing the sbp is a collective: split -> broadcast is an all-gather,
   partial_sum -> broadcast an all-reduce, partial_sum -> split a
   reduce-scatter, broadcast -> split a local slice, split(0) -> split(1) an
   all-to-all. Finally matmul(x split(0), w broadcast) gives y split(0):
   each rank multiplies its own rows, no communication at all.

   Here the same with coll_layout_convert over the TCP port. Every global
   value is a function of its index, so each rank can check every result
   against a plain loop; the matmul is checked against the full product
   computed on one rank with the same loop order (so bit for bit).

   Run:  make seed-oneflow        (this program starts the 2 ranks itself)
   or, as in the seed, one shell per rank, each with the same job token
   (export COLL_TCP_TOKEN=<one secret for the job> first):
         export MASTER_ADDR=127.0.0.1 MASTER_PORT=17789 WORLD_SIZE=2 RANK=0 LOCAL_RANK=0
         build/tcp/seed_oneflow
         export MASTER_ADDR=127.0.0.1 MASTER_PORT=17789 WORLD_SIZE=2 RANK=1 LOCAL_RANK=1
         build/tcp/seed_oneflow
*/
#define _POSIX_C_SOURCE 200809L
#define COLL_IMPLEMENTATION
#include "coll_layout.h"
#define COLL_TCP_IMPLEMENTATION
#include "ports/coll_tcp.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

enum { WORLD = 2, ROWS = 4, COLS = 5, OUT = 8 };

/* randn, reproducibly: element g of tensor `key` is a sum of 12 uniform
   numbers from a hash of (key, g), minus 6 - near enough to normal, and
   the same on every rank without anyone sending it. */
static float randn_at(unsigned key, unsigned g)
{
    unsigned h = key * 2654435761u ^ (g + 1) * 40503u, k;
    float s = 0;
    for (k = 0; k < 12; k++) {
        h ^= h << 13; h ^= h >> 17; h ^= h << 5;
        s += (float)(h & 0xFFFFFF) / 16777216.0f;
    }
    return s - 6.0f;
}

/* ---- printing in rank order --------------------------------------------- */

static char text[8192];
static size_t text_len;

static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    text_len += (size_t)vsnprintf(text + text_len, sizeof text - text_len, fmt, ap);
    va_end(ap);
    if (text_len >= sizeof text) text_len = sizeof text - 1;
}

static void say_tensor(const char *title, const float *x, size_t rows, size_t cols)
{
    size_t i, j;
    say("  %s (%zu, %zu):\n", title, rows, cols);
    for (i = 0; i < rows; i++) {
        say("   %s", i ? " [" : "[[");
        for (j = 0; j < cols; j++) say("%s%11.8f", j ? " " : "", (double)x[i * cols + j]);
        say("]%s\n", i + 1 == rows ? "]" : "");
    }
}

/* Everyone prints what it gathered, rank 0 first. */
static void flush_in_order(coll_comm *c)
{
    int r;
    for (r = 0; r < c->nranks; r++) {
        if (r == c->rank) { fputs(text, stdout); fflush(stdout); }
        coll_barrier(c, COLL_ALGO_AUTO);
    }
    text_len = 0;
    text[0] = 0;
}

/* ---- one rank ------------------------------------------------------------- */

static int passed, failed;

static void check(int ok, const char *what)
{
    if (ok) passed++;
    else { failed++; say("  CHECK FAILED: %s\n", what); }
}

/* dst <- src converted from layout `from` to layout `to` of a ROWS x COLS
   float tensor, through a workspace of the size the library asks for */
static int convert(coll_comm *c, const float *src, coll_sbp from, float *dst, coll_sbp to)
{
    static const size_t shape[2] = { ROWS, COLS };
    static unsigned char work[4096];
    size_t need = coll_layout_work_bytes(c->nranks, 2, shape, COLL_FLOAT32, from, to);
    int rc = need <= sizeof work
        ? coll_layout_convert(c, 2, shape, COLL_FLOAT32, src, from, dst, to, work, need)
        : COLL_ERR_NOSPC;
    if (rc) say("  conversion failed: %s\n", coll_result_str(rc));
    return rc;
}

static int same(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof *a) == 0;
}

static void rank_main(void)
{
    static const size_t shape[2] = { ROWS, COLS };
    static coll_tcp t;
    static unsigned char scratch[4096];
    float truth[ROWS * COLS], x[ROWS * COLS], full[ROWS * COLS], back[ROWS * COLS];
    float part[ROWS * COLS], s1[ROWS * COLS];
    float w[COLS * OUT], y[ROWS * OUT], yfull[ROWS * OUT], yref[ROWS * OUT];
    size_t local[2], start, mine, i, j, k;
    coll_comm c;
    coll_port port;
    int rc = coll_tcp_init_env(&t, 10000);
    if (rc) {
        fprintf(stderr, "rendezvous failed: %s\n", coll_result_str(rc));
        failed++;
        return;
    }
    port = coll_tcp_port(&t);
    coll_init(&c, t.rank, t.nranks, &port, scratch, sizeof scratch);
    for (i = 0; i < ROWS * COLS; i++) truth[i] = randn_at(1, (unsigned)i);

    /* x = randn(4, 5, placement=ranks [0, 1], sbp=split(0)): each rank
       makes its own rows only */
    mine = coll_layout_local_shape(t.rank, t.nranks, 2, shape, coll_sbp_split(0), local);
    coll_layout_rows(ROWS, t.nranks, t.rank, &start);
    for (i = 0; i < mine; i++) x[i] = randn_at(1, (unsigned)(start * COLS + i));
    say("rank %d (LOCAL_RANK %d)\n", t.rank, t.local_rank);
    say_tensor("Local data of global tensor, x.to_local()", x, local[0], local[1]);

    /* x.numpy(): split(0) -> broadcast, an all-gather */
    rc = convert(&c, x, coll_sbp_split(0), full, coll_sbp_broadcast());
    say_tensor("Global data of global tensor, x.numpy()", full, ROWS, COLS);
    check(!rc && same(full, truth, ROWS * COLS), "split(0) -> broadcast gives the global tensor");
    flush_in_order(&c);

    say("rank %d\n", t.rank);
    /* broadcast -> split(0): a local slice, back where we started */
    rc = convert(&c, full, coll_sbp_broadcast(), back, coll_sbp_split(0));
    check(!rc && same(back, x, mine), "broadcast -> split(0) gives my rows");

    /* split(0) -> partial_sum (my rows, zeros elsewhere; no traffic), then
       partial_sum -> broadcast, an all-reduce */
    rc = convert(&c, x, coll_sbp_split(0), part, coll_sbp_partial_sum());
    say_tensor("to_global(sbp=partial_sum).to_local()", part, ROWS, COLS);
    if (!rc) rc = convert(&c, part, coll_sbp_partial_sum(), back, coll_sbp_broadcast());
    check(!rc && same(back, truth, ROWS * COLS), "split(0) -> partial_sum -> broadcast");

    /* broadcast -> partial_sum (rank 0 keeps it, the others hold zeros),
       then partial_sum -> split(0), a reduce-scatter */
    rc = convert(&c, full, coll_sbp_broadcast(), part, coll_sbp_partial_sum());
    if (!rc) rc = convert(&c, part, coll_sbp_partial_sum(), back, coll_sbp_split(0));
    check(!rc && same(back, x, mine), "broadcast -> partial_sum -> split(0)");

    /* split(0) -> split(1), an all-to-all: 5 columns over 2 ranks is 3 + 2 */
    rc = convert(&c, x, coll_sbp_split(0), s1, coll_sbp_split(1));
    coll_layout_local_shape(t.rank, t.nranks, 2, shape, coll_sbp_split(1), local);
    say_tensor("to_global(sbp=split(1)).to_local()", s1, local[0], local[1]);
    if (!rc) rc = convert(&c, s1, coll_sbp_split(1), back, coll_sbp_broadcast());
    check(!rc && same(back, truth, ROWS * COLS), "split(0) -> split(1) -> broadcast");
    flush_in_order(&c);

    /* y = matmul(x split(0), w broadcast) is split(0): my rows of x times
       all of w, computed where they are */
    for (i = 0; i < COLS * OUT; i++) w[i] = randn_at(2, (unsigned)i);
    for (i = 0; i < mine / COLS; i++)
        for (j = 0; j < OUT; j++) {
            float s = 0;
            for (k = 0; k < COLS; k++) s += x[i * COLS + k] * w[k * OUT + j];
            y[i * OUT + j] = s;
        }
    for (i = 0; i < ROWS; i++)                 /* the whole product, on one rank */
        for (j = 0; j < OUT; j++) {
            float s = 0;
            for (k = 0; k < COLS; k++) s += truth[i * COLS + k] * w[k * OUT + j];
            yref[i * OUT + j] = s;
        }
    {
        static const size_t yshape[2] = { ROWS, OUT };
        static unsigned char work[4096];
        rc = coll_layout_convert(&c, 2, yshape, COLL_FLOAT32, y, coll_sbp_split(0), yfull,
                                 coll_sbp_broadcast(), work, sizeof work);
    }
    say("rank %d: y = matmul(x, w): y.shape (%d, %d), y.sbp (split(dim=0),)\n", t.rank, ROWS, OUT);
    say_tensor("y.to_local()", y, mine / COLS, OUT);
    check(!rc && same(yfull, yref, ROWS * OUT), "matmul split(0) x broadcast = split(0) of the product");
    flush_in_order(&c);
    coll_tcp_close(&t);
}


/* No WORLD_SIZE in the environment: be the launcher, setting for each
   process what the seed exports by hand. */
static int launch(void)
{
    pid_t pid[WORLD];
    int fds[WORLD], mport = coll_tcp_free_port(), r, p = 0, f = 0;
    char port[16], num[16];
    if (mport < 0) {
        perror("seed_oneflow: no free port");
        return 1;
    }
    snprintf(port, sizeof port, "%d", mport);
    if (coll_tcp_token_env() != COLL_OK) { perror("seed_oneflow: no random source"); return 1; }   /* one secret per job */
    printf("export MASTER_ADDR=127.0.0.1 MASTER_PORT=%s WORLD_SIZE=%d RANK=0..%d LOCAL_RANK=0..%d\n",
           port, WORLD, WORLD - 1, WORLD - 1);
    fflush(stdout);
    for (r = 0; r < WORLD; r++) {
        int pfd[2];
        if (pipe(pfd) < 0) return 1;
        pid[r] = fork();
        if (pid[r] == 0) {
            int counts[2];
            close(pfd[0]);
            setenv("MASTER_ADDR", "127.0.0.1", 1);
            setenv("MASTER_PORT", port, 1);
            snprintf(num, sizeof num, "%d", WORLD);
            setenv("WORLD_SIZE", num, 1);
            snprintf(num, sizeof num, "%d", r);
            setenv("RANK", num, 1);
            setenv("LOCAL_RANK", num, 1);
            rank_main();
            counts[0] = passed; counts[1] = failed;
            _exit(write(pfd[1], counts, sizeof counts) == (ssize_t)sizeof counts ? 0 : 1);
        }
        close(pfd[1]);
        fds[r] = pfd[0];
    }
    for (r = 0; r < WORLD; r++) {
        int counts[2], status = 0;
        if (read(fds[r], counts, sizeof counts) == (ssize_t)sizeof counts) {
            p += counts[0]; f += counts[1];
        } else {
            f++;
        }
        close(fds[r]);
        waitpid(pid[r], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) f++;
    }
    printf("seed-oneflow: %d passed, %d failed\n", p, f);
    return f != 0;
}

int main(void)
{
    if (getenv("WORLD_SIZE")) {
        rank_main();
        printf("rank %s: %d checks passed, %d failed\n", getenv("RANK"), passed, failed);
        return failed != 0;
    }
    return launch();
}
