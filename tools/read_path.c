/* read_path.c - the path a reader follows from coll_allreduce to the port.

   Rank 0 of 4 (threads port) runs one forced-ring all-reduce of 1003
   floats with the default checks; every function of coll.h it enters,
   until it reaches the port, is recorded in the order first entered
   (-finstrument-functions). The report lists them with their lines in
   coll.h and counts what a reader does to follow the call: the
   functions, the lines they span, and the jumps - each first entry of a
   function that does not start where the last one ended - and how many
   of those jumps go backwards in the file.

   Built twice: with the default checks and with COLL_NO_CHECKS (the
   engine alone). Build and run:  make read-path   (docs/design.md) */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXF 512
#define N 1003

static void *g_seen[MAXF];
static int g_nseen, g_over;
static __thread int t_on;                  /* recording on this thread     */
static __thread int t_port;                /* depth inside the port        */
static coll_threads g_world;

void __cyg_profile_func_enter(void *fn, void *site) __attribute__((no_instrument_function));
void __cyg_profile_func_exit(void *fn, void *site) __attribute__((no_instrument_function));

/* The port's functions live in coll_threads.h: every name of the port
   starts "coll_threads". */
static int is_port(void *fn) __attribute__((no_instrument_function));

typedef struct { void *fn; const char *name; } named;
static named g_names[4096];
static int g_nnames;

/* Each function's first entry on the recording thread, once. */
void __cyg_profile_func_enter(void *fn, void *site)
{
    int i;
    (void)site;
    if (!t_on) return;
    if (t_port || is_port(fn)) { t_port++; return; }
    for (i = 0; i < g_nseen; i++) if (g_seen[i] == fn) return;
    if (g_nseen < MAXF) g_seen[g_nseen++] = fn; else g_over = 1;
}

void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)fn; (void)site;
    if (t_on && t_port) t_port--;
}

static int is_port(void *fn)
{
    int i;
    for (i = 0; i < g_nnames; i++)
        if (g_names[i].fn == fn) return strncmp(g_names[i].name, "coll_threads", 12) == 0;
    return 0;
}

/* The symbol table of this program (nm), so the hook can tell the port. */
static void load_names(const char *self) __attribute__((no_instrument_function));
static void load_names(const char *self)
{
    char cmd[512], line[512];
    FILE *f;
    snprintf(cmd, sizeof cmd, "nm --defined-only %s", self);
    if (!(f = popen(cmd, "r"))) return;
    while (g_nnames < 4096 && fgets(line, sizeof line, f)) {
        unsigned long a;
        char kind, name[400];
        if (sscanf(line, "%lx %c %399s", &a, &kind, name) != 3 || (kind != 't' && kind != 'T')) continue;
        g_names[g_nnames].fn = (void *)a;
        g_names[g_nnames].name = strdup(name);
        g_nnames++;
    }
    pclose(f);
}

static float g_in[4][N], g_out[4][N];
static unsigned char g_scratch[4][8192];

static int body(int rank, void *arg)
{
    coll_comm c;
    coll_port port = coll_threads_port(&g_world, rank);
    int i, rc;
    (void)arg;
    for (i = 0; i < N; i++) g_in[rank][i] = (float)(rank + i);
    coll_init(&c, rank, 4, &port, g_scratch[rank], sizeof g_scratch[rank]);
    t_on = rank == 0;
    rc = coll_allreduce(&c, g_in[rank], g_out[rank], N, COLL_FLOAT32, COLL_SUM, COLL_ALGO_RING);
    t_on = 0;
    for (i = 0; i < N && rc == COLL_OK; i++)
        if (g_out[rank][i] != (float)(4 * i + 6)) rc = COLL_ERR_CORRUPT;
    return rc;
}

/* coll.h, line by line (read once). */
static char *g_src[16384];
static int g_nsrc;

static int load_source(void)
{
    FILE *f = fopen("coll.h", "r");
    char line[1024];
    if (!f) return -1;
    while (g_nsrc < 16384 && fgets(line, sizeof line, f)) g_src[g_nsrc++] = strdup(line);
    fclose(f);
    return 0;
}

/* Line k (0-based) begins a declaration of `name`: it starts at column 0
   and names it, followed by "(". */
static int names_at(int k, const char *name)
{
    const char *l = g_src[k], *at = l;
    size_t n = strlen(name);
    if (l[0] == ' ' || l[0] == '#' || l[0] == '/' || l[0] == '\n') return 0;
    while ((at = strstr(at, name)) != NULL) {
        if (at[n] == '(' && (at == l || at[-1] == ' ' || at[-1] == '*')) return 1;
        at += n;
    }
    return 0;
}

/* Where a function starts and ends in coll.h: its definition is the
   declaration whose signature runs into "{" before any ";"; it ends on
   that line if the body closes there, else at the next line that
   begins "}". 0 where coll.h does not define it (the port, this tool). */
typedef struct { const char *name; int first, last; char tag[24]; } place;

/* The section a line lies in: the last ">>tag" mark above it. */
static void section_of(int line, char *tag, size_t cap)
{
    int k;
    snprintf(tag, cap, "-");
    for (k = line - 1; k >= 0; k--) {
        const char *at = strstr(g_src[k], ">>");
        size_t n = 0;
        if (!at || strncmp(g_src[k], "/* ", 3) != 0) continue;
        at += 2;
        while (at[n] >= 'a' && at[n] <= 'z' && n + 1 < cap) n++;
        if (n == 0) continue;
        snprintf(tag, cap, "%.*s", (int)n, at);
        return;
    }
}

static int where(void *fn, place *p)
{
    int i, k, m;
    p->name = NULL;
    for (i = 0; i < g_nnames; i++) if (g_names[i].fn == fn) p->name = g_names[i].name;
    if (!p->name) return 0;
    for (k = 0; k < g_nsrc; k++) {
        if (!names_at(k, p->name)) continue;
        for (m = k; m < g_nsrc && m < k + 8; m++)
            if (strchr(g_src[m], '{') || strchr(g_src[m], ';')) break;
        if (m == g_nsrc || !strchr(g_src[m], '{')) continue;      /* a prototype */
        p->first = k + 1;
        section_of(k, p->tag, sizeof p->tag);
        if (strrchr(g_src[m], '}') > strchr(g_src[m], '{')) { p->last = m + 1; return 1; }
        for (m++; m < g_nsrc && g_src[m][0] != '}'; m++) {}
        p->last = m + 1;
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    place pl[MAXF];
    int i, k, n = 0, rc, jumps = 0, back = 0, lines = 0, lo = 1 << 30, hi = 0;
    (void)argc;
    load_names(argv[0]);
    if (load_source() != 0) { fprintf(stderr, "read_path: run it from the tree's top (coll.h)\n"); return 1; }
    if (coll_threads_init(&g_world, 4, 10000) != 0) return 1;
    rc = coll_threads_run(&g_world, body, NULL);
    coll_threads_destroy(&g_world);
    if (rc != 0 || g_over || g_nseen == 0) {   /* a wrong sum is a failed run */
        fprintf(stderr, "read_path: run failed (%d) or nothing recorded\n", rc);
        return 1;
    }
    for (i = 0; i < g_nseen; i++) {
        if (where(g_seen[i], &pl[n])) n++;
        else if (getenv("READ_PATH_DEBUG")) fprintf(stderr, "not in coll.h: %p %s\n", g_seen[i], pl[n].name ? pl[n].name : "?");
    }
    printf("| # | function | section | coll.h lines |\n|---:|---|---|---|\n");
    for (i = 0; i < n; i++) {
        printf("| %d | `%s` | >>%s | %d-%d |\n", i + 1, pl[i].name, pl[i].tag, pl[i].first, pl[i].last);
        lines += pl[i].last - pl[i].first + 1;
        if (pl[i].first < lo) lo = pl[i].first;
        if (pl[i].last > hi) hi = pl[i].last;
        if (i > 0 && pl[i].first != pl[i - 1].last + 1 && pl[i].first != pl[i - 1].last + 2) {
            jumps++;
            if (pl[i].first < pl[i - 1].first) back++;
        }
    }
    printf("\n%d functions, %d lines, %d jumps (%d backwards) across coll.h lines %d-%d\n",
           n, lines, jumps, back, lo, hi);
    printf("\nsections in the order the call visits them (functions):\n  ");
    for (i = 0; i < n; i = k) {
        for (k = i; k < n && strcmp(pl[k].tag, pl[i].tag) == 0; k++) {}
        printf("%s>>%s (%d)", i ? " -> " : "", pl[i].tag, k - i);
    }
    printf("\n");
    return 0;
}
