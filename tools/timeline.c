/* timeline.c - every rank's flight recorder merged into one timeline.

       build/teach/timeline [-o DIR] [-t TITLE] RANK0.txt RANK1.txt ...
       -> DIR/trace.json  Chrome trace-event JSON (Perfetto, chrome://tracing)
          DIR/index.html  one self-contained page: a lane per rank, each
                          call a box on the time axis (failures red), and
                          the schedule's diagram beside it

   Each file is one rank's coll_dump text: lines "call N KIND ALGO dtype D
   op O root R bytes B start S end E step T peer Q result C TEXT", as
   coll_dump writes them, under any header lines the writers put there:
     "# ... rank R of P ..."            (test/timeline_run.c, coll_torch):
                                        the file's rank, else its place in
                                        the command line (0, 1, ...);
     "# NAME communicator: ..."         (coll_torch): the lines below are
                                        communicator NAME's;
     "coll-mpi[R]: communicator I: NAME, ..." (the MPI drop-in): rank R,
                                        the lines below communicator I's.
   A call seen twice (a file holding several dumps of one communicator)
   is kept once, as last written. Each communicator is one process of the
   trace (pid 1, 2, ...), each rank a thread of it (tid = rank); a call is
   one "X" event named KIND/ALGO with its figures in args; a failed one
   has args.failed true and cname "terrible" (red).

   Times are the records' own, used as they are: start and end in
   nanoseconds of CLOCK_MONOTONIC, which every rank of one host shares
   (the MPI drop-in, coll_torch and timeline_run stamp them so); the trace
   starts at the earliest start. Ranks on different hosts have unrelated
   clocks: their lanes are not aligned. A line that is not one of these
   stops the tool with the file and line named. The diagram is drawn by
   tools/diagrams.c's own draw (make diagrams), for each collective and
   algorithm seen (at most four) at the communicator's number of ranks.

   Every message: beside a rank's file X.txt (else FILE), X.events (else
   FILE.events), if there, holds its observer's events (coll_set_observer;
   test/timeline_run.c writes them), one line each, stamped by the clock
   of the records, in the order they happened:
     call t T seq S KIND ALGO bytes B          a call's turn (COLL_EV_CALL)
     post t T seq S step K send|recv peer Q bytes B handle H
                                               a message handed to the port
     done t T seq S step K send|recv peer Q handle H result C
                                               one completed (COLL_EV_DONE)
     end t T seq S result C                    the call's end (COLL_EV_END)
     lost N                                    N events the writer had no
                                               room for (a warning)
     # ...                                     a comment; "rank R of P" in
                                               it must be the file's rank
   T in ns (>= 1, never going back), S the call number (0 outside a call),
   K the schedule's step (1, 2, ...; 0 the call check's rounds), H the
   port's handle or -1 for a blocking call. A DONE completes the open POST
   of its handle, or for -1 the oldest open one of its direction and peer;
   a POST never done is drawn "open" up to its call's end (the record's,
   else the END event's, else the file's last time). A line of another kind, a field missing or out of range, a
   time going back, a DONE that no POST opened stops the tool with the file
   and line named. The events belong to the file's (first) communicator.
   From them, on each rank: a step is one "X" event (cat "step", named
   "step K" or "call check", nested in its call's) from its first POST to
   its last DONE, with its sends, receives and their bytes in args; each
   message one "X" event (cat "msg", named "send to Q, B B") on one of its
   rank's message tracks (tid 100000 + 16 x rank + track, the first track
   free when it is posted: messages may overlap); send k from rank a to b
   in call S is receive k from a on b in call S (in the order posted), and
   each such pair one flow arrow ("s" at the send's POST, "f" with bp "e"
   1 ns before the receive's DONE, inside its slice); args.match is the
   other one's index among the message events (-1: none on the peer). The
   page draws the steps as lighter boxes inside each call box and the
   messages inside them (sends above receives, peer and bytes in the
   tooltip and, where room, the label), and one call closer (the shortest
   with messages) with a line from each send to its receive. */
#define main diagrams_main
#include "tools/diagrams.c"
#undef main

#include <stdarg.h>

enum { MAX_EV = 1 << 16, MAX_FILES = 256, MAX_COMMS = 16, LINE_MAX_ = 1024 };

typedef struct ev {
    int rank, comm;
    uint32_t seq;
    coll_kind kind;
    coll_algo algo;
    int dtype, op, root, step, peer, result;
    long long bytes;
    unsigned long long start, end;
    char text[80];
} ev;

static ev evs[MAX_EV];
static int nev;
static char comms[MAX_COMMS][128];
static int ncomms;

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "timeline: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static int comm_of(const char *label, const char *file, int line)
{
    int i;
    for (i = 0; i < ncomms; i++) if (!strcmp(comms[i], label)) return i;
    if (ncomms == MAX_COMMS) die("%s:%d: more than %d communicators", file, line, MAX_COMMS);
    snprintf(comms[ncomms], sizeof comms[0], "%s", label);
    return ncomms++;
}

/* the next space-separated word of *s (advanced), or NULL */
static const char *word(char **s)
{
    char *w = *s, *e;
    if (*w == 0) return 0;
    e = strchr(w, ' ');
    if (e) { *e = 0; *s = e + 1; } else *s = w + strlen(w);
    return w;
}

/* a decimal integer, a '-' allowed where neg; 0 if it is not one */
static int number(const char *w, int neg, long long *v)
{
    unsigned long long x = 0;
    int minus = 0;
    if (!w || !*w) return 0;
    if (*w == '-' && neg) { minus = 1; w++; }
    if (!*w) return 0;
    for (; *w; w++) {
        if (*w < '0' || *w > '9' || x > 922337203685477580ull) return 0;
        x = x * 10 + (unsigned)(*w - '0');
    }
    if (x > 9223372036854775807ull) return 0;
    *v = minus ? -(long long)x : (long long)x;
    return 1;
}

/* the next line of f into buf (at most LINE_MAX_ characters, its '\r' and
   '\n' dropped): 1, or 0 at the end */
static int get_line(FILE *f, char *buf, const char *file, int line)
{
    int ch, nul = 0;
    size_t n = 0;
    while ((ch = getc(f)) != EOF && ch != '\n') {
        if (n == LINE_MAX_) die("%s:%d: a line over %d characters", file, line, LINE_MAX_);
        nul |= ch == 0;
        buf[n++] = (char)ch;
    }
    if (ferror(f)) die("%s: read error", file);
    if (ch == EOF && n == 0) return 0;
    if (nul) die("%s:%d: a NUL byte in the line", file, line);
    if (n && buf[n - 1] == '\r') n--;
    buf[n] = 0;
    return 1;
}

static void parse_call(char *s, const char *file, int line, int rank, int comm)
{
    static const char *const label[9] = { "dtype", "op", "root", "bytes", "start", "end", "step", "peer", "result" };
    long long v[9], seq;
    const char *w, *kn, *an;
    int f, k, a, i;
    ev e;
    memset(&e, 0, sizeof e);
    word(&s);                                  /* "call" */
    if (!number(word(&s), 0, &seq) || seq < 1 || seq > 0xffffffffll)
        die("%s:%d: 'call' is not followed by a call number", file, line);
    kn = word(&s); an = word(&s);
    for (k = 0; k < COLL_KIND_COUNT; k++) if (kn && !strcmp(kn, coll_kind_name((coll_kind)k))) break;
    if (k == COLL_KIND_COUNT) die("%s:%d: no collective '%s'", file, line, kn ? kn : "");
    for (a = 0; a < COLL_ALGO_COUNT; a++) if (an && !strcmp(an, coll_algo_name((coll_algo)a))) break;
    if (a == COLL_ALGO_COUNT) die("%s:%d: no algorithm '%s'", file, line, an ? an : "");
    for (f = 0; f < 9; f++) {
        w = word(&s);
        if (!w || strcmp(w, label[f])) die("%s:%d: '%s' where '%s' belongs", file, line, w ? w : "(the line's end)", label[f]);
        if (!number(word(&s), f == 2 || f >= 6, &v[f])) die("%s:%d: '%s' is not followed by a number", file, line, label[f]);
    }
    if (v[0] >= COLL_DTYPE_COUNT || v[1] >= COLL_OP_COUNT) die("%s:%d: dtype %lld or op %lld out of range", file, line, v[0], v[1]);
    if (v[5] < v[4] && v[8] != COLL_AGAIN) die("%s:%d: the call ends (%lld) before it starts (%lld)", file, line, v[5], v[4]);
    if (v[4] == 0) die("%s:%d: start 0: the recorder ran without a clock (coll_set_recorder's now)", file, line);
    if (v[2] > 0xffff || v[6] > 0xffffff || v[7] > 0xffff || v[8] < -100000 || v[8] > 100000 || v[2] < -1 || v[7] < -1)
        die("%s:%d: root, step, peer or result out of range", file, line);
    e.rank = rank; e.comm = comm; e.seq = (uint32_t)seq; e.kind = (coll_kind)k; e.algo = (coll_algo)a;
    e.dtype = (int)v[0]; e.op = (int)v[1]; e.root = (int)v[2]; e.bytes = v[3];
    e.start = (unsigned long long)v[4]; e.end = (unsigned long long)v[5];
    e.step = (int)v[6]; e.peer = (int)v[7]; e.result = (int)v[8];
    snprintf(e.text, sizeof e.text, "%s", s);
    for (i = 0; i < nev; i++)                    /* the same call dumped again: the later wins */
        if (evs[i].rank == rank && evs[i].comm == comm && evs[i].seq == e.seq) { evs[i] = e; return; }
    if (nev == MAX_EV) die("%s:%d: more than %d calls", file, line, MAX_EV);
    evs[nev++] = e;
}

/* one rank's file; its rank (from a header, else `index`) */
static int read_file(const char *file, int index)
{
    char buf[LINE_MAX_ + 2];
    FILE *f = fopen(file, "r");
    int line = 0, rank = index, comm = -1, first = nev, calls = 0, rank_set = 0, i;
    if (!f) die("cannot read %s", file);
    while (get_line(f, buf, file, ++line)) {
        char *s = buf, *at;
        if (!*s) continue;
        if (!strncmp(s, "call ", 5)) {
            if (comm < 0) comm = comm_of("", file, line);
            parse_call(s, file, line, rank, comm);
            calls++;
            continue;
        }
        if (s[0] == '#') {
            if ((at = strstr(s, " communicator: ")) != NULL) {      /* coll_torch: a communicator's block */
                char name[128];
                const char *b = s + 1;
                while (*b == ' ') b++;
                snprintf(name, sizeof name, "%.*s", (int)(at - b), b);
                comm = comm_of(name, file, line);
            } else if (!rank_set && (at = strstr(s, "rank ")) != NULL) {   /* "rank R of P": the file's rank */
                long long r = 0;
                int d = 0;
                at += 5;
                while (at[d] >= '0' && at[d] <= '9' && d < 6) r = r * 10 + (at[d++] - '0');
                if (d && !strncmp(at + d, " of ", 4)) {
                    if (calls) die("%s:%d: 'rank %lld of' after the calls", file, line, r);
                    rank = (int)r;
                    rank_set = 1;
                }
            }
            continue;
        }
        if (!strncmp(s, "coll-mpi[", 9)) {                           /* the MPI drop-in's block */
            long long r;
            char *close = strchr(s, ']'), *cm, name[128], num[24];
            if (!close || close - (s + 9) >= (long)sizeof num) die("%s:%d: a coll-mpi[...] header without its ']'", file, line);
            snprintf(num, sizeof num, "%.*s", (int)(close - (s + 9)), s + 9);
            if (!number(num, 0, &r) || r > 0xffff) die("%s:%d: coll-mpi[%s]: not a rank", file, line, num);
            if ((calls || rank_set) && (int)r != rank) die("%s:%d: coll-mpi[%lld] in the file of rank %d", file, line, r, rank);
            rank = (int)r;
            rank_set = 1;
            if (!(cm = strstr(close, "communicator ")) ) die("%s:%d: a coll-mpi header that names no communicator", file, line);
            {
                char *comma = strchr(cm, ',');
                snprintf(name, sizeof name, "%.*s", comma ? (int)(comma - cm) : (int)strlen(cm), cm);
            }
            comm = comm_of(name, file, line);
            continue;
        }
        die("%s:%d: not a line of coll_dump's ('call N ...'), a '#' header or a coll-mpi[R] header: %.60s", file, line, s);
    }
    if (ferror(f)) die("%s: read error", file);
    fclose(f);
    for (i = first; i < nev; i++) evs[i].rank = rank;          /* a header after the calls (never, but) */
    return rank;
}

/* ---- the observer's events (FILE.events beside FILE.txt) ------------------
   Each message is a POST and the DONE that completes it: a non-blocking
   one found again by its handle, a blocking one (handle -1) by direction
   and peer, the oldest open first. A POST never done is kept "open", to
   the END of its call (else the file's last time). */
enum { MAX_MSG = 1 << 20, MAX_STEP = 1 << 18, MAX_TRACKS = 16, PAGE_MSGS = 20000 };

typedef struct msg {
    int rank, comm, send, peer, handle, step, result, open, lane, match;
    uint32_t seq;
    long long bytes;
    unsigned long long post, done;
} msg;

typedef struct stp {
    int rank, comm, step, sends, recvs, open;
    uint32_t seq;
    long long sbytes, rbytes;
    unsigned long long from, to;
} stp;

static msg msgs[MAX_MSG];
static int nmsg, nopen_msgs, nmatched, nevfiles;
static stp steps[MAX_STEP];
static int nsteps;
static struct track { int comm, rank, lane; } tracks[MAX_FILES * MAX_TRACKS];   /* the message tracks in use */
static int ntracks;
static long long nlost;

/* "KEY NUMBER" at *s, in range: the number */
static long long keyed(char **s, const char *key, long long lo, long long hi, const char *file, int line)
{
    const char *w = word(s);
    long long v;
    if (!w || strcmp(w, key)) die("%s:%d: '%s' where '%s' belongs", file, line, w ? w : "(the line's end)", key);
    if (!number(word(s), lo < 0, &v)) die("%s:%d: '%s' is not followed by a number", file, line, key);
    if (v < lo || v > hi) die("%s:%d: %s %lld out of range (%lld to %lld)", file, line, key, v, lo, hi);
    return v;
}

static int direction(char **s, const char *file, int line)
{
    const char *w = word(s);
    if (w && !strcmp(w, "send")) return 1;
    if (w && !strcmp(w, "recv")) return 0;
    die("%s:%d: '%s' where 'send' or 'recv' belongs", file, line, w ? w : "(the line's end)");
    return 0;
}

/* the file being read: its name, line, rank and communicator, its open messages (indices in msgs) */
typedef struct evfile {
    const char *file;
    int line, rank, comm, nopen;
    int *openl;
} evfile;

static void ev_post(evfile *v, unsigned long long t, uint32_t seq, int step, int send, int peer, long long bytes, int handle)
{
    msg *m;
    int i;
    if (peer < 0) die("%s:%d: a post to peer -1", v->file, v->line);
    for (i = 0; i < v->nopen && handle >= 0; i++)
        if (msgs[v->openl[i]].handle == handle)
            die("%s:%d: handle %d posted again while its message (a line above) is open", v->file, v->line, handle);
    if (nmsg == MAX_MSG) die("%s:%d: more than %d messages", v->file, v->line, MAX_MSG);
    m = &msgs[nmsg];
    memset(m, 0, sizeof *m);
    m->rank = v->rank; m->comm = v->comm; m->send = send; m->peer = peer; m->handle = handle; m->step = step;
    m->seq = seq; m->bytes = bytes; m->post = m->done = t; m->open = 1; m->match = -1;
    v->openl[v->nopen++] = nmsg++;
}

/* a DONE: the open POST of its handle; a blocking one's (-1), the oldest open of its direction and peer */
static void ev_done(evfile *v, unsigned long long t, int send, int peer, int handle, int result)
{
    int i, found = -1;
    msg *m;
    for (i = 0; i < v->nopen; i++) {
        const msg *o = &msgs[v->openl[i]];
        if (handle >= 0 ? o->handle != handle : (o->handle != -1 || o->send != send || o->peer != peer)) continue;
        if (found < 0 || v->openl[i] < v->openl[found]) found = i;
    }
    if (found < 0) {
        if (handle >= 0) die("%s:%d: a done of handle %d, which no open post holds", v->file, v->line, handle);
        die("%s:%d: a done of a blocking %s %s %d that was never posted", v->file, v->line, send ? "send" : "recv",
            send ? "to" : "from", peer);
    }
    m = &msgs[v->openl[found]];
    if (peer >= 0 && (m->send != send || m->peer != peer))
        die("%s:%d: handle %d done as a %s with peer %d, posted as a %s with peer %d", v->file, v->line, handle,
            send ? "send" : "recv", peer, m->send ? "send" : "recv", m->peer);
    m->done = t;
    m->result = result;
    m->open = 0;
    v->openl[found] = v->openl[--v->nopen];
}

/* a '#' line: "rank R of P" in it must be the file's rank */
static void ev_comment(const evfile *v, const char *s)
{
    const char *at = strstr(s, "rank ");
    long long r = 0;
    int d = 0;
    if (!at) return;
    at += 5;
    while (at[d] >= '0' && at[d] <= '9' && d < 6) r = r * 10 + (at[d++] - '0');
    if (d && !strncmp(at + d, " of ", 4) && r != v->rank)
        die("%s:%d: rank %lld's events beside rank %d's record", v->file, v->line, r, v->rank);
}

/* one event line, past its kind; the time it holds */
static unsigned long long ev_line(evfile *v, const char *kind, char *s, unsigned long long last)
{
    const char *file = v->file;
    int line = v->line, i;
    unsigned long long t = (unsigned long long)keyed(&s, "t", 1, 9223372036854775807ll, file, line);
    uint32_t seq;
    if (t < last) die("%s:%d: t %llu is before the line above's %llu: the events are out of order", file, line, t, last);
    seq = (uint32_t)keyed(&s, "seq", 0, 0xffffffffll, file, line);
    if (!strcmp(kind, "call")) {
        const char *kn = word(&s), *an = word(&s);
        int k, a;
        for (k = 0; k < COLL_KIND_COUNT; k++) if (kn && !strcmp(kn, coll_kind_name((coll_kind)k))) break;
        if (k == COLL_KIND_COUNT) die("%s:%d: no collective '%s'", file, line, kn ? kn : "");
        for (a = 0; a < COLL_ALGO_COUNT; a++) if (an && !strcmp(an, coll_algo_name((coll_algo)a))) break;
        if (a == COLL_ALGO_COUNT) die("%s:%d: no algorithm '%s'", file, line, an ? an : "");
        keyed(&s, "bytes", 0, 9223372036854775807ll, file, line);
    } else if (!strcmp(kind, "end")) {
        keyed(&s, "result", -100000, 100000, file, line);
        for (i = 0; i < v->nopen; i++)                      /* what the call left open ends with it */
            if (msgs[v->openl[i]].seq == seq) {
                msgs[v->openl[i]].done = t;
                v->openl[i--] = v->openl[--v->nopen];
            }
    } else {
        int send, peer, step, handle, result = 0;
        long long bytes = 0;
        step = (int)keyed(&s, "step", 0, 0xffffff, file, line);
        send = direction(&s, file, line);
        peer = (int)keyed(&s, "peer", -1, 0xffff, file, line);
        if (!strcmp(kind, "post")) bytes = keyed(&s, "bytes", 0, 9223372036854775807ll, file, line);
        handle = (int)keyed(&s, "handle", -1, 0x7fffffff, file, line);
        if (!strcmp(kind, "done")) result = (int)keyed(&s, "result", -100000, 100000, file, line);
        if (*s) die("%s:%d: '%.40s' past the line's last field", file, line, s);
        if (!strcmp(kind, "post")) ev_post(v, t, seq, step, send, peer, bytes, handle);
        else ev_done(v, t, send, peer, handle, result);
        return t;
    }
    if (*s) die("%s:%d: '%.40s' past the line's last field", file, line, s);
    return t;
}

/* One rank's events, if its file is there: 1 read, 0 none. */
static int read_events(const char *file, int rank, int comm)
{
    static int openl[MAX_MSG];
    char buf[LINE_MAX_ + 2];
    FILE *f = fopen(file, "r");
    unsigned long long last = 0;
    evfile v;
    int i;
    if (!f) return 0;
    v.file = file; v.line = 0; v.rank = rank; v.comm = comm; v.nopen = 0; v.openl = openl;
    while (get_line(f, buf, file, ++v.line)) {
        char *s = buf;
        const char *kind;
        if (!*s) continue;
        if (s[0] == '#') { ev_comment(&v, s); continue; }
        kind = word(&s);
        if (!strcmp(kind, "lost")) {
            long long k;
            if (!number(word(&s), 0, &k) || *s) die("%s:%d: 'lost' is not followed by a number alone", file, v.line);
            nlost = nlost > 9223372036854775807ll - k ? 9223372036854775807ll : nlost + k;
            fprintf(stderr, "timeline: %s: %lld events lost (the writer's array was full): the rest may be drawn open\n", file, k);
            continue;
        }
        if (strcmp(kind, "call") && strcmp(kind, "end") && strcmp(kind, "post") && strcmp(kind, "done"))
            die("%s:%d: not an event line ('call', 'end', 'post', 'done', 'lost' or a '#' header): %.60s", file, v.line, kind);
        last = ev_line(&v, kind, s, last);
    }
    fclose(f);
    for (i = 0; i < v.nopen; i++) msgs[openl[i]].done = last;   /* never done, its call never ended: to the file's end */
    nevfiles++;
    return 1;
}

/* by communicator, sender, receiver, call, then the order posted (the index) */
static int by_pair(const void *x, const void *y)
{
    const msg *a = &msgs[*(const int *)x], *b = &msgs[*(const int *)y];
    int af = a->send ? a->rank : a->peer, at = a->send ? a->peer : a->rank;
    int bf = b->send ? b->rank : b->peer, bt = b->send ? b->peer : b->rank;
    if (a->comm != b->comm) return a->comm - b->comm;
    if (af != bf) return af - bf;
    if (at != bt) return at - bt;
    if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
    if (a->send != b->send) return b->send - a->send;
    return *(const int *)x - *(const int *)y;
}

/* by communicator, rank, call, step, time posted */
static int by_step(const void *x, const void *y)
{
    const msg *a = &msgs[*(const int *)x], *b = &msgs[*(const int *)y];
    if (a->comm != b->comm) return a->comm - b->comm;
    if (a->rank != b->rank) return a->rank - b->rank;
    if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
    if (a->step != b->step) return a->step - b->step;
    if (a->post != b->post) return a->post < b->post ? -1 : 1;
    return *(const int *)x - *(const int *)y;
}

/* Send k from a to b in call s is receive k from a on b in call s; the
   steps; each message a track of its rank's (the first free one). */
static void link_messages(void)
{
    static int idx[MAX_MSG];
    int i, j, k;
    for (i = 0; i < nmsg; i++) idx[i] = i;
    qsort(idx, (size_t)nmsg, sizeof idx[0], by_pair);
    for (i = 0; i < nmsg; i = j) {                 /* one (comm, from, to, seq): its sends, then its receives */
        const msg *b = &msgs[idx[i]];
        int bf = b->send ? b->rank : b->peer, bt = b->send ? b->peer : b->rank, ns = 0, nr;
        for (j = i; j < nmsg; j++) {
            const msg *m = &msgs[idx[j]];
            if (m->comm != b->comm || (m->send ? m->rank : m->peer) != bf || (m->send ? m->peer : m->rank) != bt ||
                m->seq != b->seq)
                break;
            ns += m->send;
        }
        nr = j - i - ns;
        for (k = 0; k < ns && k < nr; k++) {
            msgs[idx[i + k]].match = idx[i + ns + k];
            msgs[idx[i + ns + k]].match = idx[i + k];
            nmatched++;
        }
    }
    qsort(idx, (size_t)nmsg, sizeof idx[0], by_step);
    for (i = 0; i < nmsg; i++) {
        const msg *m = &msgs[idx[i]];
        stp *s = nsteps ? &steps[nsteps - 1] : 0;
        if (!s || s->comm != m->comm || s->rank != m->rank || s->seq != m->seq || s->step != m->step) {
            if (nsteps == MAX_STEP) die("more than %d steps", MAX_STEP);
            s = &steps[nsteps++];
            memset(s, 0, sizeof *s);
            s->comm = m->comm; s->rank = m->rank; s->seq = m->seq; s->step = m->step; s->from = m->post; s->to = m->done;
        }
        if (m->post < s->from) s->from = m->post;
        if (m->done > s->to) s->to = m->done;
        if (m->send) { s->sends++; s->sbytes += m->bytes; } else { s->recvs++; s->rbytes += m->bytes; }
        s->open |= m->open;
        nopen_msgs += m->open;
    }
    {   /* tracks: by rank, in the order posted, the first whose last message ended */
        static unsigned long long until[MAX_FILES][MAX_TRACKS];
        static int lane_rank[MAX_FILES], lane_comm[MAX_FILES];
        int nl = 0, l;
        for (i = 0; i < nmsg; i++) {
            msg *m = &msgs[idx[i]];
            for (l = 0; l < nl; l++) if (lane_rank[l] == m->rank && lane_comm[l] == m->comm) break;
            if (l == nl) {
                if (nl == MAX_FILES) { m->lane = MAX_TRACKS - 1; continue; }
                lane_rank[nl] = m->rank; lane_comm[nl] = m->comm;
                memset(until[nl], 0, sizeof until[nl]);
                nl++;
            }
            for (k = 0; k < MAX_TRACKS - 1 && until[l][k] > m->post; k++) {}
            m->lane = k;
            if (!until[l][k] && ntracks < MAX_FILES * MAX_TRACKS) {   /* a track's first message (times are >= 1) */
                tracks[ntracks].comm = m->comm; tracks[ntracks].rank = m->rank; tracks[ntracks].lane = k; ntracks++;
            }
            if (m->done > until[l][k]) until[l][k] = m->done;
        }
    }
}

/* the message tracks of rank r: tids after the ranks' own */
static int track_tid(int rank, int lane) { return 100000 + MAX_TRACKS * rank + lane; }
static int msg_tid(const msg *m) { return track_tid(m->rank, m->lane); }

/* a message or step as the page and the trace name it */
static const char *step_name(uint32_t seq, int step, char *b, size_t room)
{
    if (seq == 0) snprintf(b, room, "outside a call");
    else if (step == 0) snprintf(b, room, "call check");
    else snprintf(b, room, "step %d", step);
    return b;
}

static int by_time(const void *x, const void *y)
{
    const ev *a = (const ev *)x, *b = (const ev *)y;
    if (a->comm != b->comm) return a->comm - b->comm;
    if (a->rank != b->rank) return a->rank - b->rank;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static void put_esc(FILE *o, const char *s, int json)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (json && (ch == '"' || ch == '\\')) fprintf(o, "\\%c", ch);
        else if (json && ch < 0x20) fprintf(o, "\\u%04x", ch);
        else if (!json && ch == '<') fputs("&lt;", o);
        else if (!json && ch == '>') fputs("&gt;", o);
        else if (!json && ch == '&') fputs("&amp;", o);
        else if (!json && ch == '"') fputs("&quot;", o);
        else fputc(ch, o);
    }
}

static int failed(const ev *e) { return e->result < 0; }
static int running(const ev *e) { return e->result == COLL_AGAIN; }
static const char *const dtype_names[] = { "int8", "uint8", "int32", "uint32", "int64", "uint64",
                                           "float16", "bfloat16", "float32", "float64" };
static const char *const op_names[] = { "sum", "prod", "min", "max", "avg", "band", "bor", "bxor" };
static const char *dtype_name(int d) { return d < 10 ? dtype_names[d] : "user"; }
static const char *op_name(int o) { return o < 8 ? op_names[o] : "user"; }

static unsigned long long t0, t1;          /* the earliest start, the latest time */
static unsigned long long end_of(const ev *e) { return running(e) || e->end < e->start ? t1 : e->end; }

/* Calls a rank never started: call N of a communicator that other ranks
   recorded, past this rank's last record (before its first one, its ring
   may just have been too short). One entry per (rank, call), from the
   earliest start to the latest end of that call elsewhere. */
typedef struct gap { int rank, comm, kind, algo; uint32_t seq; unsigned long long from, to; } gap;
static gap gaps[1024];
static int ngaps;

static void find_gaps(void)
{
    static int lcomm[MAX_EV], lrank[MAX_EV];
    static uint32_t llast[MAX_EV];
    int i, j, g, nl = 0;
    for (i = 0; i < nev; i++) {               /* the lanes (evs is sorted by communicator, rank) */
        if (!nl || lcomm[nl - 1] != evs[i].comm || lrank[nl - 1] != evs[i].rank) {
            lcomm[nl] = evs[i].comm; lrank[nl] = evs[i].rank; llast[nl] = 0; nl++;
        }
        if (evs[i].seq > llast[nl - 1]) llast[nl - 1] = evs[i].seq;
    }
    for (i = 0; i < nev; i++) {
        const ev *e = &evs[i];
        for (j = 0; j < nl; j++) {
            if (lcomm[j] != e->comm || e->seq <= llast[j]) continue;
            for (g = ngaps - 1; g >= 0; g--)
                if (gaps[g].rank == lrank[j] && gaps[g].comm == lcomm[j] && gaps[g].seq == e->seq) break;
            if (g < 0) {
                if (ngaps == (int)(sizeof gaps / sizeof gaps[0])) return;
                g = ngaps++;
                gaps[g].rank = lrank[j]; gaps[g].comm = lcomm[j]; gaps[g].seq = e->seq;
                gaps[g].kind = (int)e->kind; gaps[g].algo = (int)e->algo;
                gaps[g].from = e->start; gaps[g].to = end_of(e);
            }
            if (e->start < gaps[g].from) gaps[g].from = e->start;
            if (end_of(e) > gaps[g].to) gaps[g].to = end_of(e);
        }
    }
}

static void write_json(FILE *o, char **files, int nfiles)
{
    int i, r, c, lastr = -1, lastc = -1;
    fprintf(o, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool\":\"coll tools/timeline\","
               "\"clock\":\"the records' and the events' own times (CLOCK_MONOTONIC ns, shared by the ranks of one host), minus the earliest\","
               "\"t0_ns\":%llu,\"event_files\":%d,\"messages\":%d,\"steps\":%d,\"matched\":%d,\"open_messages\":%d,"
               "\"lost_events\":%lld,\"files\":[", t0, nevfiles, nmsg, nsteps, nmatched, nopen_msgs, nlost);
    for (i = 0; i < nfiles; i++) { fprintf(o, "%s\"", i ? "," : ""); put_esc(o, files[i], 1); fprintf(o, "\""); }
    fprintf(o, "]},\n\"traceEvents\":[\n");
    for (c = 0; c < ncomms; c++) {
        fprintf(o, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"", c + 1);
        put_esc(o, comms[c][0] ? comms[c] : "coll job", 1);
        fprintf(o, "\"}},\n");
    }
    for (i = 0; i < nev; i++) {
        const ev *e = &evs[i];
        if (e->comm != lastc || e->rank != lastr) {
            fprintf(o, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"rank %d\"}},\n",
                    e->comm + 1, e->rank, e->rank);
            lastc = e->comm; lastr = e->rank;
        }
    }
    lastc = lastr = -1;
    for (i = 0; i < nev; i++) {
        const ev *e = &evs[i];
        if (e->comm != lastc || e->rank != lastr)
            fprintf(o, "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"sort_index\":%d}},\n",
                    e->comm + 1, e->rank, e->rank * (MAX_TRACKS + 1));
        lastc = e->comm; lastr = e->rank;
    }
    for (i = 0; i < ntracks; i++) {          /* each rank's message tracks, right below it */
        const struct track *k = &tracks[i];
        fprintf(o, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"rank %d messages %d\"}},\n"
                   "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"sort_index\":%d}},\n",
                k->comm + 1, track_tid(k->rank, k->lane), k->rank, k->lane + 1, k->comm + 1, track_tid(k->rank, k->lane),
                k->rank * (MAX_TRACKS + 1) + 1 + k->lane);
    }
    for (i = 0; i < nev; i++) {
        const ev *e = &evs[i];
        fprintf(o, "{\"name\":\"%s/%s\",\"cat\":\"coll\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,%s"
                   "\"args\":{\"call\":%u,\"bytes\":%lld,\"dtype\":\"%s\",\"op\":\"%s\",\"root\":%d,\"step\":%d,\"peer\":%d,"
                   "\"result\":%d,\"result_text\":\"",
                coll_kind_name(e->kind), coll_algo_name(e->algo), e->comm + 1, e->rank, (double)(e->start - t0) / 1000.0,
                (double)(end_of(e) - e->start) / 1000.0, failed(e) ? "\"cname\":\"terrible\"," : running(e) ? "\"cname\":\"bad\"," : "",
                (unsigned)e->seq, e->bytes, dtype_name(e->dtype), op_name(e->op), e->root, e->step, e->peer, e->result);
        put_esc(o, e->text, 1);
        fprintf(o, "\",\"failed\":%s,\"in_progress\":%s}}%s\n", failed(e) ? "true" : "false", running(e) ? "true" : "false",
                i + 1 < nev ? "," : "");
    }
    for (i = 0; i < nsteps; i++) {           /* each step: from its first post to its last done */
        const stp *st = &steps[i];
        char nm[32];
        fprintf(o, ",{\"name\":\"%s\",\"cat\":\"step\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,%s"
                   "\"args\":{\"call\":%u,\"step\":%d,\"sends\":%d,\"send_bytes\":%lld,\"recvs\":%d,\"recv_bytes\":%lld,"
                   "\"open\":%s}}\n",
                step_name(st->seq, st->step, nm, sizeof nm), st->comm + 1, st->rank, (double)(st->from - t0) / 1000.0,
                (double)(st->to - st->from) / 1000.0, st->open ? "\"cname\":\"bad\"," : "", (unsigned)st->seq, st->step,
                st->sends, st->sbytes, st->recvs, st->rbytes, st->open ? "true" : "false");
    }
    for (i = 0; i < nmsg; i++) {             /* each message on its rank's tracks */
        const msg *m = &msgs[i];
        fprintf(o, ",{\"name\":\"%s %s %d, %lld B\",\"cat\":\"msg\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,%s"
                   "\"args\":{\"rank\":%d,\"call\":%u,\"step\":%d,\"send\":%s,\"peer\":%d,\"bytes\":%lld,\"handle\":%d,"
                   "\"result\":%d,\"open\":%s,\"match\":%d,\"flow\":%d}}\n",
                m->send ? "send" : "recv", m->send ? "to" : "from", m->peer, m->bytes, m->comm + 1, msg_tid(m),
                (double)(m->post - t0) / 1000.0, (double)(m->done - m->post) / 1000.0,
                m->open ? "\"cname\":\"bad\"," : m->result < 0 ? "\"cname\":\"terrible\"," : "", m->rank, (unsigned)m->seq,
                m->step, m->send ? "true" : "false", m->peer, m->bytes, m->handle, m->result, m->open ? "true" : "false",
                m->match, m->match < 0 ? 0 : m->send ? i + 1 : m->match + 1);
    }
    for (i = 0; i < nmsg; i++) {             /* a send's arrow: from its post to its receive's done (1 ns inside that slice) */
        const msg *m = &msgs[i], *q;
        unsigned long long at;
        if (!m->send || m->match < 0) continue;
        q = &msgs[m->match];
        at = q->done > q->post + 1 ? q->done - 1 : q->done;
        fprintf(o, ",{\"name\":\"message\",\"cat\":\"msg\",\"ph\":\"s\",\"id\":%d,\"pid\":%d,\"tid\":%d,\"ts\":%.3f}\n"
                   ",{\"name\":\"message\",\"cat\":\"msg\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%d,\"pid\":%d,\"tid\":%d,\"ts\":%.3f}\n",
                i + 1, m->comm + 1, msg_tid(m), (double)(m->post - t0) / 1000.0, i + 1, q->comm + 1, msg_tid(q),
                (double)(at - t0) / 1000.0);
    }
    for (r = 0; r < ngaps; r++) {
        const gap *g = &gaps[r];
        fprintf(o, ",{\"name\":\"never started: %s/%s call %u\",\"cat\":\"coll\",\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,"
                   "\"tid\":%d,\"ts\":%.3f,\"cname\":\"terrible\",\"args\":{\"call\":%u,\"never_started\":true}}\n",
                coll_kind_name((coll_kind)g->kind), coll_algo_name((coll_algo)g->algo), (unsigned)g->seq, g->comm + 1, g->rank,
                (double)(g->from - t0) / 1000.0, (unsigned)g->seq);
    }
    fprintf(o, "]}\n");
}

/* the smallest 1-2-5 step that leaves at most 7 ticks on span, in ns */
static double tick_of(double span)
{
    double s = 1;
    while (s * 10 < span / 7) s *= 10;
    if (s >= span / 7) return s;
    if (s * 2 >= span / 7) return s * 2;
    if (s * 5 >= span / 7) return s * 5;
    return s * 10;
}

static void put_time(FILE *o, double ns)
{
    if (ns >= 1e9 || ns <= -1e9) fprintf(o, "%g s", ns / 1e9);
    else if (ns >= 1e6 || ns <= -1e6) fprintf(o, "%g ms", ns / 1e6);
    else if (ns >= 1e3 || ns <= -1e3) fprintf(o, "%g µs", ns / 1e3);
    else fprintf(o, "%g ns", ns);
}

static const char *const fills[] = { "#2166ac", "#4393c3", "#1b7837", "#5aae61", "#762a83", "#9970ab", "#8c510a", "#35978f" };

enum { L = 110, W = 560, LANE0 = 30, LANE1 = 60, TOPM = 34 };
static int LANE = LANE0;             /* a lane's height: LANE1 with messages to draw */

/* the lane of (comm, rank) on the page, or -1 */
static int page_lanes, page_lane_comm[MAX_EV], page_lane_rank[MAX_EV];
static int lane_at(int comm, int rank)
{
    int lo = 0, hi = page_lanes - 1;
    while (lo <= hi) {                    /* the lanes are in evs' order: by communicator, rank */
        int mid = (lo + hi) / 2;
        int d = page_lane_comm[mid] != comm ? page_lane_comm[mid] - comm : page_lane_rank[mid] - rank;
        if (!d) return mid;
        if (d < 0) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
}

/* x and width on the page of [a, b], clipped to [from, to]; 0 if outside */
static int place(unsigned long long a, unsigned long long b, unsigned long long from, unsigned long long to, double span,
                 double min_w, double *x, double *w)
{
    if (a > to || b < from) return 0;
    if (a < from) a = from;
    if (b > to) b = to;
    *x = L + (double)(a - from) / span * W;
    *w = b > a ? (double)(b - a) / span * W : 0;
    if (*w < min_w) *w = min_w;
    return 1;
}

/* Inside each call box: its steps (a lighter box from the first post to
   the last done) and in them its messages, sends above receives; in the
   close view of one call (cls "ccall") each send's arrow to its receive's
   done on the peer. */
static int zoom_comm = -1;
static uint32_t zoom_seq;              /* the close view's call: only its steps and messages */
static void messages_svg(FILE *o, const char *cls, unsigned long long from, unsigned long long to, double span)
{
    const char *pre = cls[0] == 'z' ? "z" : cls[1] == 'c' ? "c" : "";
    int i;
    double x, w;
    char nm[32];
    for (i = 0; i < nsteps; i++) {
        const stp *st = &steps[i];
        int lane = lane_at(st->comm, st->rank), y;
        if (pre[0] == 'c' && (st->comm != zoom_comm || st->seq != zoom_seq)) continue;
        if (lane < 0 || !place(st->from, st->to, from, to, span, 0.5, &x, &w)) continue;
        y = TOPM + lane * LANE + 17;
        fprintf(o, "<rect class=\"%sstep%s\" data-rank=\"%d\" data-call=\"%u\" data-step=\"%d\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" "
                   "height=\"%d\" fill=\"#fff\" fill-opacity=\"0.35\" stroke=\"#fff\" stroke-width=\"0.6\"><title>rank %d, call %u, %s: "
                   "%d sends (%lld bytes), %d receives (%lld bytes), ", pre, st->open ? " open" : "", st->rank, (unsigned)st->seq,
                st->step, x, y, w, LANE - 22, st->rank, (unsigned)st->seq, step_name(st->seq, st->step, nm, sizeof nm), st->sends,
                st->sbytes, st->recvs, st->rbytes);
        put_time(o, (double)(st->from - t0));
        fprintf(o, " + ");
        put_time(o, (double)(st->to - st->from));
        fprintf(o, "%s</title></rect>\n", st->open ? ", a message never done" : "");
        if (w > 34) fprintf(o, "<text x=\"%.1f\" y=\"%d\" font-size=\"8\" fill=\"#fff\" text-anchor=\"end\" "
                            "pointer-events=\"none\">%s</text>\n", x + w - 2,
                            y - 2, st->seq && st->step ? nm + 5 : st->seq ? "check" : "-");
    }
    for (i = 0; i < nmsg && (pre[0] == 'c' || nmsg <= PAGE_MSGS); i++) {   /* too many: the close view's alone */
        const msg *m = &msgs[i];
        int lane = lane_at(m->comm, m->rank), y;
        if (pre[0] == 'c' && (m->comm != zoom_comm || m->seq != zoom_seq)) continue;
        if (lane < 0 || !place(m->post, m->done, from, to, span, 0.5, &x, &w)) continue;
        y = TOPM + lane * LANE + (m->send ? 21 : 38);
        fprintf(o, "<rect class=\"%smsg %s%s\" data-rank=\"%d\" data-call=\"%u\" data-step=\"%d\" data-peer=\"%d\" data-bytes=\"%lld\" "
                   "x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"14\" fill=\"%s\" stroke=\"%s\"%s><title>rank %d, call %u, %s: %s "
                   "rank %d, %lld bytes, handle %d, ", pre, m->send ? "send" : "recv", m->open ? " open" : "", m->rank,
                (unsigned)m->seq, m->step, m->peer, m->bytes, x, y, w, m->send ? "#fdb863" : "#80cdc1",
                m->open ? "#ff7f0e" : m->result < 0 ? "#d62728" : "#fff", m->open ? " stroke-dasharray=\"3 2\"" : "", m->rank,
                (unsigned)m->seq, step_name(m->seq, m->step, nm, sizeof nm), m->send ? "send to" : "receive from", m->peer,
                m->bytes, m->handle);
        put_time(o, (double)(m->post - t0));
        fprintf(o, " + ");
        put_time(o, (double)(m->done - m->post));
        if (m->open) fprintf(o, ", open: posted, never done");
        else fprintf(o, ", result %d", m->result);
        fprintf(o, "%s</title></rect>\n", m->match < 0 ? ", no matching message on the peer" : "");
        if (w > 46) fprintf(o, "<text x=\"%.1f\" y=\"%d\" font-size=\"9\" fill=\"#222\" pointer-events=\"none\">%s%d %lld B</text>\n",
                            x + 2, y + 10, m->send ? "\xe2\x86\x92" : "\xe2\x86\x90", m->peer, m->bytes);
    }
    if (!strcmp(pre, "c"))
        for (i = 0; i < nmsg; i++) {
            const msg *m = &msgs[i], *q;
            int la, lb;
            double x2, w2;
            if (!m->send || m->match < 0 || m->comm != zoom_comm || m->seq != zoom_seq) continue;
            q = &msgs[m->match];
            la = lane_at(m->comm, m->rank); lb = lane_at(q->comm, q->rank);
            if (la < 0 || lb < 0 || m->post < from || q->done > to || !place(m->post, m->post, from, to, span, 0, &x, &w) ||
                !place(q->done, q->done, from, to, span, 0, &x2, &w2))
                continue;
            fprintf(o, "<line class=\"cflow\" data-from=\"%d\" data-to=\"%d\" data-call=\"%u\" x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
                       "stroke=\"#333\" stroke-width=\"0.8\" stroke-opacity=\"0.7\"/>"
                       "<circle cx=\"%.2f\" cy=\"%d\" r=\"1.6\" fill=\"#333\"/>\n",
                    m->rank, q->rank, (unsigned)m->seq, x, TOPM + la * LANE + 28, x2, TOPM + lb * LANE + 45, x2, TOPM + lb * LANE + 45);
        }
}

/* the lanes from `from` to `to` (ns of the records' clock) as one SVG */
static void lanes_svg(FILE *o, const char *id, const char *cls, unsigned long long from, unsigned long long to, const int *lane_of, int lanes)
{
    int i, c;
    double span = to > from ? (double)(to - from) : 1, tick;
    fprintf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"%s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"DejaVu Sans, Arial, sans-serif\">\n<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n",
            id, L + W + 20, TOPM + lanes * LANE + 20, L + W + 20, TOPM + lanes * LANE + 20, L + W + 20, TOPM + lanes * LANE + 20);
    tick = tick_of(span);
    for (c = 0; c * tick <= span; c++) {
        double x = L + c * tick / span * W;
        fprintf(o, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%d\" font-size=\"10\" "
                   "text-anchor=\"middle\" fill=\"#555\">", x, TOPM - 6, x, TOPM + lanes * LANE, x, TOPM - 10);
        put_time(o, c * tick);
        fprintf(o, "</text>\n");
    }
    for (i = 0; i < nev; i++) {
        if (i == 0 || lane_of[i] != lane_of[i - 1]) {
            int y = TOPM + lane_of[i] * LANE;
            fprintf(o, "<rect x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>"
                       "<text x=\"6\" y=\"%d\" font-size=\"12\">rank %d", y, L + W + 20, LANE, lane_of[i] % 2 ? "#f6f6f6" : "#fff",
                    y + LANE / 2 + 4, evs[i].rank);
            if (ncomms > 1) { fprintf(o, " · "); put_esc(o, comms[evs[i].comm][0] ? comms[evs[i].comm] : "job", 0); }
            fprintf(o, "</text>\n");
        }
    }
    for (i = 0; i < nev; i++) {
        const ev *e = &evs[i];
        unsigned long long end = end_of(e) < to ? end_of(e) : to, st = e->start > from ? e->start : from;
        double x = L + (double)(st - from) / span * W, w = end > st ? (double)(end - st) / span * W : 0;
        int y = TOPM + lane_of[i] * LANE + 5;
        const char *fill = failed(e) ? "#d62728" : running(e) ? "#ff7f0e" : fills[((int)e->kind * 3 + (int)e->algo) % 8];
        if (e->start > to || end_of(e) < from) continue;
        if (w < 2) w = 2;
        fprintf(o, "<rect class=\"%s%s\" data-rank=\"%d\" data-call=\"%u\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
                   "fill=\"%s\" stroke=\"%s\"><title>rank %d, call %u: %s/%s, %lld bytes %s, ", cls, failed(e) ? " failed" : "",
                e->rank, (unsigned)e->seq, x, y, w, LANE - 10, fill, failed(e) ? "#67000d" : "#fff", e->rank, (unsigned)e->seq,
                coll_kind_name(e->kind), coll_algo_name(e->algo), e->bytes, dtype_name(e->dtype));
        put_time(o, (double)(e->start - t0));
        fprintf(o, " + ");
        put_time(o, (double)(end_of(e) - e->start));
        fprintf(o, ", step %d, peer %d, result %d ", e->step, e->peer, e->result);
        put_esc(o, e->text, 0);
        fprintf(o, "</title></rect>\n");
        if (w > 26) fprintf(o, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" fill=\"#fff\" pointer-events=\"none\">%u%s</text>\n",
                            x + 3, LANE == LANE0 ? y + LANE / 2 + 1 : y + 10, (unsigned)e->seq, end < end_of(e) ? " \xe2\x80\xa6" : "");
    }
    if (LANE == LANE1) messages_svg(o, cls, from, to, span);
    for (i = 0; i < ngaps; i++) {
        const gap *g = &gaps[i];
        int lane = -1, j;
        unsigned long long end = g->to < to ? g->to : to;
        unsigned long long st = g->from > from ? g->from : from;
        double x = L + (double)(st - from) / span * W, w = end > st ? (double)(end - st) / span * W : 0;
        for (j = 0; j < nev && lane < 0; j++) if (evs[j].comm == g->comm && evs[j].rank == g->rank) lane = lane_of[j];
        if (lane < 0 || g->from > to || g->to < from) continue;
        if (w < 2) w = 2;
        fprintf(o, "<rect class=\"%s\" data-rank=\"%d\" data-call=\"%u\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
                   "fill=\"none\" stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"><title>rank %d never started call %u "
                   "(%s/%s), which the other ranks ran</title></rect>\n", cls[0] == 'z' ? "zmissing" : cls[1] == 'c' ? "cmissing" : "missing", g->rank,
                (unsigned)g->seq, x, TOPM + lane * LANE + 5, w,
                LANE - 10, g->rank, (unsigned)g->seq, coll_kind_name((coll_kind)g->kind), coll_algo_name((coll_algo)g->algo));
        fprintf(o, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" fill=\"#d62728\">%s</text>\n", x + 4,
                TOPM + lane * LANE + LANE / 2 + 4, w > 80 ? "never started" : "\xe2\x9c\x97");
    }
    fprintf(o, "</svg>\n");
}

static void write_html(FILE *o, const char *title)
{
    int i, nfail = 0, nrun = 0, lanes = 0, pairs = 0;
    static int lane_of[MAX_EV];
    int pair_kind[4], pair_algo[4], pair_p[4];
    /* lanes: one per (communicator, rank), in order */
    LANE = nmsg ? LANE1 : LANE0;
    for (i = 0; i < nev; i++) {
        if (i == 0 || evs[i].comm != evs[i - 1].comm || evs[i].rank != evs[i - 1].rank) {
            page_lane_comm[lanes] = evs[i].comm; page_lane_rank[lanes] = evs[i].rank;
            lanes++;
        }
        lane_of[i] = lanes - 1;
        nfail += failed(&evs[i]);
        nrun += running(&evs[i]);
    }
    page_lanes = lanes;
    fprintf(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>");
    put_esc(o, title, 0);
    fprintf(o, "</title>\n<style>\nbody{font-family:DejaVu Sans,Arial,sans-serif;margin:1em;color:#222}\n"
               ".row{display:flex;flex-wrap:nowrap;gap:18px;align-items:flex-start}\n"
               ".box{border:1px solid #ddd;padding:6px;background:#fff}\n"
               "table{border-collapse:collapse;font-size:small}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}\n"
               "tr.failed td{color:#b2182b}#status{color:#555;font-size:small}\n</style></head><body>\n<h1>");
    put_esc(o, title, 0);
    fprintf(o, "</h1>\n<p id=\"status\" data-events=\"%d\" data-failed=\"%d\" data-lanes=\"%d\" data-missing=\"%d\">"
               "%d calls on %d lanes, %d failed, %d still running when dumped, %d never started by a rank that others waited for. Times: the flight recorder's own start and end of each call, "
               "nanoseconds of CLOCK_MONOTONIC (shared by the ranks of one host), from the earliest start.</p>\n",
            nev, nfail, lanes, ngaps, nev, lanes, nfail, nrun, ngaps);
    if (nevfiles)
        fprintf(o, "<p id=\"messages\" data-steps=\"%d\" data-msgs=\"%d\" data-open=\"%d\" data-matched=\"%d\" "
                   "style=\"color:#555;font-size:small\">From the observer's events (%d files): %d messages in %d steps, %d sends "
                   "matched to their receives, %d never done (open)%s.</p>\n",
                nsteps, nmsg, nopen_msgs, nmatched, nevfiles, nmsg, nsteps, nmatched, nopen_msgs,
                nlost ? ", some events lost (the writer's array was full)" :
                nmsg > PAGE_MSGS ? "; so many that only the close view draws them (trace.json holds all)" : "");
    else
        fprintf(o, "<p id=\"messages\" data-steps=\"0\" data-msgs=\"0\" style=\"color:#555;font-size:small\">No observer events "
                   "(RANK.events beside each RANK.txt): the calls only.</p>\n");
    fprintf(o, "<div class=\"row\">\n<div class=\"box\"><h2>What ran</h2>\n");
    for (i = 0; i < nev; i++) {                /* the schedules to draw: each (collective, algorithm) seen */
        const ev *e = &evs[i];
        int pk;
        for (pk = 0; pk < pairs; pk++) if (pair_kind[pk] == (int)e->kind && pair_algo[pk] == (int)e->algo) break;
        if (pk == pairs && pairs < 4) {
            int pmax = 0, j;
            for (j = 0; j < nev; j++) if (evs[j].comm == e->comm && evs[j].rank + 1 > pmax) pmax = evs[j].rank + 1;
            pair_kind[pairs] = (int)e->kind; pair_algo[pairs] = (int)e->algo; pair_p[pairs] = pmax; pairs++;
        }
    }
    lanes_svg(o, "lanes", "call", t0, t1, lane_of, lanes);
    {   /* a call far longer than the rest (a failure's wait) squeezes them:
           the time before the last call began, again */
        unsigned long long last = t0;
        for (i = 0; i < nev; i++) if (evs[i].start > last) last = evs[i].start;
        last += (last - t0) / 20 + 1;
        if (last - t0 < (t1 - t0) / 4) {
            fprintf(o, "<p style=\"font-size:small\">Up to the last call's start, closer:</p>\n");
            lanes_svg(o, "zoom", "zcall", t0, last, lane_of, lanes);
        }
    }
    if (nsteps) {   /* one call, closer: the shortest that has messages, over all ranks */
        int best = -1, j;
        unsigned long long from = 0, to = 0;
        for (i = 0; i < nev; i++) {
            int lo = 0, hi = nsteps - 1, has = 0;
            const ev *e = &evs[i];
            while (lo <= hi && !has) {    /* steps are by communicator, rank, call */
                int mid = (lo + hi) / 2;
                const stp *st = &steps[mid];
                int d = st->comm != e->comm ? st->comm - e->comm : st->rank != e->rank ? st->rank - e->rank
                      : st->seq != e->seq ? (st->seq < e->seq ? -1 : 1) : 0;
                if (!d) has = 1;
                else if (d < 0) lo = mid + 1; else hi = mid - 1;
            }
            if (has && !running(e) && (best < 0 || end_of(e) - e->start < end_of(&evs[best]) - evs[best].start)) best = i;
        }
        if (best >= 0) {
            from = evs[best].start; to = end_of(&evs[best]);
            zoom_comm = evs[best].comm; zoom_seq = evs[best].seq;
            for (j = 0; j < nev; j++)
                if (evs[j].comm == evs[best].comm && evs[j].seq == evs[best].seq) {
                    if (evs[j].start < from) from = evs[j].start;
                    if (end_of(&evs[j]) > to) to = end_of(&evs[j]);
                }
            fprintf(o, "<p style=\"font-size:small\">Call %u, closer: each step inside its call, each message inside its step "
                       "(sends above, receives below), a line from each send's post to its receive's done on the peer:</p>\n",
                    (unsigned)evs[best].seq);
            lanes_svg(o, "callzoom", "ccall", from, to + (to - from) / 50 + 1, lane_of, lanes);
        }
    }
    fprintf(o, "<p style=\"font-size:small;color:#555;max-width:%dpx\">Each box is one call on one rank, from its start to its end "
               "(hover: its record); <span style=\"color:#d62728\">red: it failed</span>, "
               "<span style=\"color:#ff7f0e\">orange: still running when dumped</span>, "
               "dashed red: a call this rank never started while the others ran it. "
               "Inside a call (with the observer's events): a lighter box per schedule step (hover: its sends and receives), "
               "and in it each message, <span style=\"color:#c47f1c\">sends</span> above "
               "<span style=\"color:#35978f\">receives</span> (hover: the peer, bytes, handle, times), dashed orange if never done; "
               "step K is the schedule's K-th (the diagram's column K - 1), the call check's rounds before it. "
               "The same figures as trace.json (load it in Perfetto or chrome://tracing).</p>\n</div>\n", L + W + 20);
    fprintf(o, "<div class=\"box\"><h2>The schedule</h2>\n");
    for (i = 0; i < pairs; i++) {
        FILE *t = tmpfile();
        int ch, ok = 0;
        fprintf(o, "<figure class=\"schedule\" data-diagram=\"%s-%s-p%d\">\n", coll_kind_name((coll_kind)pair_kind[i]),
                coll_algo_name((coll_algo)pair_algo[i]), pair_p[i]);
        if (t && pair_p[i] <= SIM_MAX_RANKS && pair_algo[i] != COLL_ALGO_AUTO &&
            coll__entry_of((coll_kind)pair_kind[i], (coll_algo)pair_algo[i]) &&
            draw(t, (coll_kind)pair_kind[i], (coll_algo)pair_algo[i], pair_p[i]) == 0) {
            rewind(t);
            while ((ch = fgetc(t)) != EOF) fputc(ch, o);
            ok = 1;
        }
        if (!ok) fprintf(o, "<p class=\"nodiagram\">No diagram of %s/%s at p = %d (tools/diagrams.c draws up to %d ranks).</p>\n",
                         coll_kind_name((coll_kind)pair_kind[i]), coll_algo_name((coll_algo)pair_algo[i]), pair_p[i], SIM_MAX_RANKS);
        fprintf(o, "<figcaption style=\"font-size:small;color:#555\">%s/%s at p = %d, as make diagrams draws it: ranks are lanes, "
                   "steps columns, each message an arrow (red: reduced, blue: copied).</figcaption></figure>\n",
                coll_kind_name((coll_kind)pair_kind[i]), coll_algo_name((coll_algo)pair_algo[i]), pair_p[i]);
        if (t) fclose(t);
    }
    fprintf(o, "</div>\n</div>\n");
    if (ngaps) {
        fprintf(o, "<h2>Calls never started</h2>\n<table id=\"missing\"><tr><th>rank</th><th>call</th><th>what</th></tr>\n");
        for (i = 0; i < ngaps; i++)
            fprintf(o, "<tr class=\"failed\"><td>%d</td><td>%u</td><td>%s/%s: the other ranks started it, this rank's record ends before it</td></tr>\n",
                    gaps[i].rank, (unsigned)gaps[i].seq, coll_kind_name((coll_kind)gaps[i].kind), coll_algo_name((coll_algo)gaps[i].algo));
        fprintf(o, "</table>\n");
    }
    if (nfail + nrun) {
        fprintf(o, "<h2>Calls that failed</h2>\n<table id=\"failures\"><tr><th>rank</th><th>call</th><th>what</th><th>step reached</th>"
                   "<th>peer waited for</th><th>result</th><th>after</th></tr>\n");
        for (i = 0; i < nev; i++) {
            const ev *e = &evs[i];
            if (!failed(e) && !running(e)) continue;
            fprintf(o, "<tr class=\"failed\"><td>%d</td><td>%u</td><td>%s/%s</td><td>%d</td><td>%d</td><td>%d ", e->rank,
                    (unsigned)e->seq, coll_kind_name(e->kind), coll_algo_name(e->algo), e->step, e->peer, e->result);
            put_esc(o, e->text, 0);
            fprintf(o, "</td><td>");
            put_time(o, (double)(end_of(e) - e->start));
            fprintf(o, "</td></tr>\n");
        }
        fprintf(o, "</table>\n");
    }
    /* the page counts what it drew once loaded, and says so */
    fprintf(o, "<script>\nwindow.addEventListener('load', function () {\n"
               "  var boxes = document.querySelectorAll('#lanes rect.call'), bad = 0;\n"
               "  for (var i = 0; i < boxes.length; i++) if (!(boxes[i].getBBox().width > 0)) bad++;\n"
               "  var figs = document.querySelectorAll('figure.schedule svg'), drawn = 0;\n"
               "  for (var j = 0; j < figs.length; j++) if (figs[j].getBBox().width > 0) drawn++;\n"
               "  var s = document.getElementById('status');\n"
               "  s.setAttribute('data-drawn', boxes.length - bad);\n"
               "  s.setAttribute('data-drawn-failed', document.querySelectorAll('#lanes rect.call.failed').length);\n"
               "  s.setAttribute('data-diagrams', drawn);\n"
               "  var parts = ['step', 'msg'], names = ['data-drawn-steps', 'data-drawn-msgs'];\n"
               "  for (var p = 0; p < 2; p++) {\n"
               "    var r = document.querySelectorAll('#lanes rect.' + parts[p]), n = 0;\n"
               "    for (var k = 0; k < r.length; k++) if (r[k].getBBox().width > 0) n++;\n"
               "    s.setAttribute(names[p], n);\n"
               "  }\n"
               "  s.setAttribute('data-drawn-flows', document.querySelectorAll('#callzoom line.cflow').length);\n"
               "  if (bad) console.error(bad + ' call boxes not drawn');\n"
               "});\n</script>\n</body></html>\n");
}

static FILE *create(const char *dir, const char *name, char *path, size_t room)
{
    FILE *f;
    snprintf(path, room, "%s/%s", dir, name);
    if (!(f = fopen(path, "w"))) die("cannot write %s", path);
    return f;
}

int main(int argc, char **argv)
{
    const char *dir = ".", *title = 0;
    char *files[MAX_FILES], path[4096], auto_title[256];
    int nfiles = 0, i, j, ranks_seen[MAX_FILES];
    FILE *f;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) title = argv[++i];
        else if (argv[i][0] == '-') die("unknown option %s\n  usage: timeline [-o DIR] [-t TITLE] RANK0.txt RANK1.txt ...", argv[i]);
        else if (nfiles == MAX_FILES) die("more than %d files", MAX_FILES);
        else files[nfiles++] = argv[i];
    }
    if (!nfiles) die("no files\n  usage: timeline [-o DIR] [-t TITLE] RANK0.txt RANK1.txt ...  (one coll_dump file per rank)");
    for (i = 0; i < nfiles; i++) {
        int first = nev;
        ranks_seen[i] = read_file(files[i], i);
        for (j = 0; j < i; j++)
            if (ranks_seen[j] == ranks_seen[i]) die("%s and %s are both rank %d", files[j], files[i], ranks_seen[i]);
        if (nev == first) fprintf(stderr, "timeline: %s holds no calls\n", files[i]);
        {   /* its observer's events, beside it: X.txt's in X.events, else FILE.events */
            size_t n = strlen(files[i]);
            if (n > 4 && !strcmp(files[i] + n - 4, ".txt")) snprintf(path, sizeof path, "%.*s.events", (int)(n - 4), files[i]);
            else snprintf(path, sizeof path, "%s.events", files[i]);
            read_events(path, ranks_seen[i], nev > first ? evs[first].comm : comm_of("", path, 0));
        }
    }
    if (!nev) die("no calls in any file");
    qsort(evs, (size_t)nev, sizeof evs[0], by_time);
    t0 = evs[0].start; t1 = 0;
    for (i = 0; i < nev; i++) {
        if (evs[i].start < t0) t0 = evs[i].start;
        if (evs[i].start > t1) t1 = evs[i].start;
        if (!running(&evs[i]) && evs[i].end > t1) t1 = evs[i].end;
    }
    for (i = 0; i < nmsg; i++) {             /* an open message ends with its call's record, if that ended */
        int j;
        for (j = 0; j < nev && msgs[i].open; j++)
            if (evs[j].rank == msgs[i].rank && evs[j].comm == msgs[i].comm && evs[j].seq == msgs[i].seq && !running(&evs[j]) &&
                evs[j].end >= msgs[i].post && evs[j].end < msgs[i].done)
                msgs[i].done = evs[j].end;
    }
    for (i = 0; i < nmsg; i++) {
        if (msgs[i].post < t0) t0 = msgs[i].post;
        if (msgs[i].done > t1) t1 = msgs[i].done;
    }
    link_messages();
    if (!title) {
        snprintf(auto_title, sizeof auto_title, "coll timeline: %s/%s, %d ranks", coll_kind_name(evs[0].kind),
                 coll_algo_name(evs[0].algo), nfiles);
        title = auto_title;
    }
    find_gaps();
    f = create(dir, "trace.json", path, sizeof path);
    write_json(f, files, nfiles);
    if (fclose(f) != 0) die("cannot write %s", path);
    printf("timeline: %d calls of %d ranks", nev, nfiles);
    if (nevfiles) printf(", %d messages in %d steps (%d matched, %d open) from %d event files", nmsg, nsteps, nmatched, nopen_msgs, nevfiles);
    printf(" -> %s\n", path);
    f = create(dir, "index.html", path, sizeof path);
    write_html(f, title);
    if (fclose(f) != 0) die("cannot write %s", path);
    printf("open %s\n", path);
    (void)diagrams_main;
    return 0;
}
