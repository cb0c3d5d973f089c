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
   algorithm seen (at most four) at the communicator's number of ranks. */
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
    while (fgets(buf, sizeof buf, f)) {
        size_t n = strlen(buf);
        char *s = buf, *at;
        line++;
        if (n && buf[n - 1] == '\n') buf[--n] = 0;
        else if (!feof(f)) die("%s:%d: a line over %d characters", file, line, LINE_MAX_);
        if (n && buf[n - 1] == '\r') buf[--n] = 0;
        if (memchr(buf, 0, n) != NULL || strlen(buf) != n) die("%s:%d: a NUL byte in the line", file, line);
        if (n == 0) continue;
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
               "\"clock\":\"the records' own times (CLOCK_MONOTONIC ns, shared by the ranks of one host), minus the earliest start\","
               "\"t0_ns\":%llu,\"files\":[", t0);
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

enum { L = 110, W = 560, LANE = 30, TOPM = 34 };

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
        unsigned long long end = end_of(e) < to ? end_of(e) : to;
        double x = L + (double)(e->start - from) / span * W, w = (double)(end - e->start) / span * W;
        int y = TOPM + lane_of[i] * LANE + 5;
        const char *fill = failed(e) ? "#d62728" : running(e) ? "#ff7f0e" : fills[((int)e->kind * 3 + (int)e->algo) % 8];
        if (e->start > to) continue;
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
                            x + 3, y + LANE / 2 + 1, (unsigned)e->seq, end < end_of(e) ? " \xe2\x80\xa6" : "");
    }
    for (i = 0; i < ngaps; i++) {
        const gap *g = &gaps[i];
        int lane = -1, j;
        unsigned long long end = g->to < to ? g->to : to;
        double x = L + (double)(g->from - from) / span * W, w = (double)(end - g->from) / span * W;
        for (j = 0; j < nev && lane < 0; j++) if (evs[j].comm == g->comm && evs[j].rank == g->rank) lane = lane_of[j];
        if (lane < 0 || g->from > to) continue;
        if (w < 2) w = 2;
        fprintf(o, "<rect class=\"%s\" data-rank=\"%d\" data-call=\"%u\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
                   "fill=\"none\" stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"><title>rank %d never started call %u "
                   "(%s/%s), which the other ranks ran</title></rect>\n", cls[0] == 'z' ? "zmissing" : "missing", g->rank,
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
    for (i = 0; i < nev; i++) {
        if (i == 0 || evs[i].comm != evs[i - 1].comm || evs[i].rank != evs[i - 1].rank) lanes++;
        lane_of[i] = lanes - 1;
        nfail += failed(&evs[i]);
        nrun += running(&evs[i]);
    }
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
    fprintf(o, "<p style=\"font-size:small;color:#555;max-width:%dpx\">Each box is one call on one rank, from its start to its end "
               "(hover: its record); <span style=\"color:#d62728\">red: it failed</span>, "
               "<span style=\"color:#ff7f0e\">orange: still running when dumped</span>, "
               "dashed red: a call this rank never started while the others ran it. "
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
    }
    if (!nev) die("no calls in any file");
    qsort(evs, (size_t)nev, sizeof evs[0], by_time);
    t0 = evs[0].start; t1 = 0;
    for (i = 0; i < nev; i++) {
        if (evs[i].start < t0) t0 = evs[i].start;
        if (evs[i].start > t1) t1 = evs[i].start;
        if (!running(&evs[i]) && evs[i].end > t1) t1 = evs[i].end;
    }
    if (!title) {
        snprintf(auto_title, sizeof auto_title, "coll timeline: %s/%s, %d ranks", coll_kind_name(evs[0].kind),
                 coll_algo_name(evs[0].algo), nfiles);
        title = auto_title;
    }
    find_gaps();
    f = create(dir, "trace.json", path, sizeof path);
    write_json(f, files, nfiles);
    if (fclose(f) != 0) die("cannot write %s", path);
    printf("timeline: %d calls of %d ranks -> %s\n", nev, nfiles, path);
    f = create(dir, "index.html", path, sizeof path);
    write_html(f, title);
    if (fclose(f) != 0) die("cannot write %s", path);
    printf("open %s\n", path);
    (void)diagrams_main;
    return 0;
}
